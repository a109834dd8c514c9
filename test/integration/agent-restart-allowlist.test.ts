// An Allowlist World keeps its egress proxy across node-agent restarts (docs/security-model.md, limit 19):
// the proxy's listener lives in the agent and dies with it, and a new agent re-opens it at 127.0.0.1:3128
// inside the World's own network namespace — the one recorded when the World started, verified, never
// another. On a real stack (control plane, controller, node-agent, host HTTP servers), one World reaches its
// allowed destination through the proxy and is refused another (recorded on status.networkRefusals) before
// the agent is killed (-9), after the new agent re-attached, and again after a graceful SIGTERM restart
// (the leaving agent closes its listener, the next binds the same port); it ends with its real exit code.
// A second World whose recorded namespace no longer matches is refused its proxy by name
// (NETWORK_NAMESPACE_MISMATCH on status and in a Warning Event) and runs on failing closed: the allowed
// destination is unreachable, and it still ends with its real exit code.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { chownSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { metricSum } from '../support/metrics-text.js';
import { getJson } from '../support/wait.js';
import { startStack, type Stack } from '../support/stack.js';
import { adoptSmallRoot, mountsBelow, outputOf, shWorld, worldManifest } from '../support/worlds.js';

const OWNER = 1000;
const SMALL = { cpu: '100m', memory: '128Mi', wallTime: '5m' };
const RESUMED = 're-opened the Allowlist proxy in a world\'s network namespace';

async function hostServer(name: string): Promise<{ server: Server; port: number; hits: string[] }> {
  const hits: string[] = [];
  const server = createServer((req, res) => {
    hits.push(req.url ?? '');
    res.end(`${name}-says-hello:${req.url ?? ''}\n`);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, port: (server.address() as AddressInfo).port, hits };
}

/** Lets a waiting World go on: its go file, written from the host into the World's view of its Root, owned by its uid 1000. */
function release(s: Stack, w: Record<string, any>, name: string): void {
  const uid = w.metadata.uid as string;
  const merged = mountsBelow(join(s.storeDir, 'worlds', uid)).find((m) => m.endsWith('/merged'));
  assert.ok(merged, `World ${uid} has its Root mounted`);
  const base = Number(w.status.isolation.observation.uidMap[0].outside);
  writeFileSync(join(merged, name), '');
  chownSync(join(merged, name), base + OWNER, base + OWNER);
}

/** The shell lines that fetch /<path> from the allowed server through the proxy and ask the refused one for /<path>-refused. */
function probe(tag: string, allowed: number, refused: number): string[] {
  return [
    // curl's errors go to stdout too: one stream keeps the lines whole and in order in the output log.
    `curl -sS -m 10 http://127.0.0.1:${allowed}/${tag} 2>&1 && echo ${tag}-OK || echo ${tag}-FAILED`,
    `echo "${tag}-OTHER=$(curl -s -m 10 -o /dev/null -w '%{http_code}' http://127.0.0.1:${refused}/${tag}-refused)"`,
  ];
}

function waitFile(name: string): string {
  return `while [ ! -e ${name} ]; do sleep 0.1; done`;
}

type Refusals = { host: string; port: number; time: string }[];

describe('an Allowlist World keeps its proxy across node-agent restarts', () => {
  let s: Stack;
  let allowed: Awaited<ReturnType<typeof hostServer>>;
  let other: Awaited<ReturnType<typeof hostServer>>;

  before(async () => {
    allowed = await hostServer('allowed');
    other = await hostServer('other');
    s = await startStack({ nodeName: 'restart-allowlist-node' });
    await adoptSmallRoot(s, 'proj', OWNER);
  });

  after(async () => {
    await s?.stop();
    await new Promise((r) => allowed?.server.close(r));
    await new Promise((r) => other?.server.close(r));
  });

  test('kill -9 and SIGTERM restarts: the proxy is re-opened in the World\'s namespace; a mismatched namespace is refused by name and fails closed', async () => {
    const A = allowed.port;
    const B = other.port;
    const network = { policy: 'Allowlist' as const, allow: [`127.0.0.1:${A}`] };
    await s.apply(worldManifest('proxied', shWorld(['proj'], [
      ...probe('p-before', A, B), 'echo P-WAIT-1', waitFile('go-1'),
      ...probe('p-after-kill', A, B), 'echo P-WAIT-2', waitFile('go-2'),
      ...probe('p-after-term', A, B), 'exit 7',
    ].join('\n'), { network, resources: SMALL })));
    await s.apply(worldManifest('mismatch', shWorld(['proj'], [
      ...probe('m-before', A, B), 'echo M-WAIT', waitFile('go-1'),
      `curl -sS -m 5 http://127.0.0.1:${A}/m-after 2>&1 && echo M-AFTER-OK || echo M-AFTER-FAILED`, 'exit 7',
    ].join('\n'), { network, resources: SMALL })));
    const [p, m] = await Promise.all([s.waitWorld('proxied', ['Running', 'Captured', 'Failed', 'Refused']), s.waitWorld('mismatch', ['Running', 'Captured', 'Failed', 'Refused'])]);
    assert.equal(p.status.phase, 'Running', JSON.stringify(p.status));
    assert.equal(m.status.phase, 'Running', JSON.stringify(m.status));
    const pUid = p.metadata.uid as string;
    const mUid = m.metadata.uid as string;
    await s.waitFor('both Worlds probed and wait', async () => outputOf(s, pUid).includes('P-WAIT-1') && outputOf(s, mUid).includes('M-WAIT'), 30_000);
    assert.match(outputOf(s, pUid), /^p-before-OK$/m, outputOf(s, pUid));
    assert.match(outputOf(s, pUid), /^p-before-OTHER=403$/m);
    assert.match(outputOf(s, mUid), /^m-before-OK$/m, outputOf(s, mUid));
    // The refusal before the restart is on status before the agent goes (written at most once a second).
    await s.waitFor('the first refusal on status', async () => ((await s.get('world', 'proxied', 'default'))?.status?.networkRefusals ?? []).some((x: { port: number }) => x.port === B), 15_000);

    // kill -9: while no agent runs, the mismatch World's record names a namespace that is not its own.
    const killedAt = Date.now();
    await s.restartAgent({
      signal: 'SIGKILL',
      between: () => {
        const db = new Database(join(s.storeDir, 'state.db'), { fileMustExist: true });
        try {
          const row = db.prepare('SELECT supervisor_json FROM worlds WHERE uid = ?').get(mUid) as { supervisor_json: string | null } | undefined;
          const sup = JSON.parse(row?.supervisor_json ?? '{}') as { network?: { netns: string } };
          assert.ok(sup.network, `the supervisor record of an Allowlist World names its network: ${row?.supervisor_json ?? 'no record'}`);
          assert.match(sup.network.netns, /^net:\[\d+\]$/);
          assert.equal(sup.network.netns, m.status.isolation.observation.namespaces.net, 'the recorded namespace is the one the World was observed in');
          sup.network.netns = 'net:[1]';
          db.prepare('UPDATE worlds SET supervisor_json = ? WHERE uid = ?').run(JSON.stringify(sup), mUid);
        } finally {
          db.close();
        }
      },
    });
    await s.waitFor('the new agent re-opened the proxied World\'s proxy', async () => s.agent.logs.some((r) => r.msg === RESUMED && String(r.world).endsWith('/proxied')), 30_000);
    const refused = await s.waitFor('the mismatch World refused its proxy by name', async () => {
      const got = await s.get('world', 'mismatch', 'default');
      return got?.status?.reason === 'NETWORK_NAMESPACE_MISMATCH' ? got : undefined;
    }, 30_000);
    assert.equal(refused.status.phase, 'Running', 'the World runs on without its proxy');
    assert.match(refused.status.message, /net:\[1\]/);
    assert.match(refused.status.message, /loopback only/);
    assert.ok(!s.agent.logs.some((r) => r.msg === RESUMED && String(r.world).endsWith('/mismatch')), 'no proxy was opened for the mismatched World');

    release(s, p, 'go-1');
    release(s, m, 'go-1');
    await s.waitFor('the proxied World probed after the kill', async () => outputOf(s, pUid).includes('P-WAIT-2'), 30_000);
    const afterKill = outputOf(s, pUid);
    assert.match(afterKill, new RegExp(`^allowed-says-hello:/p-after-kill$`, 'm'), afterKill);
    assert.match(afterKill, /^p-after-kill-OK$/m, afterKill);
    assert.match(afterKill, /^p-after-kill-OTHER=403$/m, afterKill);

    // The mismatched World failed closed and still ends with its real exit code.
    const mEnd = await s.waitWorld('mismatch', ['Captured', 'Failed', 'Refused'], 'default', 60_000);
    assert.equal(mEnd.status.reason, 'AGENT_EXIT_NONZERO', JSON.stringify(mEnd.status));
    assert.equal(mEnd.status.exit?.code, 7);
    assert.match(outputOf(s, mUid), /^M-AFTER-FAILED$/m, outputOf(s, mUid));
    assert.match(outputOf(s, mUid), /Failed to connect to 127\.0\.0\.1 port 3128/, 'nothing listens at the proxy\'s address: the World fails closed');
    assert.ok(!allowed.hits.includes('/m-after'), 'the mismatched World reached the allowed server after the restart');
    assert.ok((mEnd.status.isolation.observation.notes as string[]).some((n) => n.startsWith('NETWORK_NAMESPACE_MISMATCH:')), JSON.stringify(mEnd.status.isolation.observation));
    const events = await s.waitFor('a Warning Event NETWORK_NAMESPACE_MISMATCH for the mismatch World', async () => {
      const list = await getJson<{ items: { reason: string; type: string; involvedObject: { name: string } }[] }>(s.cp, ['get', 'events', '-n', 'default', '-o', 'json']);
      const mine = (list?.items ?? []).filter((e) => e.reason === 'NETWORK_NAMESPACE_MISMATCH' && e.involvedObject.name === 'mismatch');
      return mine.length > 0 ? mine : undefined;
    }, 30_000);
    assert.equal(events[0]!.type, 'Warning');

    // The refusal after the kill reaches status, written by the new agent, beside the one from before.
    const refusalsOf = async (): Promise<Refusals> => ((await s.get('world', 'proxied', 'default'))?.status?.networkRefusals ?? []) as Refusals;
    await s.waitFor('the refusal after the kill on status', async () => (await refusalsOf()).filter((x) => x.port === B).length === 2, 15_000);
    const afterKillRefusals = (await refusalsOf()).filter((x) => x.port === B);
    assert.ok(Date.parse(afterKillRefusals[1]!.time) >= Math.floor(killedAt / 1000) * 1000, `refusal time ${afterKillRefusals[1]!.time} is after the restart`);
    assert.ok(metricSum(await s.agent.metrics(), 'worldline_network_refusals_total') >= 1, 'the new agent counts refusals');

    // SIGTERM: the leaving agent closes its (re-opened) listener; the next one binds the same port again.
    const leaving = s.agent;
    await s.restartAgent({ signal: 'SIGTERM' });
    assert.ok(leaving.logs.some((r) => r.msg === 'closed the Allowlist proxies of the worlds left running' && Number(r.proxies) >= 1), 'the leaving agent closed its proxies');
    await s.waitFor('the next agent re-opened the proxy', async () => s.agent.logs.some((r) => r.msg === RESUMED && String(r.world).endsWith('/proxied')), 30_000);
    const termedAt = Date.now();
    release(s, p, 'go-2');
    const pEnd = await s.waitWorld('proxied', ['Captured', 'Failed', 'Refused'], 'default', 60_000);
    const out = outputOf(s, pUid);
    assert.equal(pEnd.status.reason, 'AGENT_EXIT_NONZERO', JSON.stringify(pEnd.status));
    assert.equal(pEnd.status.exit?.code, 7, 'the real exit code of the workload');
    assert.match(out, /^p-after-term-OK$/m, out);
    assert.match(out, /^p-after-term-OTHER=403$/m, out);
    assert.deepEqual(allowed.hits.filter((h) => h.startsWith('/p-')).sort(), ['/p-after-kill', '/p-after-term', '/p-before']);
    assert.deepEqual(other.hits, [], 'nothing reached the refused server');
    await s.waitFor('the refusal after the SIGTERM restart on status', async () => (await refusalsOf()).filter((x) => x.port === B).length === 3, 15_000);
    const last = (await refusalsOf()).filter((x) => x.port === B)[2]!;
    assert.ok(Date.parse(last.time) >= Math.floor(termedAt / 1000) * 1000, `refusal time ${last.time} is after the second restart`);
    assert.ok(!(pEnd.status.isolation.observation.notes as string[] | undefined ?? []).some((n) => n.startsWith('NETWORK_')), JSON.stringify(pEnd.status.isolation.observation));
    assert.equal(s.agent.logs.filter((r) => r.level === 'error').length, 0, JSON.stringify(s.agent.logs.filter((r) => r.level === 'error')));
  });
});
