// The generated CRDs against a real kube-apiserver: they install, the examples apply, every invalid
// fixture is refused with the expected message (CEL rules, enums, patterns, required fields and
// update-only immutability rules), and the discovery surface users rely on works — printer columns,
// category, `kubectl explain`, field selectors on nodeName, status written by two SSA field managers,
// `kubectl wait --for=condition=...`.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments, stringify } from 'yaml';
import { repoRoot } from '../../crds/generate.js';
import { startControlPlane, type ControlPlane } from '../../scripts/controlplane/harness.js';

const root = repoRoot();
const fixturesDir = join(root, 'test/fixtures/invalid');

let cp: ControlPlane;

before(async () => {
  cp = await startControlPlane({ crdDir: join(root, 'crds'), quiet: true });
});

after(async () => {
  await cp?.stop();
});

async function kubectl(args: string[], input?: string) {
  return cp.kubectl(args, input === undefined ? undefined : { input });
}

interface Fixture {
  file: string;
  expects: string[];
  docs: string[];
}

function loadFixtures(): Fixture[] {
  return readdirSync(fixturesDir)
    .filter((f) => f.endsWith('.yaml'))
    .sort()
    .map((file) => {
      const text = readFileSync(join(fixturesDir, file), 'utf8');
      const expects = [...text.matchAll(/^# expect: (.+)$/gm)].map((m) => m[1]!.trim());
      const docs = parseAllDocuments(text).map((d) => stringify(d.toJS()));
      return { file, expects, docs };
    });
}

void test('CRDs are installed and Established', async () => {
  const r = await kubectl(['get', 'crd', '-o', 'name']);
  assert.equal(r.code, 0, r.stderr);
  for (const plural of ['roots', 'policies', 'worlds', 'checks', 'collapses']) {
    assert.match(r.stdout, new RegExp(`customresourcedefinition.apiextensions.k8s.io/${plural}.worldline.dev`));
  }
});

void test('examples/ apply cleanly and `kubectl get worldline` lists every kind', async () => {
  const r = await kubectl(['apply', '-f', join(root, 'examples')]);
  assert.equal(r.code, 0, r.stderr);
  const list = await kubectl(['get', 'worldline', '-o', 'name']);
  assert.equal(list.code, 0, list.stderr);
  for (const name of [
    'root.worldline.dev/demo-repo',
    'policy.worldline.dev/demo-policy',
    'world.worldline.dev/hello',
    'check.worldline.dev/hello-verify-revalidate',
    'collapse.worldline.dev/hello-collapse',
  ]) {
    assert.ok(list.stdout.includes(name), `kubectl get worldline is missing ${name}:\n${list.stdout}`);
  }
  // Defaults were applied by the API server.
  const world = await kubectl(['get', 'world', 'hello', '-o', 'json']);
  const obj = JSON.parse(world.stdout) as { spec: { isolation: { acknowledgeHostYolo: boolean }; agent: { env: { value: string }[] } } };
  assert.equal(obj.spec.isolation.acknowledgeHostYolo, false);
  const check = JSON.parse((await kubectl(['get', 'collapse', 'hello-collapse', '-o', 'json'])).stdout) as { spec: { mode: string } };
  assert.equal(check.spec.mode, 'Candidate');
});

void test('printer columns: kubectl get wl / wlroot / wlcheck / wlcol / wlpol', async () => {
  const headers: Record<string, string[]> = {
    wl: ['NAME', 'PHASE', 'NODE', 'CANDIDATE', 'CHECKS', 'AGE'],
    wlroot: ['NAME', 'NODE', 'PATH', 'PHASE', 'GENERATION', 'DIGEST', 'AGE'],
    wlcheck: ['NAME', 'WORLD', 'CHECK', 'PHASE', 'VERDICT', 'AGE'],
    wlcol: ['NAME', 'WORLD', 'MODE', 'PHASE', 'RECEIPT', 'AGE'],
    wlpol: ['NAME', 'ROOTS', 'ACCEPTED', 'AGE'],
  };
  for (const [short, cols] of Object.entries(headers)) {
    const r = await kubectl(['get', short]);
    assert.equal(r.code, 0, r.stderr);
    const header = r.stdout.split('\n')[0]!.trim().split(/\s+/);
    assert.deepEqual(header, cols, `kubectl get ${short}`);
  }
  const root = await kubectl(['get', 'wlroot', 'demo-repo', '--no-headers']);
  assert.match(root.stdout, /demo-repo\s+dev-node\s+\/srv\/worldline-demo\/repo/);
});

void test('kubectl explain prints field descriptions', async () => {
  const r = await kubectl(['explain', 'world.spec.agent']);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /The untrusted program and how it starts/);
  for (const field of ['command', 'env', 'workingDir', 'runAsUser', 'credentials']) assert.match(r.stdout, new RegExp(`\\b${field}\\b`));
  const status = await kubectl(['explain', 'world.status.candidate.digest']);
  assert.equal(status.code, 0, status.stderr);
  assert.match(status.stdout, /Content digest of the captured candidate/);
  const col = await kubectl(['explain', 'collapse.status.receipt']);
  assert.match(col.stdout, /Signed receipt/);
});

void test('field selectors work on nodeName (selectableFields)', async () => {
  const roots = await kubectl(['get', 'roots', '--field-selector', 'spec.nodeName=dev-node', '-o', 'name']);
  assert.equal(roots.code, 0, roots.stderr);
  assert.match(roots.stdout, /root.worldline.dev\/demo-repo/);
  const other = await kubectl(['get', 'roots', '--field-selector', 'spec.nodeName=elsewhere', '-o', 'name']);
  assert.equal(other.code, 0, other.stderr);
  assert.equal(other.stdout.trim(), '');
  for (const kind of ['worlds', 'checks', 'collapses']) {
    const r = await kubectl(['get', kind, '--field-selector', 'status.nodeName=dev-node', '-o', 'name']);
    assert.equal(r.code, 0, `${kind}: ${r.stderr}`);
  }
});

void test('status: two field managers own their own condition types; kubectl wait sees them', async () => {
  const now = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
  const cond = (type: string) => ({ type, status: 'True', reason: 'Test', message: '', lastTransitionTime: now });
  const statusPatch = (conditions: object[], extra: object = {}) =>
    JSON.stringify({ apiVersion: 'worldline.dev/v1alpha1', kind: 'World', metadata: { name: 'hello', namespace: 'default' }, status: { ...extra, conditions } });
  const agent = await kubectl(
    ['apply', '--server-side', '--subresource=status', '--field-manager=worldline-node-agent', '-f', '-'],
    statusPatch([cond('Admitted'), cond('Running')], { nodeName: 'dev-node', phase: 'Running' }),
  );
  assert.equal(agent.code, 0, agent.stderr);
  const ctrl = await kubectl(
    ['apply', '--server-side', '--subresource=status', '--field-manager=worldline-controller', '-f', '-'],
    statusPatch([cond('Collapsed')], { checksSummary: '1/1' }),
  );
  assert.equal(ctrl.code, 0, ctrl.stderr);
  const obj = JSON.parse((await kubectl(['get', 'world', 'hello', '-o', 'json'])).stdout) as {
    status: { conditions: { type: string }[]; nodeName: string };
  };
  assert.deepEqual(obj.status.conditions.map((c) => c.type).sort(), ['Admitted', 'Collapsed', 'Running']);
  const wait = await kubectl(['wait', '--for=condition=Collapsed', '--timeout=20s', 'world/hello']);
  assert.equal(wait.code, 0, wait.stderr);
  const sel = await kubectl(['get', 'worlds', '--field-selector', 'status.nodeName=dev-node', '-o', 'name']);
  assert.match(sel.stdout, /world.worldline.dev\/hello/);
  const row = await kubectl(['get', 'wl', 'hello', '--no-headers']);
  assert.match(row.stdout, /hello\s+Running\s+dev-node\s+1\/1\s/);
  // Status is validated too.
  const bad = await kubectl(
    ['apply', '--server-side', '--subresource=status', '--field-manager=worldline-node-agent', '-f', '-'],
    statusPatch([cond('Admitted')], { reason: 'not-upper-snake' }),
  );
  assert.notEqual(bad.code, 0);
  assert.match(bad.stderr, /status.reason/);
});

void test('invalid fixtures are refused with the expected messages', async (t) => {
  const fixtures = loadFixtures();
  // Pinned: a fixture that goes missing (renamed, deleted, not .yaml) fails here instead of passing unseen.
  assert.equal(fixtures.length, 42, `expected 42 invalid fixtures, found ${fixtures.length}: ${fixtures.map((f) => f.file).join(', ')}`);
  for (const f of fixtures) {
    await t.test(f.file, async () => {
      assert.ok(f.expects.length > 0, 'no # expect: line');
      assert.ok(f.docs.length === 1 || f.docs.length === 2, 'one or two documents');
      try {
        if (f.docs.length === 2) {
          const created = await kubectl(['apply', '-f', '-'], f.docs[0]);
          assert.equal(created.code, 0, `first document must be valid: ${created.stderr}`);
        }
        const r = await kubectl(['apply', '-f', '-'], f.docs[f.docs.length - 1]);
        assert.notEqual(r.code, 0, `the API server accepted ${f.file}:\n${r.stdout}`);
        for (const e of f.expects) assert.ok(r.stderr.includes(e), `expected ${JSON.stringify(e)} in:\n${r.stderr}`);
      } finally {
        await kubectl(['delete', '--ignore-not-found', '--wait=false', '-f', '-'], f.docs[0]);
      }
    });
  }
});
