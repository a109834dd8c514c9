// The Allowlist network on a real sandboxed world (root): the world runs in its own network namespace with
// only loopback; attachAllowlist puts the proxy's listener at 127.0.0.1:3128 inside that namespace before
// the go-ahead; the world reaches an allowed host server only through the proxy, gets 403 (and a refusal
// record) for anything else, has no route around the proxy, cannot crash it with malformed input; the
// listener is the agent's and lives only in the world's namespace; close() releases it.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync, readlinkSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { connect, Socket, type AddressInfo } from 'node:net';
import { listenInNetns, nsIds, type SandboxExit } from '../../native/index.js';
import { attachAllowlist, PROXY_PORT, withProxyEnv, WorldNetworkError, type WorldNetwork } from '../../node-agent/network/world-network.js';
import type { NetworkRefusal } from '../../node-agent/network/allowlist-proxy.js';
import { createTestHostAddress } from '../support/test-host-address.js';
import { Cleanup, buildRootfs, closeQuietly, run, sandboxOptions, start } from './native-fixtures.js';

const cleanup = new Cleanup();
const asyncCleanup: (() => Promise<void>)[] = [];
after(async () => {
  for (const c of asyncCleanup.reverse()) {
    try {
      await c();
    } catch {
      // best effort
    }
  }
  cleanup.run();
});
const base = cleanup.tempDir('network');
const rootfs = buildRootfs(base, cleanup);

const LISTEN_3128 = `0100007F:${PROXY_PORT.toString(16).toUpperCase().padStart(4, '0')}`;

async function hostServer(name: string): Promise<{ server: Server; port: number; hits: string[] }> {
  const hits: string[] = [];
  const server = createServer((req, res) => {
    hits.push(req.url ?? '');
    res.end(`${name}:${req.url ?? ''}`);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  asyncCleanup.push(() => new Promise<void>((r) => server.close(() => r())));
  return { server, port: (server.address() as AddressInfo).port, hits };
}

/** LISTEN rows of a /proc/<pid>/net/tcp file as [local_address, inode]. */
function tcpListeners(path: string): [string, string][] {
  return readFileSync(path, 'utf8').trim().split('\n').slice(1).map((l) => l.trim().split(/\s+/))
    .filter((f) => f[3] === '0A').map((f) => [f[1]!, f[9]!]);
}

function ownSocketInodes(): Set<string> {
  const out = new Set<string>();
  for (const n of readdirSync('/proc/self/fd')) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/self/fd/${n}`));
      if (m) out.add(m[1]!);
    } catch {
      // raced with a close
    }
  }
  return out;
}

/** Reads a pipe until `marker` appears (the world then idles until killed). */
function readUntil(fd: number, marker: string, timeoutMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    const s = new Socket({ fd, readable: true, writable: false });
    asyncCleanup.push(async () => {
      s.destroy();
    });
    const timer = setTimeout(() => reject(new Error(`timed out waiting for ${marker}; got:\n${text}`)), timeoutMs);
    timer.unref();
    s.on('data', (c: Buffer) => {
      text += c.toString();
      if (text.includes(marker)) {
        clearTimeout(timer);
        resolve(text);
      }
    });
    s.on('error', reject);
    s.on('end', () => {
      clearTimeout(timer);
      resolve(text);
    });
  });
}

const connectResult = (port: number): Promise<string> =>
  new Promise((resolve) => {
    const s = connect(port, '127.0.0.1');
    s.on('connect', () => {
      s.destroy();
      resolve('connected');
    });
    s.on('error', (e: Error & { code?: string }) => resolve(e.code ?? 'error'));
  });

test('an Allowlist world: through the proxy to allowed, 403 elsewhere, no route around it, listener in its netns, released on close', async () => {
  const allowed = await hostServer('allowed');
  const denied = await hostServer('denied');
  // A non-loopback host address of the test's own, so the no-route probe always runs.
  const external = createTestHostAddress();
  asyncCleanup.push(async () => external.remove());
  const hostIp = external.host;
  const A = `127.0.0.1:${allowed.port}`;
  const script = [
    'exec 2>&1',
    `curl -sS -m 5 http://${A}/plain; echo " get=$?"`,
    `curl -sS -m 5 -p http://${A}/tunnel; echo " tunnel=$?"`,
    `curl -sS -m 5 -o /dev/null -w '%{http_code}' http://127.0.0.1:${denied.port}/x; echo " denied=$?"`,
    `curl -sS -m 5 -p http://127.0.0.1:${denied.port}/y 2>&1; echo " deniedtunnel=$?"`,
    `curl -sS -m 3 --noproxy '*' http://${A}/direct 2>&1; echo " direct=$?"`,
    `bash -c 'exec 3<>/dev/tcp/127.0.0.1/${allowed.port}' 2>&1; echo " rawloop=$?"`,
    `bash -c 'exec 3<>/dev/tcp/${hostIp}/${allowed.port}' 2>&1; echo " rawhost=$?"`,
    `bash -c 'exec 3<>/dev/tcp/127.0.0.1/${PROXY_PORT}; printf "GARBAGE\\r\\n\\r\\n" >&3; head -n1 <&3'; echo " malformed=$?"`,
    `bash -c 'exec 3<>/dev/tcp/127.0.0.1/${PROXY_PORT}; printf "CONNECT nocolon HTTP/1.1\\r\\n\\r\\n" >&3; head -n1 <&3'; echo " malformed2=$?"`,
    `curl -sS -m 5 http://${A}/after; echo " after=$?"`,
    'env | grep -i _proxy | sort | tr "\\n" " "; echo',
    'echo DONE',
    'exec sleep 120',
  ].join('\n');

  const opts = sandboxOptions(rootfs, script, { env: withProxyEnv(['PATH=/usr/bin:/bin', 'HOME=/tmp', 'LANG=C', 'http_proxy=http://evil:1']) });
  const { handle, channel, exited } = start(opts);
  let exit: SandboxExit | undefined;
  void exited.then((e) => (exit = e));
  let killed = false;
  const kill = async (): Promise<void> => {
    if (!killed) {
      killed = true;
      try {
        process.kill(handle.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    await exited;
    channel.close();
    closeQuietly(handle.pidfd);
  };
  asyncCleanup.push(kill);
  if (handle.stderr !== undefined) {
    const errPipe = new Socket({ fd: handle.stderr, readable: true, writable: false });
    errPipe.resume();
    asyncCleanup.push(async () => {
      errPipe.destroy();
    });
  }
  const out = readUntil(handle.stdout!, 'DONE\n', 60_000);

  await channel.observe();
  const refusals: NetworkRefusal[] = [];
  const t0 = Date.now();
  const net: WorldNetwork = await attachAllowlist(handle.pid, [A], (r) => refusals.push(r), { pidfd: handle.pidfd });
  asyncCleanup.push(() => net.close());

  // (e) the listener lives in the world's namespace, not the agent's, and it is ours.
  const worldNs = nsIds(handle.pid).net;
  assert.equal(net.netns, worldNs);
  assert.notEqual(net.netns, nsIds('self').net);
  const inWorld = tcpListeners(`/proc/${handle.pid}/net/tcp`).filter(([a]) => a === LISTEN_3128);
  assert.equal(inWorld.length, 1, 'exactly one listener on 127.0.0.1:3128 in the world');
  const inode = inWorld[0]![1];
  assert.ok(ownSocketInodes().has(inode), 'that listener is a socket this agent process holds');
  const onHost = tcpListeners('/proc/self/net/tcp').filter(([a]) => a === LISTEN_3128 || a === `00000000:${LISTEN_3128.slice(9)}`);
  assert.ok(onHost.every(([, ino]) => ino !== inode), 'the host namespace has no listener of ours on 3128');
  if (onHost.length === 0) assert.equal(await connectResult(PROXY_PORT), 'ECONNREFUSED', 'host 127.0.0.1:3128 is not where the proxy listens');

  channel.go();
  await channel.started();
  const stdout = await out;
  const lines = stdout;

  // (a) allowed destination reached through the proxy, by absolute-URI GET and by CONNECT.
  assert.match(lines, /^allowed:\/plain get=0$/m);
  assert.match(lines, /^allowed:\/tunnel tunnel=0$/m);
  assert.deepEqual(allowed.hits.slice(0, 2), ['/plain', '/tunnel']);
  // (b) not allowed: 403, and refusals recorded with host, port and time.
  assert.match(lines, /^403 denied=0$/m);
  assert.match(lines, /^curl: \(56\) CONNECT tunnel failed, response 403\n deniedtunnel=56$/m);
  assert.deepEqual(denied.hits, [], 'nothing reached the denied server');
  const notAllowed = refusals.filter((r) => r.reason === 'NOT_ALLOWED');
  assert.deepEqual(notAllowed.map((r) => [r.host, r.port]), [['127.0.0.1', denied.port], ['127.0.0.1', denied.port]]);
  for (const r of refusals) assert.ok(Date.parse(r.time) >= t0 - 1000 && Date.parse(r.time) <= Date.now() + 1000, r.time);
  // (c) ignoring the proxy: the world's own loopback has nothing there, and off-loopback there is no route.
  assert.match(lines, new RegExp(`^curl: \\(7\\) Failed to connect to 127\\.0\\.0\\.1 port ${allowed.port} .*\\n direct=7$`, 'm'));
  assert.match(lines, /: Connection refused\n rawloop=1$/m);
  assert.match(lines, /: Network is unreachable\n rawhost=1$/m);
  assert.equal(allowed.hits.includes('/direct'), false);
  // (d) malformed input: 400, reported, and the proxy keeps serving.
  assert.match(lines, /^HTTP\/1\.1 400 Bad Request\r?\n malformed=0$/m);
  assert.match(lines, /^HTTP\/1\.1 400 Bad Request\r?\n malformed2=0$/m);
  assert.equal(refusals.filter((r) => r.reason === 'MALFORMED').length, 2);
  assert.match(lines, /^allowed:\/after after=0$/m);
  // the world's environment carries only the proxy's variables (the spec's own http_proxy was dropped)
  assert.match(lines, /^HTTPS_PROXY=http:\/\/127\.0\.0\.1:3128 HTTP_PROXY=http:\/\/127\.0\.0\.1:3128 NO_PROXY= http_proxy=http:\/\/127\.0\.0\.1:3128 https_proxy=http:\/\/127\.0\.0\.1:3128 no_proxy= $/m);
  assert.equal(net.stats().allowed, 3);

  // (f) close(): the listener is gone from the world's namespace and from this process; the port is free again.
  await net.close();
  assert.equal(ownSocketInodes().has(inode), false, 'no fd of ours refers to the listener');
  assert.deepEqual(tcpListeners(`/proc/${handle.pid}/net/tcp`).filter(([a]) => a === LISTEN_3128), []);
  const again = listenInNetns({ pidfd: handle.pidfd }, '127.0.0.1', PROXY_PORT);
  closeQuietly(again);
  assert.equal(exit, undefined, 'the world was still running throughout');

  await kill();
  assert.equal((await exited).signal, 'SIGKILL');
});

test('attachAllowlist refuses a world that shares the agent network, and a world that is gone, leaving no fd behind', async () => {
  const before = ownSocketInodes().size;
  const { handle, channel, exited } = start(sandboxOptions(rootfs, 'true', { newNetwork: false }));
  try {
    await channel.observe();
    await assert.rejects(attachAllowlist(handle.pid, ['127.0.0.1:1'], () => undefined), (e: unknown) => e instanceof WorldNetworkError && e.code === 'NETWORK_NAMESPACE_SHARED');
  } finally {
    channel.close(); // no go-ahead: the child exits 125
    closeQuietly(handle.pidfd);
  }
  const gone = await exited;
  assert.equal(gone.code, 125);
  await assert.rejects(attachAllowlist(handle.pid, ['127.0.0.1:1'], () => undefined), { code: 'ENOENT' });
  assert.equal(ownSocketInodes().size, before);
});

test('the proxy variables are what a plain world sees, and without attach nothing answers on 3128', async () => {
  const r = await run(sandboxOptions(rootfs, `curl -sS -m 3 http://127.0.0.1:9/ 2>&1; echo "rc=$?"`, { env: withProxyEnv(['PATH=/usr/bin:/bin', 'HOME=/tmp']) }));
  assert.match(r.stdout, /^curl: \(7\) Failed to connect to 127\.0\.0\.1 port 3128 .*\nrc=7$/m, 'the world is pointed at the proxy; with no proxy attached there is no exit at all');
});
