// Health probes of etcd and kube-apiserver, and the wait that gives up when a process dies.
import { request as httpsRequest } from 'node:https';
import { request as httpRequest } from 'node:http';
import { sleep, type Proc } from './processes.js';

export interface GetResult {
  status: number;
  body: string;
}

export function httpsGet(url: string, tls: { ca: Buffer; cert?: Buffer; key?: Buffer }, timeoutMs = 5000): Promise<GetResult> {
  return new Promise((ok, bad) => {
    const req = httpsRequest(url, { ...tls, timeout: timeoutMs }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => ok({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', bad);
    req.end();
  });
}

export function httpGet(url: string, timeoutMs = 2000): Promise<GetResult> {
  return new Promise((ok, bad) => {
    const req = httpRequest(url, { timeout: timeoutMs }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => ok({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', bad);
    req.end();
  });
}

export async function waitFor(
  what: string,
  deadline: number,
  procs: Proc[],
  probe: () => Promise<boolean>,
): Promise<void> {
  let last = '';
  for (;;) {
    for (const p of procs) {
      if (p.exitInfo !== null) {
        throw new Error(
          `test control plane: ${p.name} (pid ${p.pid}) exited ` +
            `(code ${String(p.exitInfo.code)}, signal ${String(p.exitInfo.signal)}) while waiting for ${what}`,
        );
      }
    }
    try {
      if (await probe()) return;
    } catch (e) {
      last = (e as Error).message;
    }
    if (Date.now() > deadline) throw new Error(`test control plane: timed out waiting for ${what}${last ? ` (${last})` : ''}`);
    await sleep(100);
  }
}
