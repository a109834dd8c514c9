// Isolation waivers on a real stack (issue 13, item 6): a World whose isolation decision is not
// reported-sufficient runs only with a waiver signed by a key the node's trust policy trusts for
// waivers, about that World, naming every missing control, valid now, and not spent before — spent
// once, at launch, in the node's SQLite grant store. Network Shared is the case users meet: a Policy
// that defaults its Worlds to Shared no longer lets them run without one. Every other case refuses by
// name, and the workload never runs.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, chownSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PREDICATE_TYPES } from '../../core/evidence/statement.js';
import { GrantStore } from '../../node-agent/evidence/grant-store.js';
import { metricSum } from '../support/metrics-text.js';
import { startStack, type Stack } from '../support/stack.js';
import { condition, getJson } from '../support/wait.js';
import { HOUR_MS as HOUR, iso, issuerKey, signerRule, signWaiver as waiverFor, writeTrustPolicy } from '../support/waivers.js';
import { applyRoot, describeRun, runWorld, shWorld, type WorldResult } from '../support/worlds.js';

const OWNER = 1000;
const WORKLOAD = 'echo WORKLOAD-RAN; echo ran > ran.txt';
const NODE = 'waiver-node';

describe('isolation waivers on a real stack', () => {
  let s: Stack;
  const issuer = issuerKey();
  const stranger = issuerKey();
  const trustDir = mkdtempSync(join(tmpdir(), 'worldline-trust-'));
  const trustPath = join(trustDir, 'policy.json');
  const writeTrust = (revokedGrants: string[] = []): void =>
    writeTrustPolicy(
      trustPath,
      [
        signerRule('platform-team', issuer),
        // The same key under a second label: still one signer.
        signerRule('platform-team-alias', issuer),
        // The stranger's key is trusted, but only for isolation observations: not for waivers.
        signerRule('observer', stranger, PREDICATE_TYPES.isolationObservation),
      ],
      revokedGrants,
    );

  const policy = (name: string, spec: Record<string, unknown>): string => JSON.stringify({ apiVersion: 'worldline.dev/v1alpha1', kind: 'Policy', metadata: { name }, spec });

  before(async () => {
    writeTrust();
    s = await startStack({ nodeName: NODE, agentArgs: ['--trust-policy', trustPath] });
    // A Policy that defaults its Worlds to the host network and asks the agent stage for network-denied.
    await s.apply(policy('shared-default', { roots: ['shared-root'], checks: [], network: { policy: 'Shared' }, isolation: { agent: { minimumLevel: 'os-sandboxed', controls: ['network-denied'] } } }));
    // A Policy that leaves the agent stage unconfigured: nothing a waiver names can make that sufficient.
    await s.apply(policy('unconfigured', { roots: ['unconfigured-root'], checks: [] }));
    for (const name of ['free-root', 'shared-root', 'unconfigured-root']) {
      const p = join(s.scratch, name);
      mkdirSync(p, { mode: 0o755 });
      writeFileSync(join(p, 'a.txt'), 'alpha\n');
      chownSync(p, OWNER, OWNER);
      chownSync(join(p, 'a.txt'), OWNER, OWNER);
      assert.equal((await applyRoot(s, name, p)).status.phase, 'Ready');
    }
  });

  after(async () => {
    await s?.stop();
    rmSync(trustDir, { recursive: true, force: true });
  });

  const waivers = async (outcome: string): Promise<number> => metricSum(await s.agent.metrics(), 'worldline_isolation_waivers_total', { outcome });

  /** A World refused with `code`: the workload never ran, nothing captured, Isolated False. */
  async function refused(name: string, spec: Parameters<typeof runWorld>[2], code: string): Promise<WorldResult> {
    const before = await waivers(code);
    const r = await runWorld(s, name, spec);
    assert.ok(['Failed', 'Refused'].includes(r.status.phase), describeRun(r));
    assert.equal(r.status.reason, code, describeRun(r));
    assert.doesNotMatch(r.output, /WORKLOAD-RAN/, 'the workload ran although its waiver was refused');
    assert.equal(r.status.candidate, undefined);
    assert.equal(r.status.isolation?.waiver, undefined);
    assert.equal(condition(r.world, 'Isolated')?.reason, 'IsolationInsufficient');
    if (code !== 'ISOLATION_INSUFFICIENT') assert.equal(await waivers(code), before + 1, `worldline_isolation_waivers_total{outcome="${code}"}`);
    return r;
  }

  const shared = (root: string, waiver?: string): Parameters<typeof runWorld>[2] =>
    shWorld([root], WORKLOAD, { network: { policy: 'Shared' }, ...(waiver ? { isolation: { waiver } } : {}) });

  test('without a waiver, Shared is refused — under no Policy, and under a Policy that defaults to Shared', async () => {
    const free = await refused('no-waiver-free', shared('free-root'), 'ISOLATION_INSUFFICIENT');
    assert.deepEqual(free.status.isolation.decision.reasons, ['CONTROLS_MISSING']);
    assert.match(condition(free.world, 'Isolated')?.message ?? '', /missing network-denied/);
    // The World does not set spec.network: the Policy's default (Shared) applies, and still needs a waiver
    // (under None the same Policy's rule would be met: reported-sufficient, and it would have run).
    const r = await refused('no-waiver-policy', shWorld(['shared-root'], WORKLOAD), 'ISOLATION_INSUFFICIENT');
    assert.deepEqual(r.status.isolation.decision.reasons, ['CONTROLS_MISSING']);
    assert.match(condition(r.world, 'Isolated')?.message ?? '', /missing network-denied/);
  });

  test('a waiver signed by a trusted issuer, naming the missing control, runs the World once and is recorded', async () => {
    const spentBefore = await waivers('SPENT');
    const envelope = waiverFor('waived', issuer.privateKey);
    // The World sets no spec.network: its Policy's default, Shared, applies; the waiver lets it run.
    const r = await runWorld(s, 'waived', shWorld(['shared-root'], WORKLOAD, { isolation: { waiver: envelope } }));
    assert.equal(r.status.phase, 'Captured', describeRun(r));
    assert.equal(r.status.isolation.observation.network, 'host');
    assert.match(r.output, /^WORKLOAD-RAN$/m);
    const isolated = condition(r.world, 'Isolated');
    assert.equal(isolated?.status, 'False');
    assert.equal(isolated?.reason, 'IsolationWaived');
    assert.match(isolated?.message ?? '', /waives network-denied: the waived job needs the host network/);
    assert.notEqual(r.status.isolation.decision.outcome, 'reported-sufficient');
    const w = r.status.isolation.waiver;
    assert.match(w.grantId, /^grant-waived-/);
    assert.deepEqual(w.waivedControls, ['network-denied']);
    // Two labels, one key: one signer (the first label the policy gives it).
    assert.deepEqual(w.signers, ['platform-team']);
    assert.equal(await waivers('SPENT'), spentBefore + 1);
    const events = await getJson<{ items: { reason: string; type: string; involvedObject: { name: string } }[] }>(s.cp, ['get', 'events', '-n', 'default', '-o', 'json']);
    assert.ok(events?.items.some((e) => e.reason === 'IsolationWaived' && e.type === 'Warning' && e.involvedObject.name === 'waived'), 'no IsolationWaived Warning event');
    // Spent durably in the node's grant store, with the digests of its bytes and request.
    const store = GrantStore.open(join(s.storeDir, 'grants.db'));
    try {
      const spent = store.spent(w.grantId);
      assert.ok(spent, 'the grant is not recorded as spent');
      assert.match(spent.bytesDigest, /^[0-9a-f]{64}$/);
    } finally {
      store.close();
    }

    // The same waiver again, for a World made anew under the same name: spent already.
    await s.cp.kubectl(['delete', 'world', 'waived', '-n', 'default', '--wait=true']);
    await refused('waived', shared('shared-root', envelope), 'GRANT_SPENT');
    // Re-signed under the same grant id with other bytes (a longer reason): still not a second use.
    const resigned = waiverFor('waived', issuer.privateKey, { grantId: w.grantId, reason: 'once more, please' });
    await s.cp.kubectl(['delete', 'world', 'waived', '-n', 'default', '--wait=true']);
    await refused('waived', shared('shared-root', resigned), 'GRANT_ALTERED');
  });

  test('a waiver for another World, another node, too few controls or a non-waivable reason is refused by name', async () => {
    await refused('wrong-world', shared('shared-root', waiverFor('some-other-world', issuer.privateKey)), 'GRANT_WORLD_MISMATCH');
    await refused('wrong-node', shared('shared-root', waiverFor('wrong-node', issuer.privateKey, { node: 'another-node' })), 'GRANT_NODE_MISMATCH');
    const few = await refused('too-few', shared('shared-root', waiverFor('too-few', issuer.privateKey, { waivedControls: ['no-credentials'] })), 'GRANT_INSUFFICIENT');
    assert.match(condition(few.world, 'Isolated')?.message ?? '', /network-denied not named by the waiver/);
    // An unconfigured stage is not a missing control: no waiver makes it run.
    const stage = await refused('unconfigured', shared('unconfigured-root', waiverFor('unconfigured', issuer.privateKey)), 'GRANT_INSUFFICIENT');
    assert.ok(stage.status.isolation.decision.reasons.includes('STAGE_NOT_CONFIGURED'));
  });

  test('untrusted signers, expired or revoked grants and malformed waivers are refused by name', async () => {
    // A key the trust policy knows, but not for waivers; and one it does not know at all.
    await refused('wrong-scope', shared('shared-root', waiverFor('wrong-scope', stranger.privateKey)), 'GRANT_UNTRUSTED');
    await refused('unknown-key', shared('shared-root', waiverFor('unknown-key', issuerKey().privateKey)), 'GRANT_UNTRUSTED');
    const now = Date.now();
    await refused('expired', shared('shared-root', waiverFor('expired', issuer.privateKey, { notBefore: iso(now - 2 * HOUR), notAfter: iso(now - HOUR) })), 'GRANT_EXPIRED');
    await refused('early', shared('shared-root', waiverFor('early', issuer.privateKey, { notBefore: iso(now + HOUR), notAfter: iso(now + 2 * HOUR) })), 'GRANT_NOT_YET_VALID');
    await refused('garbled', shared('shared-root', '{"payloadType":"x"}'), 'GRANT_INVALID');
    // A waiver whose statement names this World but whose signed subject is another World's.
    const swapped = waiverFor('swapped', issuer.privateKey, {}, { namespace: 'default', name: 'elsewhere' });
    await refused('swapped', shared('shared-root', swapped), 'GRANT_INVALID');
    // Revocation by grant id, read from the trust policy file as it is when the waiver is spent.
    const revoked = waiverFor('revoked', issuer.privateKey, { grantId: `grant-revoked-${now}` });
    writeTrust([`grant-revoked-${now}`]);
    try {
      await refused('revoked', shared('shared-root', revoked), 'GRANT_REVOKED');
    } finally {
      writeTrust();
    }
  });

  test('a node whose grant store went missing refuses waivers instead of starting a new one', async () => {
    await s.restartAgent({ between: () => rmSync(join(s.storeDir, 'grants.db'), { force: true }) });
    await refused('store-missing', shared('shared-root', waiverFor('store-missing', issuer.privateKey)), 'GRANT_STORE_MISSING');
  });
});
