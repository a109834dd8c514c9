// Loopback ports for etcd and kube-apiserver: free ones, or the ones a kept control plane used before.
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';

async function freePorts(n: number): Promise<number[]> {
  const servers = await Promise.all(
    Array.from({ length: n }, () => {
      const srv = createServer();
      return new Promise<ReturnType<typeof createServer>>((ok, bad) => {
        srv.once('error', bad);
        srv.listen(0, '127.0.0.1', () => ok(srv));
      });
    }),
  );
  const ports = servers.map((s) => {
    const a = s.address();
    if (a === null || typeof a === 'string') throw new Error('unexpected listen address');
    return a.port;
  });
  await Promise.all(servers.map((s) => new Promise<void>((ok) => s.close(() => ok()))));
  return ports;
}

async function portFree(port: number): Promise<boolean> {
  const srv = createServer();
  return new Promise<boolean>((ok) => {
    srv.once('error', () => ok(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => ok(true)));
  });
}

/** Reuses the ports recorded in `file` when all are still free (stable server URL across restarts), else picks new ones. */
export async function choosePorts(file: string): Promise<[number, number, number]> {
  try {
    const prev = JSON.parse(readFileSync(file, 'utf8')) as unknown;
    if (Array.isArray(prev) && prev.length === 3 && prev.every((p) => Number.isInteger(p))) {
      const ports = prev as [number, number, number];
      if ((await Promise.all(ports.map(portFree))).every(Boolean)) return ports;
    }
  } catch {
    /* none recorded */
  }
  const ports = (await freePorts(3)) as [number, number, number];
  writeFileSync(file, JSON.stringify(ports) + '\n');
  return ports;
}
