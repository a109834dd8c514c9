// A real Prometheus (Debian's package) for integration tests: started on a free loopback port with
// a generated config that scrapes the given targets every second, queried through its HTTP API.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

export interface Prometheus {
  url: string;
  /** Instant query; returns the result vector. */
  query(promql: string): Promise<{ metric: Record<string, string>; value: [number, string] }[]>;
  /** Waits until every target is up (scraped successfully at least once). */
  waitTargetsUp(timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
}

async function freePort(): Promise<number> {
  const srv = createServer();
  srv.listen(0, '127.0.0.1');
  await once(srv, 'listening');
  const port = (srv.address() as { port: number }).port;
  await new Promise((r) => srv.close(r));
  return port;
}

const PROMETHEUS = '/usr/bin/prometheus';

export async function startPrometheus(targets: { job: string; address: string }[]): Promise<Prometheus> {
  // A missing binary fails the test by name (never a skip): Debian's package provides it.
  if (!existsSync(PROMETHEUS)) throw new Error(`${PROMETHEUS} is missing: install Debian's prometheus package (apt-get install prometheus) to run the metrics tests`);
  const dir = mkdtempSync(join(tmpdir(), 'worldline-prometheus-'));
  const port = await freePort();
  const scrape = targets
    .map((t) => `  - job_name: ${JSON.stringify(t.job)}\n    scrape_interval: 1s\n    static_configs:\n      - targets: [${JSON.stringify(t.address)}]`)
    .join('\n');
  writeFileSync(join(dir, 'prometheus.yml'), `global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n${scrape}\n`);
  const child: ChildProcess = spawn(
    PROMETHEUS,
    [`--config.file=${join(dir, 'prometheus.yml')}`, `--storage.tsdb.path=${join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${port}`, '--log.level=warn'],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-4000)));
  const kill = (): void => {
    child.kill('SIGKILL');
  };
  process.once('exit', kill);
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`prometheus exited: ${stderr}`);
    try {
      if ((await fetch(`${url}/-/ready`)).ok) break;
    } catch {
      /* not yet */
    }
    if (Date.now() > deadline) throw new Error(`prometheus not ready: ${stderr}`);
    await sleep(200);
  }
  const api = async <T>(path: string): Promise<T> => {
    const res = await fetch(`${url}${path}`);
    const body = (await res.json()) as { status: string; data: T; error?: string };
    if (body.status !== 'success') throw new Error(`prometheus ${path}: ${body.error ?? res.status}`);
    return body.data;
  };
  return {
    url,
    async query(promql) {
      const data = await api<{ result: { metric: Record<string, string>; value: [number, string] }[] }>(`/api/v1/query?query=${encodeURIComponent(promql)}`);
      return data.result;
    },
    async waitTargetsUp(timeoutMs = 30_000) {
      const until = Date.now() + timeoutMs;
      for (;;) {
        const data = await api<{ activeTargets: { health: string }[] }>('/api/v1/targets');
        if (data.activeTargets.length === targets.length && data.activeTargets.every((t) => t.health === 'up')) return;
        if (Date.now() > until) throw new Error(`targets not up: ${JSON.stringify(data.activeTargets)}`);
        await sleep(250);
      }
    },
    async stop() {
      process.removeListener('exit', kill);
      if (child.exitCode === null) {
        child.kill('SIGTERM');
        await Promise.race([once(child, 'exit'), sleep(5000)]);
        if (child.exitCode === null) kill();
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
