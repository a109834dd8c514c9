// The examiner broker: the node-agent's side of the socket bound into the examiner alone, through which
// the examiner starts candidate sessions — the candidate's code, as the candidate principal, in its own
// namespaces over its own disposable copy of the input. Every connection's peer is checked (SO_PEERCRED:
// the examiner's host uid and gid, nobody else). Any protocol violation — a refused peer, a malformed or
// oversized request, an unknown session — stops the broker: every session is killed, and the run's
// boundary names the violation, which refuses the whole run whatever the examiner does with the error.
// At the run's end every session must have been torn down by the examiner; one still open is a violation.
import { chmodSync, chownSync, closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import * as native from '../../native/index.js';
import { BrokerRequest, MAX_LINE_BYTES, MAX_READ_BYTES, MAX_SESSIONS, type BrokerAnswer, type SessionExit } from './broker-protocol.js';

export interface CandidateSession {
  /** Resolves when the session has ended (its whole PID namespace gone). */
  done: Promise<SessionExit>;
  /** Signals the session's process group. */
  signal(sig: 'SIGTERM' | 'SIGKILL'): void;
  /** Where its stdout and stderr go (the supervisor's output log). */
  outputFile: string;
  /** Removes what the session had (mounts, copy, cgroup); called once it has ended. */
  cleanup(): Promise<void>;
}

export type StartSession = (req: { argv: string[]; cwd: string; timeoutMs: number }, id: string) => Promise<CandidateSession>;

interface Held {
  session: CandidateSession;
  exit?: SessionExit;
  tornDown: boolean;
}

export class ExaminerBroker {
  private server: Server | undefined;
  private readonly sessions = new Map<string, Held>();
  private readonly problems: string[] = [];
  private readonly conns = new Set<Socket>();
  private stopped = false;
  private started = 0;

  constructor(
    private readonly socketPath: string,
    private readonly examinerHostId: number,
    private readonly startSession: StartSession,
  ) {}

  /** Listens on the socket, 0600 and the examiner's. */
  async listen(): Promise<void> {
    const server = createServer((conn) => this.accept(conn));
    await new Promise<void>((resolve, reject) => server.once('error', reject).listen(this.socketPath, resolve));
    chownSync(this.socketPath, this.examinerHostId, this.examinerHostId);
    chmodSync(this.socketPath, 0o600);
    this.server = server;
  }

  /** The protocol violations so far. */
  violations(): readonly string[] {
    return this.problems;
  }

  /** How many sessions were started. */
  sessionCount(): number {
    return this.started;
  }

  /** At the run's end: stops serving, kills and cleans every session; returns the violations, sessions left open included. */
  async close(): Promise<string[]> {
    for (const [id, h] of this.sessions) if (!h.tornDown) this.problems.push(`candidate session ${id} was still open when the run ended`);
    await this.stop();
    for (const c of this.conns) c.destroy();
    return [...this.problems];
  }

  /** Stops serving: no new connection, every session killed. A connection ends once its answer is written. */
  private async stop(): Promise<void> {
    this.stopped = true;
    this.server?.close();
    await Promise.all([...this.sessions.values()].map((h) => this.tearDown(h)));
  }

  private violate(why: string): BrokerAnswer {
    this.problems.push(`examiner broker: ${why}`);
    void this.stop();
    return { ok: false, error: 'PROTOCOL_VIOLATION', message: why };
  }

  private accept(conn: Socket): void {
    this.conns.add(conn);
    conn.on('close', () => this.conns.delete(conn));
    conn.on('error', () => undefined);
    if (this.stopped) return void conn.destroy();
    const fd = (conn as unknown as { _handle?: { fd?: number } })._handle?.fd;
    let peer: { uid: number; gid: number } | undefined;
    try {
      peer = fd !== undefined && fd >= 0 ? native.peerCredentials(fd) : undefined;
    } catch {
      peer = undefined;
    }
    if (peer === undefined || peer.uid !== this.examinerHostId || peer.gid !== this.examinerHostId) {
      const answer = this.violate(peer === undefined ? 'a connection whose peer could not be identified' : `a connection from host uid ${peer.uid} gid ${peer.gid}, not the examiner's`);
      return void conn.end(`${JSON.stringify(answer)}\n`);
    }
    let buf = '';
    let chain = Promise.resolve();
    conn.setEncoding('utf8');
    conn.on('data', (chunk: string) => {
      buf += chunk;
      if (Buffer.byteLength(buf) > MAX_LINE_BYTES && !buf.includes('\n')) {
        buf = '';
        const answer = this.violate(`a request longer than ${MAX_LINE_BYTES} bytes`);
        return void conn.end(`${JSON.stringify(answer)}\n`);
      }
      let nl: number;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        chain = chain.then(async () => {
          const answer = await this.answer(line);
          if (!conn.destroyed) conn.write(`${JSON.stringify(answer)}\n`);
          if (this.stopped) conn.end();
        });
      }
    });
  }

  private async answer(line: string): Promise<BrokerAnswer> {
    if (this.stopped) return { ok: false, error: 'PROTOCOL_VIOLATION', message: 'the broker has stopped' };
    let parsed: BrokerRequest;
    try {
      const r = BrokerRequest.safeParse(JSON.parse(line));
      if (!r.success) return this.violate(`a malformed request: ${r.error.issues.map((i) => `${i.path.join('.') || '(request)'}: ${i.message}`).join('; ')}`);
      parsed = r.data;
    } catch {
      return this.violate('a request that is not JSON');
    }
    switch (parsed.op) {
      case 'start':
      case 'run': {
        if (this.started >= MAX_SESSIONS) return this.violate(`more than ${MAX_SESSIONS} candidate sessions`);
        const id = `c${++this.started}`;
        let session: CandidateSession;
        try {
          session = await this.startSession({ argv: parsed.argv, cwd: parsed.cwd, timeoutMs: parsed.timeoutMs }, id);
        } catch (err) {
          // A session the node-agent could not start (its frame refused, a copy that differs) is the run's boundary failing.
          return this.violate(`candidate session ${id} could not start: ${err instanceof Error ? err.message : String(err)}`);
        }
        const held: Held = { session, tornDown: false };
        this.sessions.set(id, held);
        void session.done.then((exit) => (held.exit = exit), () => (held.exit = { code: null, signal: null, reason: 'SupervisorLost' }));
        if (parsed.op === 'start') return { ok: true, session: id };
        const exit = await session.done.catch((): SessionExit => ({ code: null, signal: null, reason: 'SupervisorLost' }));
        const { data, size } = readOutput(session.outputFile, 0, MAX_READ_BYTES);
        await this.tearDown(held);
        return { ok: true, exit, output: data.toString('base64'), truncated: size > data.length };
      }
      case 'wait': {
        const h = this.held(parsed.session);
        if (h === undefined) return this.violate(`wait on unknown session ${parsed.session}`);
        if (h.exit === undefined) await Promise.race([h.session.done.catch(() => undefined), new Promise((r) => setTimeout(r, parsed.waitMs))]);
        await Promise.resolve();
        return h.exit === undefined ? { ok: true, running: true } : { ok: true, running: false, exit: h.exit };
      }
      case 'output': {
        const h = this.held(parsed.session);
        if (h === undefined) return this.violate(`output of unknown session ${parsed.session}`);
        const { data, size } = readOutput(h.session.outputFile, parsed.offset, parsed.max);
        return { ok: true, data: data.toString('base64'), eof: h.exit !== undefined && parsed.offset + data.length >= size };
      }
      case 'signal': {
        const h = this.held(parsed.session);
        if (h === undefined) return this.violate(`signal to unknown session ${parsed.session}`);
        if (h.exit === undefined) h.session.signal(parsed.signal);
        return { ok: true };
      }
      case 'teardown': {
        const h = this.held(parsed.session);
        if (h === undefined) return this.violate(`teardown of unknown session ${parsed.session}`);
        const exit = await this.tearDown(h);
        return { ok: true, running: false, exit };
      }
    }
  }

  /** A session the examiner may still address (started, not torn down). */
  private held(id: string): Held | undefined {
    const h = this.sessions.get(id);
    return h && !h.tornDown ? h : undefined;
  }

  private async tearDown(h: Held): Promise<SessionExit> {
    if (!h.tornDown) {
      h.tornDown = true;
      if (h.exit === undefined) h.session.signal('SIGKILL');
      h.exit = await h.session.done.catch((): SessionExit => ({ code: null, signal: null, reason: 'SupervisorLost' }));
      await h.session.cleanup();
    }
    return h.exit ?? { code: null, signal: null, reason: 'SupervisorLost' };
  }
}

/** Up to `max` bytes of an output log from `offset`, and the log's size. */
function readOutput(file: string, offset: number, max: number): { data: Buffer; size: number } {
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch {
    return { data: Buffer.alloc(0), size: 0 };
  }
  try {
    const size = fstatSync(fd).size;
    const data = Buffer.alloc(Math.max(0, Math.min(max, size - offset)));
    const n = data.length > 0 ? readSync(fd, data, 0, data.length, offset) : 0;
    return { data: data.subarray(0, n), size };
  } finally {
    closeSync(fd);
  }
}
