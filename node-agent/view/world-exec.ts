// `kubectl worldline exec` on the node: one more process inside a running World (native enterSandbox:
// the World's namespaces, cgroups, uid/gid, no capabilities), its stdio carried as frames
// (core/exec/exec-frames.ts) over the upgraded connection the controller opened for an authorized user.
//
// Every exec is recorded before its command runs: an entry on the World's status.execs (its own field
// manager, so the agent's other status writes never drop it) and a Normal Event naming who ran what. A
// record that cannot be written refuses the exec (EXEC_NOT_RECORDED): nothing runs unrecorded. The entry
// gets the command's end when it ends. What the command changes is part of the World's candidate.
import { randomBytes } from 'node:crypto';
import type { Duplex } from 'node:stream';
import { Socket } from 'node:net';
import { ReadStream } from 'node:tty';
import { encodeData, encodeFrame, FrameDecoder, FrameError, FrameType, parseResize, type ExecEnd } from '../../core/exec/exec-frames.js';
import { EXECS_SHOWN, type ExecRecord, type World } from '../../crds/index.js';
import type { EventRecorder } from '../../kube/events.js';
import type { Logger } from '../../kube/logger.js';
import type { StatusWriter } from '../../kube/status-writer.js';
import * as native from '../../native/index.js';
import { refs } from '../api-refs.js';
import { openRecordedProcess } from '../sandbox/supervisor-record.js';
import { getWorldSupervisor } from '../store/world-records.js';
import type { Store } from '../store/open-store.js';

/** The field manager of status.execs (apart from the agent's own status fields). */
export const EXEC_FIELD_MANAGER = 'worldline-node-agent-exec';
/** Execs one World may run at once. */
export const EXECS_PER_WORLD = 4;
/** How long output may still arrive after the command ended (a background child can hold its pipe). */
const OUTPUT_GRACE_MS = 2000;
/** Worlds whose execs record is kept in memory (the World's own status seeds the others). */
const RECORDS_KEPT = 1000;

export interface ExecRequest {
  argv: string[];
  tty: boolean;
  stdin: boolean;
  /** The username the API server authenticated (passed on by the controller). */
  user: string;
}

export class ExecRefused extends Error {
  constructor(
    readonly code: string,
    readonly httpStatus: number,
    message: string,
  ) {
    super(message);
  }
}

export interface ExecDeps {
  store: Pick<Store, 'db'>;
  status: StatusWriter;
  events: EventRecorder;
  now: () => Date;
  logger: Logger;
}

/** A command running in a World, not yet attached to its client's connection. */
export interface ExecSession {
  id: string;
  attach(conn: Duplex): void;
}

/** Cuts the command for the record: at most 64 arguments of at most 1 KiB each. */
function shownCommand(argv: string[]): string[] {
  return argv.slice(0, 64).map((a) => (a.length > 1024 ? `${a.slice(0, 1021)}...` : a));
}

export class WorldExecs {
  private readonly active = new Map<string, number>();
  /** uid -> the execs record as last written (seeded from the World's status after an agent restart). */
  private readonly records = new Map<string, { count: number; recent: ExecRecord[] }>();
  private chain: Promise<unknown> = Promise.resolve();

  constructor(private readonly d: ExecDeps) {}

  /** Starts `req` in World `w` (which must be Running on this node); refuses by name otherwise. */
  async open(w: World, req: ExecRequest): Promise<ExecSession> {
    const uid = w.metadata.uid ?? '';
    const key = `${w.metadata.namespace ?? ''}/${w.metadata.name}`;
    if (w.status?.phase !== 'Running') throw new ExecRefused('WORLD_NOT_RUNNING', 409, `World ${key} is not running (phase ${w.status?.phase ?? 'Pending'}): exec needs its workload alive`);
    const workload = getWorldSupervisor(this.d.store.db, uid)?.workload;
    if (!workload) throw new ExecRefused('WORLD_NOT_RUNNING', 409, `World ${key} has no running workload recorded on this node`);
    if ((this.active.get(uid) ?? 0) >= EXECS_PER_WORLD) throw new ExecRefused('EXEC_LIMIT', 429, `World ${key} already runs ${EXECS_PER_WORLD} execs; wait for one to end`);
    const target = openRecordedProcess(workload);
    if (target === undefined) throw new ExecRefused('WORLD_NOT_RUNNING', 409, `World ${key}'s workload has ended`);
    this.active.set(uid, (this.active.get(uid) ?? 0) + 1);
    const release = (): void => {
      const n = (this.active.get(uid) ?? 1) - 1;
      if (n > 0) this.active.set(uid, n);
      else this.active.delete(uid);
    };
    const id = `${this.d.now().getTime().toString(36)}-${randomBytes(3).toString('hex')}`;
    const entry: ExecRecord = { id, user: req.user, command: shownCommand(req.argv), tty: req.tty, startedAt: this.d.now().toISOString() };
    try {
      // Recorded before anything runs: an exec that cannot be recorded does not happen.
      try {
        await this.record(w, entry);
      } catch (err) {
        throw new ExecRefused('EXEC_NOT_RECORDED', 503, `the exec could not be recorded on World ${key}, so it was not run: ${(err as Error).message}`);
      }
      this.d.events.normal(w, 'Exec', `${req.user} ran ${JSON.stringify(entry.command)}${req.tty ? ' on a terminal' : ''} (exec ${id}); what it changes is part of the candidate`);
      let exited!: (r: native.SandboxExit) => void;
      const exit = new Promise<native.SandboxExit>((r) => (exited = r));
      let handle: native.EnterHandle;
      try {
        handle = native.enterSandbox({ target, argv: req.argv, env: workload.env, cwd: workload.cwd, uid: workload.uid, gid: workload.gid, cgroupProcs: workload.cgroupProcs, tty: req.tty }, exited);
      } catch (err) {
        await this.finish(w, id, { code: null, signal: null }).catch(() => undefined);
        throw new ExecRefused('EXEC_FAILED', 500, `could not start the exec: ${(err as Error).message}`);
      }
      try {
        await native.enterOutcome(handle.errors);
      } catch (err) {
        for (const fd of [handle.pty, handle.stdin, handle.stdout, handle.stderr]) if (fd !== undefined) native.closeFd(fd);
        const end = await exit;
        native.closeFd(handle.pidfd);
        await this.finish(w, id, end).catch(() => undefined);
        const e = err as native.SandboxSetupError;
        const missing = e.stage === 'execve' && (e.errnoCode === 'ENOENT' || e.errnoCode === 'EACCES');
        if (missing) throw new ExecRefused('COMMAND_NOT_FOUND', 400, `${req.argv[0]}: ${e.errnoCode === 'ENOENT' ? 'no such program in the World' : 'not executable in the World'}`);
        if (e.stage === 'setns') throw new ExecRefused('WORLD_NOT_RUNNING', 409, `World ${key}'s workload ended before the exec could join it`);
        const atLimit = e.stage === 'clone3' && e.errnoCode === 'EAGAIN' ? ' (the World is at its process limit, spec.resources.pids)' : '';
        throw new ExecRefused('EXEC_FAILED', 500, `the exec failed at ${e.stage}: ${e.errnoCode}${atLimit}`);
      }
      return this.session(w, id, req, handle, exit, release);
    } catch (err) {
      release();
      throw err;
    } finally {
      native.closeFd(target);
    }
  }

  private session(w: World, id: string, req: ExecRequest, handle: native.EnterHandle, exit: Promise<native.SandboxExit>, release: () => void): ExecSession {
    const log = this.d.logger.child({ world: `${w.metadata.namespace ?? ''}/${w.metadata.name}`, exec: id });
    let ended = false;
    const kill = (): void => {
      if (!ended) native.pidfdKill(handle.pidfd);
    };
    // The command's ends: a terminal (both directions on its master) or three pipes.
    const pty = handle.pty !== undefined ? new ReadStream(handle.pty) : undefined;
    const outputs: { type: FrameType; stream: Socket }[] = pty
      ? [{ type: FrameType.Stdout, stream: pty }]
      : [
          { type: FrameType.Stdout, stream: new Socket({ fd: handle.stdout!, readable: true, writable: false }) },
          { type: FrameType.Stderr, stream: new Socket({ fd: handle.stderr!, readable: true, writable: false }) },
        ];
    const input: Socket | undefined = pty ?? new Socket({ fd: handle.stdin!, readable: false, writable: true });
    if (!req.stdin && !pty) input.end();
    input.on('error', () => undefined); // the command closed its input: what is typed after that is dropped
    const outputsEnded = Promise.all(
      outputs.map(
        ({ stream }) =>
          new Promise<void>((resolve) => {
            stream.on('end', resolve);
            stream.on('close', resolve);
            // A terminal's master reads EIO once the last process holding its other side is gone.
            stream.on('error', () => resolve());
          }),
      ),
    );
    for (const o of outputs) o.stream.pause();

    return {
      id,
      attach: (conn: Duplex) => {
        const send = (chunks: Buffer[]): void => {
          let ok = true;
          for (const c of chunks) ok = conn.write(c) && ok;
          if (!ok) {
            for (const o of outputs) o.stream.pause();
            conn.once('drain', () => {
              for (const o of outputs) o.stream.resume();
            });
          }
        };
        for (const o of outputs) {
          o.stream.on('data', (b: Buffer) => send(encodeData(o.type, b)));
          o.stream.resume();
        }
        const decoder = new FrameDecoder('client');
        conn.on('data', (chunk: Buffer) => {
          let frames;
          try {
            frames = decoder.push(chunk);
          } catch (err) {
            log.warn('an exec client broke the protocol; the exec is ended', { error: (err as FrameError).message });
            kill();
            conn.destroy();
            return;
          }
          for (const f of frames) {
            if (f.type === FrameType.Stdin && req.stdin) input.write(f.payload);
            else if (f.type === FrameType.StdinEnd && !pty) input.end();
            else if (f.type === FrameType.Resize && handle.pty !== undefined) {
              const size = parseResize(f.payload);
              if (size) native.setWindowSize(handle.pty, size.rows, size.cols);
            }
          }
        });
        // The client went away (or the controller between): the command goes too, also when it left
        // before this session was attached to its connection.
        conn.on('close', kill);
        conn.on('error', kill);
        if (conn.destroyed) kill();
        void (async () => {
          const r = await exit;
          ended = true;
          await Promise.race([outputsEnded, new Promise((res) => setTimeout(res, OUTPUT_GRACE_MS))]);
          for (const o of outputs) o.stream.destroy();
          input.destroy();
          native.closeFd(handle.pidfd);
          release();
          const end: ExecEnd = { code: r.code, signal: r.signal };
          if (!conn.destroyed) conn.end(encodeFrame(FrameType.Exit, JSON.stringify(end)));
          log.info('an exec ended', { code: r.code, signal: r.signal });
          await this.finish(w, id, r).catch((err: Error) => log.warn('could not record the end of an exec', { error: err.message }));
        })();
      },
    };
  }

  /** Adds the entry (or replaces the one with its id) and applies status.execs; writes are serialized. */
  private record(w: World, entry: ExecRecord): Promise<void> {
    const run = async (): Promise<void> => {
      const uid = w.metadata.uid ?? '';
      const current = this.records.get(uid) ?? { count: w.status?.execs?.count ?? 0, recent: [...(w.status?.execs?.recent ?? [])] };
      const at = current.recent.findIndex((e) => e.id === entry.id);
      const next = at >= 0 ? { count: current.count, recent: current.recent.map((e, i) => (i === at ? entry : e)) } : { count: current.count + 1, recent: [...current.recent, entry].slice(-EXECS_SHOWN) };
      await this.d.status.applyStatus(refs.World, { metadata: { name: w.metadata.name ?? '', ...(w.metadata.namespace ? { namespace: w.metadata.namespace } : {}) }, status: { execs: next } });
      this.records.delete(uid); // re-inserted last: the oldest-used World is the first forgotten
      this.records.set(uid, next);
      if (this.records.size > RECORDS_KEPT) this.records.delete(this.records.keys().next().value!);
    };
    const p = this.chain.then(run, run);
    this.chain = p.catch(() => undefined);
    return p;
  }

  private finish(w: World, id: string, r: native.SandboxExit): Promise<void> {
    const uid = w.metadata.uid ?? '';
    const before = this.records.get(uid)?.recent.find((e) => e.id === id);
    if (!before) return Promise.resolve();
    return this.record(w, { ...before, finishedAt: this.d.now().toISOString(), ...(r.code !== null ? { exitCode: r.code } : {}), ...(r.signal ? { signal: r.signal } : {}) });
  }

}
