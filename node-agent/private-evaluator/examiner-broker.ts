// The examiner broker: the node-agent's side of the socket bound into the examiner alone. Through it the
// examiner starts candidate sessions — the candidate's code, as the candidate principal, in its own
// namespaces over its own view of the input (session-view.ts) — and workers, which get the worker broker
// (worker-broker.ts). The socket, the peer check and what a violation does are broker-server.ts's. At the
// run's end every session and worker must have been torn down by the examiner; one still open is a
// violation.
import { BrokerRequest, MAX_READ_BYTES, MAX_SESSIONS, MAX_WORKERS } from './broker-protocol.js';
import { BrokerServer } from './broker-server.js';
import { answerSessionOp, SessionTable, type RoleEnds, type Session } from './session-table.js';

export type StartSession = (req: { argv: string[]; cwd: string; timeoutMs: number }, id: string) => Promise<Session>;

export class ExaminerBroker extends BrokerServer<BrokerRequest> {
  private readonly sessions = new SessionTable();
  private started = 0;
  private workers = 0;

  constructor(
    socketPath: string,
    examinerHostId: number,
    private readonly startSession: StartSession,
    /** Starts a worker with its broker; absent, a worker request is a violation. */
    private readonly startWorker?: StartSession,
  ) {
    super('examiner broker', 'examiner', socketPath, examinerHostId, BrokerRequest);
  }

  /** How many candidate sessions were started. */
  sessionCount(): number {
    return this.started;
  }

  /** At the run's end: stops serving, ends every session and worker; returns the violations, those left open included. */
  async close(): Promise<string[]> {
    for (const id of this.sessions.closeOut()) this.record(`${id.startsWith('w') ? 'worker' : 'candidate session'} ${id} was still open when the run ended`);
    return this.shutdown();
  }

  /** After close(): which of its workers and candidate sessions did not end on their own. */
  roleEnds(): RoleEnds {
    return this.sessions.ends();
  }

  protected release(): Promise<void> {
    return this.sessions.tearDownAll();
  }

  protected async handle(req: BrokerRequest): Promise<object> {
    switch (req.op) {
      case 'start':
      case 'run': {
        if (this.started >= MAX_SESSIONS) return this.violate(`more than ${MAX_SESSIONS} candidate sessions`);
        const id = `c${++this.started}`;
        const h = this.sessions.add(id, await this.begin(id, 'candidate session', () => this.startSession(req, id)));
        if (req.op === 'start') return { ok: true, session: id };
        await h.session.done.catch(() => undefined);
        const { data, size } = h.output(0, MAX_READ_BYTES);
        const exit = await h.tearDown();
        return { ok: true, exit, output: data.toString('base64'), truncated: size > data.length };
      }
      case 'worker': {
        if (this.startWorker === undefined) return this.violate('this run has no workers');
        if (this.sessions.open().some((s) => s.startsWith('w'))) return this.violate('a second worker while one is open');
        if (this.workers >= MAX_WORKERS) return this.violate(`more than ${MAX_WORKERS} workers`);
        const id = `w${++this.workers}`;
        const start = this.startWorker;
        this.sessions.add(id, await this.begin(id, 'worker', () => start(req, id)));
        return { ok: true, session: id };
      }
      default: {
        const h = this.sessions.get(req.session);
        if (h === undefined) return this.violate(`${req.op} of unknown session ${req.session}`);
        return answerSessionOp(h, req);
      }
    }
  }

  /** A session the node-agent could not start (its frame refused, a copy that differs) is the run's boundary failing. */
  private async begin(id: string, what: string, start: () => Promise<Session>): Promise<Session> {
    try {
      return await start();
    } catch (err) {
      throw new Error(`${what} ${id} could not start: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
}
