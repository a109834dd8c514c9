// The sessions a broker started (candidate sessions, and the examiner's workers) and the four operations
// on one: wait at most MAX_WAIT_MS for its end, read its output from an offset, signal its process group
// (SIGTERM or SIGKILL only), tear it down (kill what is left, wait, remove what it had). A torn-down
// session's id is never addressable again; one still open when the broker stops is torn down and named.
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import type { SessionExit } from './broker-protocol.js';

export interface Session {
  /** Resolves when the session has ended (its whole PID namespace gone). */
  done: Promise<SessionExit>;
  /** Signals the session's process group. */
  signal(sig: 'SIGTERM' | 'SIGKILL'): void;
  /** Where its stdout and stderr go (the supervisor's output log). */
  outputFile: string;
  /** Removes what the session had (mounts, copy, cgroup); called once it has ended. */
  cleanup(): Promise<void>;
}

const LOST: SessionExit = { code: null, signal: null, reason: 'SupervisorLost' };

/** How the roles a broker started ended, as facts for the run's boundary record (rolesCompleted). */
export interface RoleEnds {
  /** Started and still open when the broker closed: the broker, not their starter, ended them. */
  leftOpen: string[];
  /** Whose supervisor was lost: how they ended is unknown. */
  lost: string[];
}

export class Held {
  exit: SessionExit | undefined;
  tornDown = false;
  private teardown: Promise<SessionExit> | undefined;
  constructor(readonly id: string, readonly session: Session) {
    void session.done.then((e) => (this.exit = e), () => (this.exit = LOST));
  }

  async wait(waitMs: number): Promise<SessionExit | undefined> {
    if (this.exit === undefined) await Promise.race([this.session.done.catch(() => undefined), new Promise((r) => setTimeout(r, waitMs))]);
    await Promise.resolve();
    return this.exit;
  }

  /** Up to `max` bytes of its output from `offset`, and whether that reached the end of a finished session. */
  output(offset: number, max: number): { data: Buffer; eof: boolean; size: number } {
    const { data, size } = readOutput(this.session.outputFile, offset, max);
    return { data, size, eof: this.exit !== undefined && offset + data.length >= size };
  }

  signal(sig: 'SIGTERM' | 'SIGKILL'): void {
    if (this.exit === undefined) this.session.signal(sig);
  }

  /** Kills what is left, waits for its end and removes what it had; idempotent. */
  tearDown(): Promise<SessionExit> {
    this.tornDown = true;
    this.teardown ??= (async () => {
      if (this.exit === undefined) this.session.signal('SIGKILL');
      const exit = await this.session.done.catch(() => LOST);
      await this.session.cleanup();
      return exit;
    })();
    return this.teardown;
  }
}

export class SessionTable {
  private readonly sessions = new Map<string, Held>();
  /** The sessions still open when the broker first closed (closeOut). */
  private leftOpen: string[] | undefined;

  add(id: string, session: Session): Held {
    const h = new Held(id, session);
    this.sessions.set(id, h);
    return h;
  }

  /** A session that may still be addressed: started here, not torn down. */
  get(id: string): Held | undefined {
    const h = this.sessions.get(id);
    return h && !h.tornDown ? h : undefined;
  }

  /** Ids of the sessions not torn down. */
  open(): string[] {
    return [...this.sessions.values()].filter((h) => !h.tornDown).map((h) => h.id);
  }

  /** At the broker's close: the sessions still open then (the same list on a later call), which it will end. */
  closeOut(): string[] {
    this.leftOpen ??= this.open();
    return this.leftOpen;
  }

  /** How its sessions ended: those left open at closeOut, and those whose supervisor was lost. */
  ends(): RoleEnds {
    return { leftOpen: this.leftOpen ?? this.open(), lost: [...this.sessions.values()].filter((h) => h.exit === LOST).map((h) => h.id) };
  }

  async tearDownAll(): Promise<void> {
    await Promise.all([...this.sessions.values()].map((h) => h.tearDown()));
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

export type SessionOp =
  | { op: 'wait'; waitMs: number }
  | { op: 'output'; offset: number; max: number }
  | { op: 'signal'; signal: 'SIGTERM' | 'SIGKILL' }
  | { op: 'teardown' };

/** The answer to one of the four operations on a session. */
export async function answerSessionOp(h: Held, req: SessionOp): Promise<object> {
  switch (req.op) {
    case 'wait': {
      const exit = await h.wait(req.waitMs);
      return exit === undefined ? { ok: true, running: true } : { ok: true, running: false, exit };
    }
    case 'output': {
      const { data, eof } = h.output(req.offset, req.max);
      return { ok: true, data: data.toString('base64'), eof };
    }
    case 'signal':
      h.signal(req.signal);
      return { ok: true };
    case 'teardown':
      return { ok: true, running: false, exit: await h.tearDown() };
  }
}
