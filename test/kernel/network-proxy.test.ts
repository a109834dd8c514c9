// listenInNetns and the allowlist proxy, exercised in the agent's own network namespace (root): the native
// listener's flags, namespace and errors; and the proxy's forwarding, refusals, bounds and robustness
// against malformed input. The world-namespace behaviour is in network-world.test.ts.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { closeSync, openSync, readFileSync, readdirSync, readlinkSync } from 'node:fs';
import { createServer, request, type IncomingHttpHeaders, type Server } from 'node:http';
import { connect, createServer as createNetServer, type AddressInfo, type Socket } from 'node:net';
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { listenInNetns, nsIds, socketNetnsId } from '../../native/index.js';
import { startAllowlistProxy, type AllowlistProxy, type NetworkRefusal } from '../../node-agent/network/allowlist-proxy.js';
import { AllowlistEntryError } from '../../node-agent/network/allowlist.js';

const O_NONBLOCK = 0o4000;
const O_CLOEXEC = 0o2000000;
const toClose: (() => Promise<void> | void)[] = [];
after(async () => {
  for (const c of toClose.reverse()) await c();
});

function fdFlags(fd: number): number {
  const m = /^flags:\s+([0-7]+)$/m.exec(readFileSync(`/proc/self/fdinfo/${fd}`, 'utf8'));
  return parseInt(m![1]!, 8);
}

function socketInode(fd: number): string {
  return readlinkSync(`/proc/self/fd/${fd}`);
}

function openFdTargets(): string[] {
  const out: string[] = [];
  for (const n of readdirSync('/proc/self/fd')) {
    try {
      out.push(readlinkSync(`/proc/self/fd/${n}`));
    } catch {
      // the directory's own fd, gone by now
    }
  }
  return out;
}

/** A host HTTP server that echoes what it received; answers CONNECT-tunnelled requests the same way. */
async function echoServer(): Promise<{ server: Server; port: number; seen: IncomingHttpHeaders[] }> {
  const seen: IncomingHttpHeaders[] = [];
  const server = createServer((req, res) => {
    seen.push(req.headers);
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      res.setHeader('connection', 'close, x-upstream-private');
      res.setHeader('x-upstream-private', 'hop');
      res.setHeader('x-upstream-public', 'end-to-end');
      res.end(`echo ${req.method} ${req.url} ${Buffer.concat(chunks).toString()}`);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  toClose.push(() => new Promise<void>((r) => server.close(() => r())));
  return { server, port: (server.address() as AddressInfo).port, seen };
}

/** A small deterministic generator (mulberry32) for replayable fuzz inputs: numbers in [0, 1). */
function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Sends bytes and collects everything until the peer closes (or timeoutMs). */
function exchange(port: number, data: Buffer | string, timeoutMs = 5000): Promise<{ text: string; closed: boolean }> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    const s = connect(port, '127.0.0.1');
    const timer = setTimeout(() => {
      s.destroy();
      resolve({ text: Buffer.concat(chunks).toString('latin1'), closed: false });
    }, timeoutMs);
    s.on('data', (c: Buffer) => chunks.push(c));
    s.on('error', () => undefined);
    s.on('close', () => {
      clearTimeout(timer);
      resolve({ text: Buffer.concat(chunks).toString('latin1'), closed: true });
    });
    s.write(data);
  });
}

async function hostProxy(allow: string[], extra: Partial<Parameters<typeof startAllowlistProxy>[0]> = {}) {
  const refusals: NetworkRefusal[] = [];
  const fd = listenInNetns(process.pid, '127.0.0.1', 0);
  const inode = socketInode(fd);
  const proxy: AllowlistProxy = startAllowlistProxy({ listenFd: fd, allow, onRefusal: (r) => refusals.push(r), ...extra });
  toClose.push(() => proxy.close());
  await proxy.listening;
  const line = readFileSync('/proc/self/net/tcp', 'utf8').split('\n').find((l) => l.includes(` ${inode.slice(8, -1)} `));
  const port = parseInt(line!.trim().split(/\s+/)[1]!.split(':')[1]!, 16);
  return { proxy, refusals, port, fd, inode };
}

function viaProxy(proxyPort: number, url: string, opts: { method?: string; body?: string; headers?: Record<string, string> } = {}) {
  return new Promise<{ status: number; headers: IncomingHttpHeaders; body: string }>((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port: proxyPort, method: opts.method ?? 'GET', path: url, headers: opts.headers ?? {}, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks).toString() }));
    });
    req.on('error', reject);
    req.end(opts.body);
  });
}

test('listenInNetns: a non-blocking, close-on-exec listener in the namespace asked for; the calling thread never moves', () => {
  const before = readlinkSync('/proc/thread-self/ns/net');
  const fd = listenInNetns(process.pid, '127.0.0.1', 0, 16);
  try {
    const flags = fdFlags(fd);
    assert.equal(flags & O_NONBLOCK, O_NONBLOCK);
    assert.equal(flags & O_CLOEXEC, O_CLOEXEC);
    assert.match(socketInode(fd), /^socket:\[\d+\]$/);
    assert.equal(socketNetnsId(fd), nsIds('self').net);
    assert.equal(readlinkSync('/proc/thread-self/ns/net'), before);
  } finally {
    closeSync(fd);
  }
});

test('listenInNetns: errno-faithful errors and argument validation', () => {
  assert.throws(() => listenInNetns(0x3ffffff0, '127.0.0.1', 0), { code: 'ENOENT', errno: -2, syscall: 'open', path: `/proc/${0x3ffffff0}/ns/net` });
  const srv = listenInNetns(process.pid, '127.0.0.1', 0);
  try {
    const port = parseInt(readFileSync('/proc/self/net/tcp', 'utf8').split('\n').find((l) => l.includes(` ${socketInode(srv).slice(8, -1)} `))!.trim().split(/\s+/)[1]!.split(':')[1]!, 16);
    assert.throws(() => listenInNetns(process.pid, '127.0.0.1', port), { code: 'EADDRINUSE', errno: -98, syscall: 'bind' });
  } finally {
    closeSync(srv);
  }
  assert.throws(() => listenInNetns(process.pid, 'localhost', 1), { code: 'ERR_INVALID_ARG_VALUE' });
  assert.throws(() => listenInNetns(process.pid, '127.0.0.1', 65536), { code: 'ERR_OUT_OF_RANGE' });
  assert.throws(() => listenInNetns(0, '127.0.0.1', 1), { code: 'ERR_OUT_OF_RANGE' });
  assert.throws(() => listenInNetns(process.pid, '127.0.0.1', 1, 0), { code: 'ERR_OUT_OF_RANGE' });
  assert.throws(() => listenInNetns({ pidfd: -1 }, '127.0.0.1', 1), { code: 'ERR_OUT_OF_RANGE' });
  const devnull = openSync('/dev/null', 'r');
  try {
    assert.throws(() => socketNetnsId(devnull), { code: 'ENOTTY', syscall: 'ioctl' });
    assert.throws(() => listenInNetns({ pidfd: devnull }, '127.0.0.1', 0), { code: 'EINVAL', syscall: 'setns' });
  } finally {
    closeSync(devnull);
  }
});

test('proxy: allowed absolute-URI requests are forwarded without hop-by-hop headers; CONNECT tunnels', async () => {
  const up = await echoServer();
  const { port, refusals, proxy } = await hostProxy([`127.0.0.1:${up.port}`]);
  const r = await viaProxy(port, `http://127.0.0.1:${up.port}/path?q=1`, {
    method: 'POST',
    body: 'payload',
    headers: { connection: 'keep-alive, x-private', 'x-private': 'secret', 'proxy-authorization': 'Basic Zm9v', 'x-public': 'yes' },
  });
  assert.equal(r.status, 200);
  assert.equal(r.body, 'echo POST /path?q=1 payload');
  assert.equal(r.headers['x-upstream-public'], 'end-to-end');
  assert.equal(r.headers['x-upstream-private'], undefined, 'response hop-by-hop header named by Connection is stripped');
  const got = up.seen.at(-1)!;
  assert.equal(got['x-public'], 'yes');
  assert.equal(got['x-private'], undefined);
  assert.equal(got['proxy-authorization'], undefined);
  assert.equal(got.host, `127.0.0.1:${up.port}`);

  const t = await exchange(port, `CONNECT 127.0.0.1:${up.port} HTTP/1.1\r\nHost: 127.0.0.1:${up.port}\r\n\r\nGET /tunnelled HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
  assert.match(t.text, /^HTTP\/1\.1 200 Connection Established\r\n\r\nHTTP\/1\.1 200 OK/);
  assert.match(t.text, /echo GET \/tunnelled $/);
  assert.deepEqual(refusals, []);
  assert.equal(proxy.stats().allowed, 2);
});

test('proxy: destinations outside the allowlist get 403 and a refusal record', async () => {
  const up = await echoServer();
  const other = await echoServer();
  const { port, refusals, proxy } = await hostProxy([`127.0.0.1:${up.port}`]);
  const t0 = Date.now();
  const r = await viaProxy(port, `http://127.0.0.1:${other.port}/x`);
  assert.equal(r.status, 403);
  assert.match(r.body, /not in this world's network allowlist/);
  const c = await exchange(port, `CONNECT localhost:${up.port} HTTP/1.1\r\n\r\n`);
  assert.match(c.text, /^HTTP\/1\.1 403 Forbidden\r\n/);
  assert.equal(c.closed, true, 'connection closed after the 403');
  const s = await exchange(port, `CONNECT 127.1:${up.port} HTTP/1.1\r\n\r\n`);
  assert.match(s.text, /^HTTP\/1\.1 403 /, 'IPv4 shorthand is not the allowed dotted quad');
  assert.equal(other.seen.length, 0, 'nothing reached the other server');
  assert.deepEqual(refusals.map((x) => [x.host, x.port, x.reason]), [
    ['127.0.0.1', other.port, 'NOT_ALLOWED'], ['localhost', up.port, 'NOT_ALLOWED'], ['127.1', up.port, 'NOT_ALLOWED'],
  ]);
  for (const x of refusals) {
    const t = Date.parse(x.time);
    assert.ok(t >= t0 - 1000 && t <= Date.now() + 1000 && x.time === new Date(t).toISOString());
  }
  assert.equal(proxy.stats().refusedByReason.NOT_ALLOWED, 3);
});

test('proxy: malformed input gets 400 (431 for oversized heads), is reported, and never takes the proxy down', async (t) => {
  const up = await echoServer();
  const { port, refusals, proxy } = await hostProxy([`127.0.0.1:${up.port}`], { maxHeaderSize: 4096 });
  const cases: [string, RegExp][] = [
    ['GARBAGE\r\n\r\n', /^HTTP\/1\.1 400 /],
    ['GET /relative HTTP/1.1\r\nHost: x\r\n\r\n', /^HTTP\/1\.1 400 /],
    ['CONNECT nocolon HTTP/1.1\r\n\r\n', /^HTTP\/1\.1 400 /],
    ['CONNECT 127.0.0.1:99999 HTTP/1.1\r\n\r\n', /^HTTP\/1\.1 400 /],
    ['GET http://[zz/ HTTP/1.1\r\n\r\n', /^HTTP\/1\.1 400 /],
    ['GET http://a b/ HTTP/1.1\r\n\r\n', /^HTTP\/1\.1 400 /],
    ['\x00\x01\x02\x03\r\n\r\n', /^HTTP\/1\.1 400 /],
    [`GET http://127.0.0.1:${up.port}/ HTTP/1.1\r\nX: ${'a'.repeat(8000)}\r\n\r\n`, /^HTTP\/1\.1 431 /],
    [`GET http://127.0.0.1:${up.port}/ HTTP/1.1\r\nBad Header\r\n\r\n`, /^HTTP\/1\.1 400 /],
  ];
  for (const [input, want] of cases) {
    const r = await exchange(port, input);
    assert.match(r.text, want, JSON.stringify(input.slice(0, 60)));
    assert.equal(r.closed, true);
  }
  assert.equal(refusals.length, cases.length);
  assert.ok(refusals.every((r) => r.reason === 'MALFORMED' && typeof r.time === 'string'));
  // random bytes, many at once
  // Seeded, so a failure can be replayed: WORLDLINE_FUZZ_SEED=<seed> runs the same inputs again.
  const seed = Number(process.env['WORLDLINE_FUZZ_SEED'] ?? randomBytes(4).readUInt32LE(0));
  t.diagnostic(`fuzz seed ${seed} (replay with WORLDLINE_FUZZ_SEED=${seed})`);
  const next = seededRandom(seed);
  const inputs = Array.from({ length: 64 }, () => Buffer.from(Array.from({ length: 1 + Math.floor(next() * 600) }, () => Math.floor(next() * 256))));
  const fuzz = await Promise.all(inputs.map((input) => exchange(port, input, 4000)));
  assert.ok(fuzz.every((f) => f.closed || f.text === ''), 'every fuzzed connection was answered or left idle');
  const r = await viaProxy(port, `http://127.0.0.1:${up.port}/still-alive`);
  assert.equal(r.status, 200);
  assert.equal(proxy.stats().refusedByReason.MALFORMED >= cases.length, true);
  assert.equal(up.seen.filter((h) => h['x'] !== undefined).length, 0, 'no malformed request reached upstream');
});

test('proxy: connection limit, head timeout, unreachable allowed destination', async () => {
  const up = await echoServer();
  // a port that was free a moment ago: allowed, but nothing listens
  const probe = createNetServer();
  await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
  const dead = (probe.address() as AddressInfo).port;
  await new Promise<void>((r) => probe.close(() => r()));
  const { port, refusals, proxy } = await hostProxy([`127.0.0.1:${up.port}`, `127.0.0.1:${dead}`], { maxConnections: 3, headersTimeoutMs: 500 });

  const bad = await viaProxy(port, `http://127.0.0.1:${dead}/`);
  assert.equal(bad.status, 502);
  const badTunnel = await exchange(port, `CONNECT 127.0.0.1:${dead} HTTP/1.1\r\n\r\n`);
  assert.match(badTunnel.text, /^HTTP\/1\.1 502 /);
  assert.equal(proxy.stats().upstreamFailures, 2);

  const slow = await exchange(port, 'GET http://127.0.0.1/ HTTP/1.1\r\nX-Partial: ', 5000);
  assert.equal(slow.closed, true, 'an incomplete head is cut off by headersTimeout');

  const held: Socket[] = [];
  for (let i = 0; i < 3; i++) {
    const s = connect(port, '127.0.0.1');
    s.on('error', () => undefined);
    await new Promise((r) => s.once('connect', r));
    held.push(s);
  }
  await sleep(100);
  const extra = await exchange(port, `GET http://127.0.0.1:${up.port}/ HTTP/1.1\r\n\r\n`, 3000);
  assert.equal(extra.closed, true);
  assert.equal(extra.text, '', 'over the limit: closed unanswered');
  assert.ok(refusals.some((r) => r.reason === 'CONNECTION_LIMIT' && r.host === '' && r.port === 0));
  for (const s of held) s.destroy();
  await sleep(100);
  assert.equal((await viaProxy(port, `http://127.0.0.1:${up.port}/`)).status, 200, 'serves again below the limit');
});

test('proxy: close() ends open tunnels and releases the listening fd; bad options close the fd too', async () => {
  const up = await echoServer();
  const { port, proxy, inode } = await hostProxy([`127.0.0.1:${up.port}`]);
  const s = connect(port, '127.0.0.1');
  s.on('error', () => undefined);
  const closed = new Promise((r) => s.once('close', r));
  s.write(`CONNECT 127.0.0.1:${up.port} HTTP/1.1\r\n\r\n`);
  await new Promise((r) => s.once('data', r));
  assert.equal(proxy.stats().active, 1);
  assert.ok(openFdTargets().includes(inode));
  await proxy.close();
  await closed;
  assert.equal(openFdTargets().includes(inode), false, 'the listening socket is closed');
  assert.equal(proxy.stats().active, 0);
  assert.equal(proxy.stats().upstreamActive, 0);
  await proxy.close(); // idempotent

  const fd = listenInNetns(process.pid, '127.0.0.1', 0);
  const ino = socketInode(fd);
  assert.throws(() => startAllowlistProxy({ listenFd: fd, allow: ['*.example.com:443'], onRefusal: () => undefined }), AllowlistEntryError);
  assert.equal(openFdTargets().includes(ino), false, 'the proxy owns the fd even when it throws');
});
