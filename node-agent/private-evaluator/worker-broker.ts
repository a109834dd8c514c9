// The worker broker: the node-agent's side of the socket bound into one worker alone, served only while
// that worker runs. Through it the worker opens case leases — a real directory strictly inside its copy
// of the input, overlapping no open lease, at most MAX_CASE_LEASES per run — and starts candidate
// commands over a case: the case is copied (case-copy.ts) into a view the candidate owns, mounted at the
// same logical path over the candidate's own copy of the input.
//
// Generations keep the two views honest. A lease starts at generation 1 and every copy adds one; each
// request names the generation it means, and an older one is a violation (a replay). Starting a
// candidate, copying out and closing need the worker's directory to still be exactly what was last copied.
// Copy-in (the worker's edits into the view) needs no live candidate and no candidate output left
// uncopied; copy-out (the view back over the worker's directory) needs every candidate of the lease torn
// down. A start takes at most MAX_STDIN_BYTES of stdin and no environment beyond PYTHONHASHSEED and
// PYTHONDONTWRITEBYTECODE=1. Any violation stops the broker and refuses the run (broker-server.ts); so
// does a lease or candidate still open when the worker ends.
import { mkdirSync, rmSync } from 'node:fs';
import { join, posix } from 'node:path';
import { MAX_CASE_LEASES, MAX_LEASE_STARTS, MAX_SESSIONS, MAX_STDIN_BYTES, WorkerRequest } from './broker-protocol.js';
import { BrokerServer } from './broker-server.js';
import { copyCase, copyOut, measureCase } from './case-copy.js';
import { answerSessionOp, SessionTable, type Held, type RoleEnds, type Session } from './session-table.js';

export interface WorkerInput {
  /** Where the input appears in every role (absolute). */
  path: string;
  /** The worker's own copy of it, on the host. */
  hostDir: string;
}

export interface LeasedStart {
  argv: string[];
  cwd: string;
  timeoutMs: number;
  env: string[];
  stdin?: Buffer;
  /** The case view and where it is mounted in the candidate. */
  view: string;
  path: string;
}

export type StartLeased = (req: LeasedStart, id: string) => Promise<Session>;

/** What one run's workers share: the lease count toward the cap and every lease's record. */
export class LeaseLedger {
  opened = 0;
  sessions = 0;
  readonly leases: { lease: string; path: string; events: string[] }[] = [];
}

interface Lease {
  id: string;
  path: string;
  input: WorkerInput;
  rel: string;
  view: string;
  generation: number;
  workerIdentity: string;
  /** A candidate ran since the last copy, so the view may hold output the worker has not copied out. */
  uncopied: boolean;
  live: Held[];
  starts: number;
  events: string[];
}

export class WorkerBroker extends BrokerServer<WorkerRequest> {
  private readonly leases = new Map<string, Lease>();
  private readonly sessions = new SessionTable();

  constructor(
    socketPath: string,
    private readonly workerHostId: number,
    private readonly candidateHostId: number,
    private readonly inputs: readonly WorkerInput[],
    /** A host directory of this worker's, for the case views (same filesystem as the worker's copy). */
    private readonly dir: string,
    private readonly ledger: LeaseLedger,
    private readonly startLeased: StartLeased,
  ) {
    super('worker broker', 'worker', socketPath, workerHostId, WorkerRequest);
    mkdirSync(dir, { recursive: true, mode: 0o711 });
  }

  /** When the worker has ended: stops serving; a lease or candidate still open is a violation. */
  async close(): Promise<string[]> {
    for (const l of this.leases.values()) this.record(`lease ${l.id} (${l.path}) was still open when the worker ended`);
    for (const id of this.sessions.closeOut()) this.record(`candidate ${id} was still open when the worker ended`);
    return this.shutdown();
  }

  /** After close(): which of its leased candidates did not end on their own. */
  roleEnds(): RoleEnds {
    return this.sessions.ends();
  }

  protected async release(): Promise<void> {
    await this.sessions.tearDownAll();
    for (const l of this.leases.values()) rmSync(l.view, { recursive: true, force: true });
  }

  protected async handle(req: WorkerRequest): Promise<object> {
    if (req.op === 'open') return this.open(req.path);
    if (req.op === 'wait' || req.op === 'output' || req.op === 'signal' || req.op === 'teardown') {
      const h = this.sessions.get(req.session);
      if (h === undefined) return this.violate(`${req.op} of unknown candidate ${req.session}`);
      const answer = await answerSessionOp(h, req);
      if (req.op === 'teardown') for (const l of this.leases.values()) if (l.live.includes(h)) { l.live = l.live.filter((x) => x !== h); l.events.push(`teardown ${h.id}`); }
      return answer;
    }
    const lease = this.leases.get(req.lease);
    if (lease === undefined) return this.violate(`${req.op} of unknown lease ${req.lease}`);
    if (req.generation !== lease.generation) return this.violate(`${req.op} of lease ${lease.id} names generation ${req.generation}, but it is at ${lease.generation}`);
    switch (req.op) {
      case 'start': {
        this.workerUnmoved(lease, 'start');
        if (lease.starts >= MAX_LEASE_STARTS) return this.violate(`more than ${MAX_LEASE_STARTS} candidates on lease ${lease.id}`);
        if (this.ledger.sessions >= MAX_SESSIONS * MAX_LEASE_STARTS) return this.violate('too many leased candidates in this run');
        const stdin = req.stdin === undefined ? undefined : Buffer.from(req.stdin, 'base64');
        if (stdin !== undefined && stdin.length > MAX_STDIN_BYTES) return this.violate(`stdin of ${stdin.length} bytes, more than ${MAX_STDIN_BYTES}`);
        const env = Object.entries(req.env ?? {}).map(([k, v]) => `${k}=${v}`);
        const id = `c${++this.ledger.sessions}`;
        let session: Session;
        try {
          session = await this.startLeased({ argv: req.argv, cwd: req.cwd, timeoutMs: req.timeoutMs, env, ...(stdin ? { stdin } : {}), view: lease.view, path: lease.path }, id);
        } catch (err) {
          throw new Error(`candidate ${id} of lease ${lease.id} could not start: ${err instanceof Error ? err.message : String(err)}`);
        }
        lease.live.push(this.sessions.add(id, session));
        lease.starts += 1;
        lease.uncopied = true;
        lease.events.push(`start ${id}`);
        return { ok: true, session: id };
      }
      case 'copy-in': {
        if (lease.live.length > 0) return this.violate(`copy-in of lease ${lease.id} while candidate ${lease.live[0]!.id} is live`);
        if (lease.uncopied) return this.violate(`copy-in of lease ${lease.id} over candidate output not copied out`);
        rmSync(lease.view, { recursive: true, force: true });
        lease.workerIdentity = this.copyIn(lease);
        return this.advance(lease, 'copy-in');
      }
      case 'copy-out': {
        if (lease.live.length > 0) return this.violate(`copy-out of lease ${lease.id} while candidate ${lease.live[0]!.id} is live`);
        this.workerUnmoved(lease, 'copy-out');
        lease.workerIdentity = copyOut(lease.view, lease.input.hostDir, lease.rel, this.workerHostId, this.dir, `copy-out-${lease.id}-${lease.generation}`);
        lease.uncopied = false;
        return this.advance(lease, 'copy-out');
      }
      case 'close': {
        if (lease.live.length > 0) return this.violate(`close of lease ${lease.id} while candidate ${lease.live[0]!.id} is live`);
        this.workerUnmoved(lease, 'close');
        rmSync(lease.view, { recursive: true, force: true });
        this.leases.delete(lease.id);
        lease.events.push('close');
        return { ok: true };
      }
    }
  }

  private open(path: string): object {
    if (this.ledger.opened >= MAX_CASE_LEASES) return this.violate(`more than ${MAX_CASE_LEASES} case leases`);
    const input = this.inputs.find((i) => path.startsWith(`${i.path}/`));
    if (input === undefined) return this.violate(`a lease on ${path}, which is not strictly inside an input`);
    const rel = posix.normalize(path.slice(input.path.length + 1));
    if (rel === '.' || rel === '' || rel.startsWith('..') || rel.split('/').some((c) => c === '' || c === '.' || c === '..')) return this.violate(`a lease on ${path}, which is not a clean path inside ${input.path}`);
    for (const l of this.leases.values()) {
      if (l.input !== input) continue;
      if (l.rel === rel || l.rel.startsWith(`${rel}/`) || rel.startsWith(`${l.rel}/`)) return this.violate(`a lease on ${path} overlaps lease ${l.id} on ${l.path}`);
    }
    const id = `l${++this.ledger.opened}`;
    const lease: Lease = { id, path, input, rel, view: join(this.dir, id), generation: 1, workerIdentity: '', uncopied: false, live: [], starts: 0, events: ['open'] };
    this.ledger.leases.push({ lease: id, path, events: lease.events });
    try {
      lease.workerIdentity = this.copyIn(lease);
    } catch (err) {
      throw new Error(`a lease on ${path}: ${err instanceof Error ? err.message : String(err)}`);
    }
    this.leases.set(id, lease);
    return { ok: true, lease: id, generation: lease.generation };
  }

  /** The worker's directory into a fresh view (which must not exist), owned by the candidate; its identity. */
  private copyIn(lease: Lease): string {
    const identity = copyCase(lease.input.hostDir, lease.rel, lease.view, this.candidateHostId);
    lease.events.push(`copy-in ${identity}`);
    return identity;
  }

  private advance(lease: Lease, what: string): object {
    lease.generation += 1;
    lease.events.push(`${what} -> generation ${lease.generation}`);
    return { ok: true, generation: lease.generation };
  }

  /** Throws (a violation) unless the worker's directory is still what was last copied. */
  private workerUnmoved(lease: Lease, op: string): void {
    const now = measureCase(lease.input.hostDir, lease.rel);
    if (now !== lease.workerIdentity) throw new Error(`${op} of lease ${lease.id}: the worker's ${lease.path} moved since generation ${lease.generation} (${now ?? 'unmeasurable'}, was ${lease.workerIdentity})`);
  }
}
