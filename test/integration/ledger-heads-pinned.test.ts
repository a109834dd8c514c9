// Receipt keys pinned off the node, on a real stack (issue 13, item 8): the controller runs with a trust
// policy, and records a node's ledger head only when the receipt a Collapse shows is signed by a key that
// policy pins for the node. A node signing with a key the policy does not pin — here, before its own key
// is pinned, and after it is revoked — is refused KEY_UNTRUSTED (a Warning Event on the Collapse) and the
// head stays where it was; `worldline receipts verify --trust-policy` checks the node's ledger against the
// same pinned keys and the head the cluster recorded.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { createPublicKey } from 'node:crypto';
import { chownSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { TrustPolicy } from '../../core/evidence/trust-policy.js';
import { RECEIPT_SIGNER_SCOPE } from '../../core/receipts/receipt-trust.js';
import { collapseManifest, waitCollapse } from '../support/collapses.js';
import { startStack, type Stack } from '../support/stack.js';
import { getJson } from '../support/wait.js';
import { issuerKey } from '../support/waivers.js';
import { applyRoot, describeRun, runWorld, shWorld } from '../support/worlds.js';

const NODE = 'pinned-node';
const CLI = fileURLToPath(new URL('../../cli/worldline.js', import.meta.url));

describe('ledger heads under pinned receipt keys', () => {
  let s: Stack;
  const trustDir = mkdtempSync(join(tmpdir(), 'worldline-pinned-'));
  const trustPath = join(trustDir, 'policy.json');
  const writePolicy = (keys: string[], revoked: string[] = []): void => {
    const now = Date.now();
    const policy: TrustPolicy = {
      signers: keys.map((publicKey, i) => ({ issuer: `receipts-${i}`, publicKey, predicateTypes: [RECEIPT_SIGNER_SCOPE], nodes: [NODE], validFrom: new Date(now - 86_400_000).toISOString(), validUntil: new Date(now + 86_400_000).toISOString() })),
      revocations: { issuedAt: new Date(now - 1000).toISOString(), maxAgeSeconds: 3600, revokedPublicKeys: revoked },
    };
    writeFileSync(trustPath, JSON.stringify(policy));
  };
  /** The node's own receipts key, as the raw hex a signer rule takes. */
  const nodeKeyHex = (): string => Buffer.from(createPublicKey(readFileSync(join(s.storeDir, 'keys', 'receipts-ed25519.pub.pem'), 'utf8')).export({ format: 'jwk' }).x ?? '', 'base64url').toString('hex');

  before(async () => {
    // At first the policy pins some other key for the node.
    writePolicy([issuerKey().publicHex]);
    s = await startStack({ nodeName: NODE, controllerArgs: ['--trust-policy', trustPath] });
    const hostPath = join(s.scratch, 'pinned');
    mkdirSync(hostPath, { mode: 0o755 });
    writeFileSync(join(hostPath, 'a.txt'), 'alpha\n');
    for (const p of [hostPath, join(hostPath, 'a.txt')]) chownSync(p, 1000, 1000);
    assert.equal((await applyRoot(s, 'pinned', hostPath)).status.phase, 'Ready');
  });
  after(async () => {
    await s?.stop();
    rmSync(trustDir, { recursive: true, force: true });
  });

  /** A World that adds one file, collapsed: the receipt's sequence. */
  async function collapse(name: string): Promise<Record<string, any>> {
    const w = await runWorld(s, name, shWorld(['pinned'], `echo ${name} > ${name}.txt`));
    assert.equal(w.status.phase, 'Captured', describeRun(w));
    await s.apply(collapseManifest(`${name}-c`, name));
    const c = await waitCollapse(s, `${name}-c`, 30_000);
    assert.equal(c.status.phase, 'Committed', JSON.stringify(c.status));
    return c;
  }
  const recordedHead = async (): Promise<{ sequence: number; keyId: string } | undefined> => {
    const cm = await s.get('configmap', 'worldline-ledger-heads', 'worldline-system');
    const text = cm?.data?.[NODE] as string | undefined;
    return text ? (JSON.parse(text) as { sequence: number; keyId: string }) : undefined;
  };
  const untrustedEvent = (collapseName: string): Promise<unknown> =>
    s.waitFor(`a KEY_UNTRUSTED Warning on Collapse ${collapseName}`, async () => {
      const list = await getJson<{ items: { reason: string; type: string; message: string; involvedObject: { kind: string; name: string } }[] }>(s.cp, ['get', 'events', '-n', 'default', '-o', 'json']);
      return list?.items.find((e) => e.reason === 'KEY_UNTRUSTED' && e.type === 'Warning' && e.involvedObject.kind === 'Collapse' && e.involvedObject.name === collapseName);
    }, 20_000);

  test('a receipt signed by a key the policy does not pin is not recorded (KEY_UNTRUSTED); once the node key is pinned it is; once revoked, the head stays', async () => {
    const c1 = await collapse('first');
    const event = (await untrustedEvent('first-c')) as { message: string };
    assert.match(event.message, new RegExp(`receipt 1 of node ${NODE} is not recorded: .*signed by ${c1.status.receipt.keyId}, which the trust policy does not trust`));
    assert.equal(await recordedHead(), undefined, 'a head signed by an unpinned key was recorded');

    // The operator pins the node's key (in the chart: values trustPolicy); the controller reads it at its next flush.
    writePolicy([nodeKeyHex()]);
    const c2 = await collapse('second');
    const head = await s.waitFor('the head recorded under the pinned key', async () => {
      const h = await recordedHead();
      return h?.sequence === 2 ? h : undefined;
    }, 20_000);
    assert.equal(head.keyId, c2.status.receipt.keyId);

    // The node's ledger verifies against the pinned key and holds the recorded head.
    const ledger = join(s.storeDir, 'receipts', 'ledger.jsonl');
    const heads = join(s.scratch, 'heads.json');
    writeFileSync(heads, JSON.stringify(await getJson(s.cp, ['get', 'configmap', 'worldline-ledger-heads', '-n', 'worldline-system'])));
    const ok = execFileSync(process.execPath, [CLI, 'receipts', 'verify', '--ledger', ledger, '--trust-policy', trustPath, '--node', NODE, '--heads', heads], { encoding: 'utf8' });
    assert.match(ok, new RegExp(`2 receipts verified against the keys the trust policy pins for node ${NODE}; it holds the head the cluster recorded for ${NODE}: receipt 2`));

    // The key is revoked: the next receipt is not recorded, and the ledger no longer verifies.
    writePolicy([nodeKeyHex()], [nodeKeyHex()]);
    await collapse('third');
    await untrustedEvent('third-c');
    assert.equal((await recordedHead())?.sequence, 2, 'the head moved under a revoked key');
    const refused = spawnSync(process.execPath, [CLI, 'receipts', 'verify', '--ledger', ledger, '--trust-policy', trustPath, '--node', NODE], { encoding: 'utf8' });
    assert.equal(refused.status, 1, refused.stdout);
    assert.match(refused.stderr, /line 1 \(sequence 1\): KEY_UNTRUSTED/);
  });
});
