// Loopback ports for etcd and kube-apiserver: free ones, or the ones a kept control plane used before.
//
// They are drawn from outside the kernel's ephemeral range (net.ipv4.ip_local_port_range): below it,
// else above it.
// etcd and kube-apiserver are started again on the same ports (a kept control plane, the fault campaign's
// kill -9 and restart); while one is down, an outgoing connection of any process on the host may be given
// its port as a source port, and then its listener cannot bind (EADDRINUSE) until that connection closes.
// A port outside the ephemeral range is only ever taken by a listener that asks for it.
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { randomInt } from 'node:crypto';

/** The lowest port drawn: well above the privileged ports and the usual fixed ones of system services. */
const LOWEST = 10_000;

/** The kernel's ephemeral port range, [low, high]. */
export function ephemeralRange(text: string = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8')): [number, number] {
  const m = /^\s*(\d+)\s+(\d+)\s*$/.exec(text);
  if (m === null) throw new Error(`net.ipv4.ip_local_port_range reads "${text.trim()}", not two port numbers`);
  return [Number(m[1]), Number(m[2])];
}

/** Ports outside the ephemeral range [low, high] to draw from: [from, to], or undefined when there are too few. */
export function drawRange([low, high]: [number, number]): [number, number] | undefined {
  if (low - 1 - LOWEST >= 1_000) return [LOWEST, low - 1];
  if (65_535 - (high + 1) >= 1_000) return [high + 1, 65_535];
  return undefined;
}

async function portFree(port: number): Promise<boolean> {
  const srv = createServer();
  return new Promise<boolean>((ok) => {
    srv.once('error', () => ok(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => ok(true)));
  });
}

async function freePorts(n: number, ephemeral: [number, number]): Promise<number[]> {
  const range = drawRange(ephemeral);
  if (range === undefined) {
    throw new Error('net.ipv4.ip_local_port_range leaves fewer than 1000 ports outside it; the control plane needs ports an outgoing connection cannot take (narrow the range)');
  }
  const ports: number[] = [];
  for (let tries = 0; ports.length < n; tries++) {
    if (tries >= 200) throw new Error(`no ${n} free loopback ports in ${range[0]}-${range[1]} after ${tries} tries`);
    const p = randomInt(range[0], range[1] + 1);
    if (!ports.includes(p) && (await portFree(p))) ports.push(p);
  }
  return ports;
}

/** Reuses the ports recorded in `file` when all are still free and outside the ephemeral range (stable server URL across restarts), else picks new ones. */
export async function choosePorts(file: string): Promise<[number, number, number]> {
  const ephemeral = ephemeralRange();
  const [low, high] = ephemeral;
  try {
    const prev = JSON.parse(readFileSync(file, 'utf8')) as unknown;
    if (Array.isArray(prev) && prev.length === 3 && prev.every((p) => Number.isInteger(p))) {
      const ports = prev as [number, number, number];
      const outside = ports.every((p) => p < low || p > high);
      if (outside && (await Promise.all(ports.map(portFree))).every(Boolean)) return ports;
    }
  } catch {
    /* none recorded */
  }
  const ports = (await freePorts(3, ephemeral)) as [number, number, number];
  writeFileSync(file, JSON.stringify(ports) + '\n');
  return ports;
}
