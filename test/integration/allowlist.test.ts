// The Allowlist network on a real stack: a World whose spec.network is {policy: Allowlist, allow: [host:port]}
// reaches that destination through the node-agent's proxy (HTTP_PROXY in its environment), gets a refusal
// for any other destination (recorded on status.networkRefusals and counted in
// worldline_network_refusals_total), and has no way around the proxy.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { condition } from '../support/wait.js';
import { metricSum } from '../support/metrics-text.js';
import { startStack, type Stack } from '../support/stack.js';
import { adoptSmallRoot, describeRun, runWorld, shWorld } from '../support/worlds.js';

const OWNER = 1000;

async function hostServer(name: string): Promise<{ server: Server; port: number; hits: string[] }> {
  const hits: string[] = [];
  const server = createServer((req, res) => {
    hits.push(req.url ?? '');
    res.end(`${name}-says-hello:${req.url ?? ''}\n`);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, port: (server.address() as AddressInfo).port, hits };
}

describe('the Allowlist network on a real stack', () => {
  let s: Stack;
  let allowed: Awaited<ReturnType<typeof hostServer>>;
  let other: Awaited<ReturnType<typeof hostServer>>;

  before(async () => {
    allowed = await hostServer('allowed');
    other = await hostServer('other');
    s = await startStack({ nodeName: 'allowlist-node' });
    await adoptSmallRoot(s, 'proj', OWNER);
  });

  after(async () => {
    await s?.stop();
    await new Promise((r) => allowed?.server.close(r));
    await new Promise((r) => other?.server.close(r));
  });

  test('the allowed host:port is reached through the proxy; another is refused and recorded; a direct connection fails', async () => {
    const refusalsBefore = metricSum(await s.agent.metrics(), 'worldline_network_refusals_total');
    const A = allowed.port;
    const B = other.port;
    const r = await runWorld(s, 'allow', shWorld(['proj'], [
      // One stream: curl's error lines and the markers reach the log in the order written.
      'exec 2>&1',
      'echo "PROXY=$http_proxy"',
      // curl honours http_proxy: this goes through the proxy at 127.0.0.1:3128.
      `curl -sS -m 10 http://127.0.0.1:${A}/via-proxy && echo VIA-PROXY-OK || echo VIA-PROXY-FAILED`,
      `curl -sS -m 10 -x http://127.0.0.1:3128 http://127.0.0.1:${A}/explicit-proxy && echo EXPLICIT-PROXY-OK || echo EXPLICIT-PROXY-FAILED`,
      `echo "OTHER-CODE=$(curl -s -m 10 -o /dev/null -w '%{http_code}' http://127.0.0.1:${B}/refused)"`,
      // Around the proxy: curl told to skip it, and bash's raw /dev/tcp.
      `curl -sS -m 5 --noproxy '*' http://127.0.0.1:${A}/direct && echo DIRECT-OK || echo DIRECT-FAILED`,
      `bash -c 'exec 3<>/dev/tcp/127.0.0.1/${A} && printf "GET /raw HTTP/1.0\\r\\n\\r\\n" >&3 && echo RAW-CONNECTED' 2>/dev/null || echo RAW-FAILED`,
    ].join('\n'), { network: { policy: 'Allowlist', allow: [`127.0.0.1:${A}`] } }));
    assert.equal(r.status.phase, 'Captured', describeRun(r));
    assert.match(r.output, /^PROXY=http:\/\/127\.0\.0\.1:3128$/m);
    assert.match(r.output, new RegExp(`^allowed-says-hello:/via-proxy$`, 'm'), r.output);
    assert.match(r.output, /^VIA-PROXY-OK$/m, r.output);
    assert.match(r.output, /^EXPLICIT-PROXY-OK$/m, r.output);
    assert.match(r.output, /^OTHER-CODE=403$/m, r.output);
    assert.match(r.output, /^DIRECT-FAILED$/m, r.output);
    assert.match(r.output, /^RAW-FAILED$/m, r.output);
    assert.doesNotMatch(r.output, /DIRECT-OK|RAW-CONNECTED|other-says-hello/);

    // What the servers saw: only the proxied requests reached the allowed one; nothing reached the other.
    assert.deepEqual(allowed.hits.sort(), ['/explicit-proxy', '/via-proxy']);
    assert.deepEqual(other.hits, []);

    // The refusal is on status (host, port) and in the metric.
    const refusals = (r.status.networkRefusals ?? []) as { host: string; port: number; time: string }[];
    assert.ok(refusals.some((x) => x.host === '127.0.0.1' && x.port === B), `no refusal of 127.0.0.1:${B}: ${JSON.stringify(refusals)}`);
    assert.ok(!refusals.some((x) => x.port === A), `the allowed port was recorded as refused: ${JSON.stringify(refusals)}`);
    for (const x of refusals) assert.ok(!Number.isNaN(Date.parse(x.time)), `refusal time ${x.time}`);
    const refusalsAfter = metricSum(await s.agent.metrics(), 'worldline_network_refusals_total');
    assert.ok(refusalsAfter >= refusalsBefore + 1, `worldline_network_refusals_total ${refusalsBefore} → ${refusalsAfter}`);

    // The contract records the restricted egress as an enforced control.
    assert.equal(condition(r.world, 'Isolated')?.status, 'True', JSON.stringify(r.status.isolation));
    assert.ok(r.status.isolation.observation.enforcedControls.includes('network-egress-restricted'), JSON.stringify(r.status.isolation));
    assert.ok(!r.status.isolation.observation.enforcedControls.includes('network-denied'));
    assert.equal(r.status.isolation.observation.network, 'isolated');
  });

  test('a World under None gets no proxy: the allowed server is unreachable however it is asked', async () => {
    const A = allowed.port;
    const hitsBefore = allowed.hits.length;
    const r = await runWorld(s, 'none', shWorld(['proj'], [
      // One stream: curl's error lines and the markers reach the log in the order written.
      'exec 2>&1',
      'echo "PROXY=${http_proxy:-unset}"',
      `curl -sS -m 5 -x http://127.0.0.1:3128 http://127.0.0.1:${A}/none-proxy && echo NONE-PROXY-OK || echo NONE-PROXY-FAILED`,
      `curl -sS -m 5 http://127.0.0.1:${A}/none-direct && echo NONE-DIRECT-OK || echo NONE-DIRECT-FAILED`,
    ].join('\n')));
    assert.equal(r.status.phase, 'Captured', describeRun(r));
    assert.match(r.output, /^PROXY=unset$/m);
    assert.match(r.output, /^NONE-PROXY-FAILED$/m);
    assert.match(r.output, /^NONE-DIRECT-FAILED$/m);
    assert.equal(allowed.hits.length, hitsBefore);
    assert.equal(r.status.networkRefusals, undefined);
  });
});
