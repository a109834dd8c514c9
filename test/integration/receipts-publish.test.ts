// The receipts public key published on a real stack (kube-apiserver + etcd, controller, node-agent as
// root): the node-agent applies ConfigMap worldline-receipts-<node> holding the public key of its store's
// signing key, `worldline receipts verify` accepts a ledger signed by that key with the published PEM (and
// refuses one signed by another key), a stale ConfigMap is corrected at the next start and, while the agent
// runs, at the next refresh (a deleted one is made again), and a publish that fails is retried until it
// succeeds.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { keyIdOf } from '../../core/receipts/ledger-line.js';
import type { ReceiptContent } from '../../core/receipts/receipt.js';
import { loadKubeConfig } from '../../kube/client.js';
import { systemClock } from '../../kube/clock.js';
import type { Logger } from '../../kube/logger.js';
import { ReceiptLedger } from '../../node-agent/receipts/ledger.js';
import { PUBLIC_KEY_DATA, publishReceiptsPublicKey, receiptsConfigMapName } from '../../node-agent/receipts/publish-public-key.js';
import { PUBLIC_HEX_FILE, PUBLIC_PEM_FILE } from '../../node-agent/receipts/signing-key.js';
import { startStack, type Stack } from '../support/stack.js';
import { getJson, kc } from '../support/wait.js';

const CLI = fileURLToPath(new URL('../../cli/worldline.js', import.meta.url));
const NAMESPACE = 'worldline-system';
const NODE = 'receipts-node';

function content(i: number): ReceiptContent {
  return {
    transaction: { id: `tx-${i}`, state: 'DENIED' },
    world: { namespace: 'default', name: `w${i}`, uid: `u${i}` },
    mode: 'Candidate',
    decision: { authorized: false, reasons: ['CONFLICT'] },
    evidence: { requirementHash: null, subject: null, verifierIdentity: null, executedVerifierIdentity: null },
    roots: [{ root: 'repo', fromGeneration: 1, toGeneration: null, beforeDigest: 'sha256:b', afterDigest: null }],
    issuedAt: '2026-03-04T05:06:07.000Z',
  };
}

function verify(ledger: string, key: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [CLI, 'receipts', 'verify', '--ledger', ledger, '--public-key', key], (err, stdout, stderr) => {
      const code = err ? (err as { code?: unknown }).code : 0;
      resolve({ code: typeof code === 'number' ? code : -1, stdout, stderr });
    });
  });
}

/** A Logger that keeps its records, for asserting what the publisher reported. */
function recordingLogger(records: { level: string; msg: string; fields: Record<string, unknown> }[]): Logger {
  const make = (base: Record<string, unknown>): Logger => {
    const at = (level: string) => (msg: string, fields: Record<string, unknown> = {}) => void records.push({ level, msg, fields: { ...base, ...fields } });
    return { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error'), child: (f) => make({ ...base, ...f }) };
  };
  return make({});
}

describe('the receipts public key in a ConfigMap', () => {
  let s: Stack;
  let work: string;

  before(async () => {
    s = await startStack({ nodeName: NODE });
    work = mkdtempSync(join(tmpdir(), 'wl-receipts-publish-'));
  });
  after(async () => {
    await s?.stop();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  const configMap = (): Promise<Record<string, any> | undefined> => s.get('configmap', receiptsConfigMapName(NODE), NAMESPACE);
  const keyFile = (): string => readFileSync(join(s.storeDir, 'keys', PUBLIC_PEM_FILE), 'utf8');

  test('the agent publishes the public key of its store; a ledger signed by that key verifies with the published PEM', async () => {
    const cm = await s.waitFor('the receipts ConfigMap', configMap);
    assert.equal(cm.metadata.name, `worldline-receipts-${NODE}`);
    assert.equal(cm.data[PUBLIC_KEY_DATA.pem], keyFile(), 'the published PEM is the one in <store>/keys');
    const rawPublicKey = Buffer.from(readFileSync(join(s.storeDir, 'keys', PUBLIC_HEX_FILE), 'utf8').trim(), 'hex');
    assert.equal(cm.data[PUBLIC_KEY_DATA.keyId], keyIdOf(rawPublicKey));
    assert.equal(cm.data[PUBLIC_KEY_DATA.node], NODE);
    assert.equal(cm.metadata.labels['worldline.dev/node'], NODE);
    const withFields = await getJson(s.cp, ['get', 'configmap', receiptsConfigMapName(NODE), '-n', NAMESPACE, '--show-managed-fields']);
    assert.ok(
      (withFields?.metadata.managedFields as { manager: string; operation: string }[]).some((f) => f.manager === 'worldline-node-agent' && f.operation === 'Apply'),
      'written by server-side apply under the node-agent field manager',
    );
    await s.agent.waitForLog((r) => r.msg === 'receipts public key published');

    // Receipts signed with the agent's key (a ledger opened on its key directory), checked with the PEM
    // taken from the ConfigMap, not from the node.
    const ledgerPath = join(work, 'ledger.jsonl');
    const ledger = ReceiptLedger.open({ path: ledgerPath, keyDir: join(s.storeDir, 'keys') });
    for (let i = 1; i <= 3; i++) ledger.append(content(i));
    ledger.close();
    const publishedPem = join(work, 'published.pem');
    writeFileSync(publishedPem, cm.data[PUBLIC_KEY_DATA.pem] as string);
    const ok = await verify(ledgerPath, publishedPem);
    assert.equal(ok.code, 0, ok.stderr);
    assert.match(ok.stdout, /^OK .*: 3 receipts/);

    const foreignPath = join(work, 'foreign.jsonl');
    const foreign = ReceiptLedger.open({ path: foreignPath, keyDir: join(work, 'other-keys') });
    foreign.append(content(1));
    foreign.close();
    const refused = await verify(foreignPath, publishedPem);
    assert.notEqual(refused.code, 0, 'a ledger signed by another key does not verify with the published key');
  });

  test('a stale ConfigMap is corrected when the agent starts again', async () => {
    await kc(s.cp, ['patch', 'configmap', receiptsConfigMapName(NODE), '-n', NAMESPACE, '--type=merge', '-p', JSON.stringify({ data: { [PUBLIC_KEY_DATA.pem]: 'stale' } })]);
    assert.equal((await configMap())?.data[PUBLIC_KEY_DATA.pem], 'stale');
    await s.restartAgent({ signal: 'SIGTERM' });
    await s.waitFor('the published PEM restored', async () => (await configMap())?.data[PUBLIC_KEY_DATA.pem] === keyFile());
  });

  test('a publish that fails (its namespace does not exist yet) is retried until it succeeds', async () => {
    const records: { level: string; msg: string; fields: Record<string, unknown> }[] = [];
    const namespace = 'receipts-later';
    const publisher = publishReceiptsPublicKey({
      kubeConfig: loadKubeConfig({ kubeconfig: s.cp.kubeconfigPath }),
      namespace,
      nodeName: 'elsewhere',
      keyDir: join(work, 'elsewhere-keys'),
      clock: systemClock,
      logger: recordingLogger(records),
      backoff: { initialMs: 20, maxMs: 200 },
    });
    try {
      await s.waitFor('a failed attempt', async () => records.find((r) => r.level === 'warn' && r.msg === 'could not publish the receipts public key; retrying'));
      await kc(s.cp, ['create', 'namespace', namespace]);
      assert.equal(await publisher.done, true);
    } finally {
      await publisher.stop();
    }
    const cm = await s.get('configmap', receiptsConfigMapName('elsewhere'), namespace);
    assert.equal(cm?.data[PUBLIC_KEY_DATA.pem], readFileSync(join(work, 'elsewhere-keys', PUBLIC_PEM_FILE), 'utf8'));
    assert.equal(records.filter((r) => r.msg === 'receipts public key published').length, 1);
  });

  test('while the publisher runs, an edited or deleted ConfigMap is restored at the next refresh', async () => {
    const records: { level: string; msg: string; fields: Record<string, unknown> }[] = [];
    const nodeName = 'refreshing';
    const keyDir = join(work, 'refreshing-keys');
    const publisher = publishReceiptsPublicKey({
      kubeConfig: loadKubeConfig({ kubeconfig: s.cp.kubeconfigPath }),
      namespace: NAMESPACE,
      nodeName,
      keyDir,
      clock: systemClock,
      logger: recordingLogger(records),
      refreshMs: 200,
    });
    const name = receiptsConfigMapName(nodeName);
    const pem = (): Promise<unknown> => s.get('configmap', name, NAMESPACE).then((cm) => cm?.data?.[PUBLIC_KEY_DATA.pem]);
    try {
      assert.equal(await publisher.done, true);
      const want = readFileSync(join(keyDir, PUBLIC_PEM_FILE), 'utf8');
      assert.equal(await pem(), want);
      await kc(s.cp, ['patch', 'configmap', name, '-n', NAMESPACE, '--type=merge', '-p', JSON.stringify({ data: { [PUBLIC_KEY_DATA.pem]: 'edited' } })]);
      await s.waitFor('the edited PEM restored', async () => (await pem()) === want);
      await kc(s.cp, ['delete', 'configmap', name, '-n', NAMESPACE]);
      await s.waitFor('the deleted ConfigMap made again', async () => (await pem()) === want);
    } finally {
      await publisher.stop();
    }
    assert.equal(records.filter((r) => r.msg === 'receipts public key published').length, 1, 'the first publish is logged once');
    assert.ok(records.some((r) => r.msg === 'receipts public key re-applied'), 'later applies are logged at debug');
    // Stopped: nothing applies it any more.
    await kc(s.cp, ['delete', 'configmap', name, '-n', NAMESPACE]);
    await new Promise((r) => setTimeout(r, 600));
    assert.equal(await s.get('configmap', name, NAMESPACE), undefined, 'a stopped publisher does not re-apply');
  });
});
