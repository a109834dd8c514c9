// What both private-evaluator brokers share: a unix socket owned by one role's host id and 0600, every
// connection's peer checked (SO_PEERCRED: that host uid and gid, nobody else), one JSON request per line
// parsed by a closed schema, answered in order. Any violation — a refused peer, a request that is too long,
// not JSON or not in the schema, or whatever the broker itself names — stops the broker: no further
// connection or request is served, the subclass's stop kills what it started, and the violation is kept
// for the run's boundary, which refuses the whole run whatever the role does with the error.
import { chmodSync, chownSync, closeSync, constants as fsc, openSync, rmSync } from 'node:fs';
import { basename, dirname } from 'node:path';
import { createServer, type Server, type Socket } from 'node:net';
import type { z } from 'zod';
import * as native from '../../native/index.js';
import { MAX_LINE_BYTES, type Violation } from './broker-protocol.js';

export abstract class BrokerServer<Req> {
  private server: Server | undefined;
  private readonly conns = new Set<Socket>();
  private readonly problems: string[] = [];
  protected stopped = false;

  constructor(
    /** Names the broker in its violations ("examiner broker"). */
    private readonly name: string,
    /** Whose peer the socket serves ("examiner"), for the refusal's message. */
    private readonly peerRole: string,
    private readonly socketPath: string,
    private readonly peerHostId: number,
    private readonly schema: z.ZodType<Req>,
  ) {}

  /**
   * Listens on the socket, 0600 and the peer role's. It is bound through an open descriptor of its
   * directory (/proc/self/fd/<dir>/<name>): a socket address holds at most 107 bytes, and a store deep
   * enough would otherwise bind a truncated path elsewhere.
   */
  async listen(): Promise<void> {
    const server = createServer((conn) => this.accept(conn));
    const dir = openSync(dirname(this.socketPath), fsc.O_RDONLY | fsc.O_DIRECTORY);
    try {
      const short = `/proc/self/fd/${dir}/${basename(this.socketPath)}`;
      await new Promise<void>((resolve, reject) => server.once('error', reject).listen(short, resolve));
    } finally {
      closeSync(dir);
    }
    chownSync(this.socketPath, this.peerHostId, this.peerHostId);
    chmodSync(this.socketPath, 0o600);
    this.server = server;
  }

  /** The protocol violations so far. */
  violations(): readonly string[] {
    return this.problems;
  }

  /** Answers one parsed request. */
  protected abstract handle(req: Req): Promise<object>;

  /** Ends what the broker started (sessions, leases); called once when it stops. */
  protected abstract release(): Promise<void>;

  /** Records a violation, stops the broker and returns the answer the role gets. */
  protected violate(why: string): Violation {
    this.problems.push(`${this.name}: ${why}`);
    void this.stop();
    return { ok: false, error: 'PROTOCOL_VIOLATION', message: why };
  }

  /** Records a problem found at the end (something left open) without an answer to send. */
  protected record(problem: string): void {
    this.problems.push(`${this.name}: ${problem}`);
  }

  private stopping: Promise<void> | undefined;

  /** Stops serving: no new connection or request, everything the broker started ended. */
  protected stop(): Promise<void> {
    this.stopped = true;
    if (this.server !== undefined) {
      this.server.close();
      this.server = undefined;
      // Bound through a descriptor that is closed now, so the server cannot remove the socket itself.
      rmSync(this.socketPath, { force: true });
    }
    this.stopping ??= this.release();
    return this.stopping;
  }

  /** Stops serving and closes every connection; returns the violations. */
  async shutdown(): Promise<string[]> {
    await this.stop();
    for (const c of this.conns) c.destroy();
    return [...this.problems];
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
    if (peer === undefined || peer.uid !== this.peerHostId || peer.gid !== this.peerHostId) {
      const answer = this.violate(peer === undefined ? 'a connection whose peer could not be identified' : `a connection from host uid ${peer.uid} gid ${peer.gid}, not the ${this.peerRole}'s`);
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

  private async answer(line: string): Promise<object> {
    if (this.stopped) return { ok: false, error: 'PROTOCOL_VIOLATION', message: 'the broker has stopped' };
    let parsed: Req;
    try {
      const r = this.schema.safeParse(JSON.parse(line));
      if (!r.success) return this.violate(`a malformed request: ${r.error.issues.map((i) => `${i.path.join('.') || '(request)'}: ${i.message}`).join('; ')}`);
      parsed = r.data;
    } catch {
      return this.violate('a request that is not JSON');
    }
    try {
      return await this.handle(parsed);
    } catch (err) {
      return this.violate(err instanceof Error ? err.message : String(err));
    }
  }
}
