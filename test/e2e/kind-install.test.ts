// The user's path on a real cluster: a two-node kind cluster on a locally built node image, worldline
// installed with `helm install` from charts/worldline, then the whole loop through kubectl: a Root
// adopted on a node, a World run, checked (a legacy check and a private-evaluator one) and collapsed, its receipt verified with the published key; a
// World on the second node bound there; the node-agent of one node refused writing another node's World
// status (the ValidatingAdmissionPolicy); a view-only user refused creating a World; `helm upgrade`
// rolling the pods with the API still working; `helm uninstall` leaving no World mount and no worldline
// process on either node. Run with `npm run test:e2e` (docs/testing.md says what it builds and costs).
import assert from 'node:assert/strict';
import { cpSync, lchownSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { requireRoot } from '../support/require-root.js';
import { waitFor } from '../support/wait.js';
import { must, run } from './support/commands.js';
import { clusterPieces, helmIn, installDiagnostics, removeLeftoverClusters, inNode, kubectlIn, kubectlMust, nodeProcesses, patchAs, type ClusterPieces } from './support/kind-cluster.js';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const CLUSTER = process.env.WORLDLINE_E2E_CLUSTER ?? 'worldline-e2e';
/** The cluster docs/quickstart-kind.md creates (test/e2e/quickstart.test.ts). */
const QUICKSTART_CLUSTER = 'worldline';
const NS = 'worldline-system';
const RELEASE = 'worldline';
/** Where kind-config/two-node.yaml mounts each node's sample-Root directory from, on the host (+ /<role>). */
const HOST_ROOTS = '/srv/worldline-kind/two-node';
/** Where that directory appears inside a node (and so inside the node-agent and its Worlds). */
const NODE_ROOTS = '/srv/worldline';
/** Roots of an earlier run on a kept cluster stay in its node stores: this run's Roots get names of their own. */
const RUN = Date.now().toString(36);
const ROOT_A = `e2e-a-${RUN}`;
const ROOT_B = `e2e-b-${RUN}`;

let p: ClusterPieces;
let k: ReturnType<typeof kubectlIn>;
let tmp: string;

async function json<T = any>(args: string[]): Promise<T> {
  return JSON.parse(await kubectlMust(p, [...args, '-o', 'json'])) as T;
}

async function phase(kind: string, name: string): Promise<string | undefined> {
  const r = await k(['get', kind, name, '-o', 'jsonpath={.status.phase}']);
  return r.code === 0 ? r.stdout : undefined;
}

async function waitPhase(kind: string, name: string, want: string[], timeoutMs = 240_000): Promise<string> {
  try {
    return await waitFor(`${kind}/${name} phase in ${want.join('|')}`, async () => {
      const ph = await phase(kind, name);
      return ph && want.includes(ph) ? ph : undefined;
    }, timeoutMs, 1000);
  } catch (err) {
    const st = await k(['get', kind, name, '-o', 'jsonpath={.status}']);
    throw new Error(`${(err as Error).message}\nstatus: ${st.stdout}`);
  }
}

/** A copy of examples/greeter as directory `name` of node `node`'s sample-Root folder, owned by uid 1000. */
function plantRepo(node: string, name: string): string {
  const host = join(HOST_ROOTS, node.slice(CLUSTER.length + 1), name);
  rmSync(host, { recursive: true, force: true });
  mkdirSync(dirname(host), { recursive: true });
  cpSync(join(repo, 'examples/greeter'), host, { recursive: true });
  chownTree(host, 1000, 1000);
  return `${NODE_ROOTS}/${name}`;
}

function chownTree(path: string, uid: number, gid: number): void {
  lchownSync(path, uid, gid);
  if (!lstatSync(path).isDirectory()) return;
  for (const entry of readdirSync(path)) chownTree(join(path, entry), uid, gid);
}

function rootYaml(name: string, node: string, path: string): string {
  return JSON.stringify({ apiVersion: 'worldline.dev/v1alpha1', kind: 'Root', metadata: { name }, spec: { nodeName: node, path } });
}

function worldYaml(name: string, root: string, script: string): string {
  return JSON.stringify({
    apiVersion: 'worldline.dev/v1alpha1',
    kind: 'World',
    metadata: { name, namespace: 'default' },
    spec: { roots: [root], agent: { command: ['/bin/sh', '-c', script] }, network: { policy: 'None' }, resources: { cpu: '1', memory: '256Mi', pids: 128, wallTime: '2m' } },
  });
}

const IMPLEMENT_SHOUT = [
  "cat > src/greet.sh <<'SRC'",
  '#!/bin/sh',
  'shout=false',
  'if [ "${1:-}" = --shout ]; then shout=true; shift; fi',
  'greeting="Hello, ${1:-world}!"',
  "if $shout; then printf '%s\\n' \"$greeting\" | tr '[:lower:]' '[:upper:]'; else printf '%s\\n' \"$greeting\"; fi",
  'SRC',
  'echo $(( $(cat VERSION) + 1 )) > VERSION',
].join('\n');

before(async () => {
  requireRoot('the end-to-end test (docker, kind nodes, host directories)');
  tmp = mkdtempSync(join(tmpdir(), 'worldline-e2e-'));
  // The quick start's cluster is made from the same config: a leftover one would share this cluster's stores.
  for (const name of await removeLeftoverClusters(repo, [QUICKSTART_CLUSTER].filter((n) => n !== CLUSTER), 'kind-config/two-node.yaml')) {
    process.stderr.write(`# removed cluster ${name}, left by an interrupted run\n`);
  }
  p = await clusterPieces(repo, CLUSTER, 'kind-config/two-node.yaml');
  k = kubectlIn(p);
  assert.equal(p.nodes.length, 2, `the two-node config gives two nodes, got ${p.nodes.join(', ')}`);
  process.stderr.write(`# e2e pieces (seconds): ${JSON.stringify(p.timings)}\n`);
});

after(async () => {
  if (tmp) rmSync(tmp, { recursive: true, force: true });
  // The cluster goes unless asked to stay (WORLDLINE_E2E_KEEP=1, to look around after a failure).
  if (p && process.env.WORLDLINE_E2E_KEEP !== '1') await must('bash', [join(repo, 'scripts/kind/delete-cluster.sh'), CLUSTER, join(repo, 'kind-config/two-node.yaml')], { timeoutMs: 300_000 });
});

describe('worldline on a two-node kind cluster', { concurrency: false }, () => {
  const [nodeA, nodeB] = [() => p.nodes[0]!, () => p.nodes[1]!];

  it('installs with helm: controller and node-agent pods Ready on every node', async () => {
    const t0 = Date.now();
    const [repoName, tag] = p.image.split(/:(?=[^:]+$)/);
    await helmIn(p, ['upgrade', '--install', RELEASE, join(repo, 'charts/worldline'), '-n', NS, '--create-namespace',
      '--set', `image.repository=${repoName}`, '--set', `image.tag=${tag}`, '--wait', '--timeout', '6m']).catch(async (err: Error) => {
      throw new Error(`${err.message}\n${await installDiagnostics(p, NS)}`);
    });
    process.stderr.write(`# helm install: ${Math.round((Date.now() - t0) / 1000)} s\n`);
    // helm --wait counts a DaemonSet done with up to its maxUnavailable (1) pods not Ready: wait for the
    // rollouts as a user would, then assert every pod (both runs of this test on a fresh cluster saw one
    // node-agent still starting when helm returned).
    await kubectlMust(p, ['rollout', 'status', '-n', NS, `daemonset/${RELEASE}-node-agent`, '--timeout=5m']);
    await kubectlMust(p, ['rollout', 'status', '-n', NS, `deployment/${RELEASE}-controller`, '--timeout=5m']);
    const pods = await json<{ items: any[] }>(['get', 'pods', '-n', NS]);
    const ready = (pod: any) => pod.status?.conditions?.some((c: any) => c.type === 'Ready' && c.status === 'True');
    const controllers = pods.items.filter((x) => x.metadata.labels?.['app.kubernetes.io/component'] === 'controller');
    const agents = pods.items.filter((x) => x.metadata.labels?.['app.kubernetes.io/component'] === 'node-agent');
    assert.equal(controllers.length, 2, 'two controller replicas');
    assert.ok(controllers.every(ready), 'every controller pod is Ready');
    assert.deepEqual(agents.map((x) => x.spec.nodeName).sort(), [...p.nodes].sort(), 'one node-agent on each node');
    assert.ok(agents.every(ready), 'every node-agent pod is Ready');
    // The kube-controller-manager type-checks the admission policies' CEL against the CRDs: no warnings.
    const vaps = await json<{ items: any[] }>(['get', 'validatingadmissionpolicies', '-l', `app.kubernetes.io/instance=${RELEASE}`]);
    assert.ok(vaps.items.length > 0, 'the chart installed its ValidatingAdmissionPolicies');
    await waitFor('every policy type-checked', async () => {
      const now = await json<{ items: any[] }>(['get', 'validatingadmissionpolicies', '-l', `app.kubernetes.io/instance=${RELEASE}`]);
      return now.items.every((v) => v.status?.typeChecking !== undefined) ? now : undefined;
    }, 60_000, 1000).then((now) => {
      const warnings = now.items.flatMap((v) => (v.status.typeChecking.expressionWarnings ?? []).map((w: any) => `${v.metadata.name}: ${w.fieldRef}: ${w.warning}`));
      assert.deepEqual(warnings, []);
    });
  });

  it('adopts a Root, runs a World, checks and collapses it, and the receipt verifies with the published key', async () => {
    const node = nodeA();
    const path = plantRepo(node, ROOT_A);
    await kubectlMust(p, ['apply', '-f', '-'], rootYaml(ROOT_A, node, path));
    assert.equal(await waitPhase('root', ROOT_A, ['Ready', 'Broken']), 'Ready');
    // The example's private-evaluator examiner is found under its Root's name in the verifier mount.
    const policy = readFileSync(join(repo, 'examples/policy.yaml'), 'utf8').replace('demo-policy', 'e2e-policy').replace('- demo-repo', `- ${ROOT_A}\n    - ${ROOT_B}`)
      .replace('/run/worldline-verifiers/demo-repo/', `/run/worldline-verifiers/${ROOT_A}/`);
    assert.match(policy, /profile: private-evaluator-v1/, 'the example Policy has its private-evaluator check');
    await kubectlMust(p, ['apply', '-f', '-'], policy);
    await kubectlMust(p, ['apply', '-f', '-'], worldYaml('e2e-hello', ROOT_A, IMPLEMENT_SHOUT));
    assert.equal(await waitPhase('world', 'e2e-hello', ['Captured', 'Failed', 'Refused']), 'Captured');
    assert.equal(await waitPhase('check', 'e2e-hello-verify', ['Passed', 'Failed', 'Refused']), 'Passed');
    // The private-evaluator check runs in the node-agent pod: python3 from the image as the examiner, the
    // greeter's program as the candidate principal; its verdict is the examiner's admitted JUnit report.
    assert.equal(await waitPhase('check', 'e2e-hello-examine', ['Passed', 'Failed', 'Refused']), 'Passed');
    const examine = await json(['get', 'check', 'e2e-hello-examine']);
    assert.equal(examine.status.verdict, 'PASS', JSON.stringify(examine.status));
    assert.equal(examine.status.reason, undefined, `an admitted report: ${JSON.stringify(examine.status)}`);
    await kubectlMust(p, ['apply', '-f', '-'], JSON.stringify({ apiVersion: 'worldline.dev/v1alpha1', kind: 'Collapse', metadata: { name: 'e2e-hello', namespace: 'default' }, spec: { worldRef: 'e2e-hello', mode: 'Candidate' } }));
    assert.equal(await waitPhase('collapse', 'e2e-hello', ['Committed', 'Denied', 'Failed']), 'Committed');
    // The node's directory shows the change (read inside the node: the host path is a link into its store).
    assert.equal((await inNode(node, ['cat', `${path}/VERSION`])).trim(), '2');
    assert.match(await inNode(node, ['sh', `${path}/src/greet.sh`, '--shout', 'Ada']), /HELLO, ADA!/);
    // The receipt in the Collapse's status verifies against the key the node-agent published.
    const cm = await json<{ data: Record<string, string> }>(['get', 'configmap', `worldline-receipts-${node}`, '-n', NS]);
    const key = join(tmp, 'receipts.pub.pem');
    writeFileSync(key, cm.data['public-key.pem'] ?? '');
    const collapse = join(tmp, 'collapse.json');
    writeFileSync(collapse, await kubectlMust(p, ['get', 'collapse', 'e2e-hello', '-o', 'json']));
    const verified = await run(process.execPath, [join(repo, 'dist/cli/worldline.js'), 'receipts', 'verify-status', '--collapse', collapse, '--public-key', key]);
    assert.equal(verified.code, 0, verified.stderr + verified.stdout);
  });

  it('binds a World on the second node to that node', async () => {
    const node = nodeB();
    const path = plantRepo(node, ROOT_B);
    await kubectlMust(p, ['apply', '-f', '-'], rootYaml(ROOT_B, node, path));
    assert.equal(await waitPhase('root', ROOT_B, ['Ready', 'Broken']), 'Ready');
    await kubectlMust(p, ['apply', '-f', '-'], worldYaml('e2e-b', ROOT_B, 'echo 3 > VERSION'));
    assert.equal(await waitPhase('world', 'e2e-b', ['Captured', 'Failed', 'Refused']), 'Captured');
    const w = await json(['get', 'world', 'e2e-b']);
    assert.equal(w.status.nodeName, node);
  });

  it("refuses a node-agent's token writing the status of a World bound to another node", async () => {
    const agents = await json<{ items: any[] }>(['get', 'pods', '-n', NS, '-l', 'app.kubernetes.io/component=node-agent']);
    const agentA = agents.items.find((x) => x.spec.nodeName === nodeA());
    assert.ok(agentA, `a node-agent pod on ${nodeA()}`);
    const sa = agentA.spec.serviceAccountName as string;
    const token = (await kubectlMust(p, ['create', 'token', sa, '-n', NS, '--bound-object-kind', 'Pod', '--bound-object-name', agentA.metadata.name, '--duration', '10m'])).trim();
    const patch = { status: { message: 'written by the e2e test' } };
    const worldStatus = (name: string) => `/apis/worldline.dev/v1alpha1/namespaces/default/worlds/${name}/status`;
    const other = await patchAs(p, token, worldStatus('e2e-b'), patch);
    assert.equal(other.status, 403, `the patch of another node's World must be refused: ${other.body}`);
    assert.match(other.body, /ValidatingAdmissionPolicy/, other.body);
    assert.match(other.body, new RegExp(nodeB()), 'the refusal names the node the World is bound to');
    const own = await patchAs(p, token, worldStatus('e2e-hello'), patch);
    assert.equal(own.status, 200, `its own node's World: ${own.body}`);
  });

  it('refuses a user with only worldline-view creating a World, and lets them read', async () => {
    await kubectlMust(p, ['create', 'clusterrolebinding', 'e2e-viewer', '--clusterrole', 'worldline-view', '--user', 'e2e-viewer', '--dry-run=client', '-o', 'yaml'])
      .then((y) => kubectlMust(p, ['apply', '-f', '-'], y));
    const list = await k(['--as', 'e2e-viewer', 'get', 'worlds', '-n', 'default']);
    assert.equal(list.code, 0, list.stderr);
    assert.match(list.stdout, /e2e-hello/);
    const create = await k(['--as', 'e2e-viewer', 'apply', '-f', '-'], worldYaml('e2e-viewer-world', ROOT_A, 'true'));
    assert.notEqual(create.code, 0);
    assert.match(create.stderr, /forbidden/i);
    // Aggregation: Kubernetes' own view and edit roles carry worldline-view and worldline-edit.
    assert.equal((await k(['auth', 'can-i', 'list', 'worlds.worldline.dev', '-n', 'default', '--as', 'e2e-plain', '--as-group', 'e2e-viewers'])).stdout.trim(), 'no');
    await kubectlMust(p, ['create', 'rolebinding', 'e2e-view', '--clusterrole', 'view', '--group', 'e2e-viewers', '-n', 'default']);
    await kubectlMust(p, ['create', 'rolebinding', 'e2e-edit', '--clusterrole', 'edit', '--group', 'e2e-editors', '-n', 'default']);
    await waitFor('view aggregates worldline-view', async () => (await k(['auth', 'can-i', 'list', 'worlds.worldline.dev', '-n', 'default', '--as', 'e2e-plain', '--as-group', 'e2e-viewers'])).stdout.trim() === 'yes', 30_000, 1000);
    assert.equal((await k(['auth', 'can-i', 'create', 'worlds.worldline.dev', '-n', 'default', '--as', 'e2e-plain', '--as-group', 'e2e-viewers'])).stdout.trim(), 'no');
    await waitFor('edit aggregates worldline-edit', async () => (await k(['auth', 'can-i', 'create', 'collapses.worldline.dev', '-n', 'default', '--as', 'e2e-plain', '--as-group', 'e2e-editors'])).stdout.trim() === 'yes', 30_000, 1000);
  });

  it('keeps a World running while its node-agent pod is replaced: the new pod re-attaches and records its real exit', async () => {
    const node = nodeA();
    const script = 'echo started; sleep 30; echo survived > SURVIVED; echo finished; exit 0';
    await kubectlMust(p, ['apply', '-f', '-'], worldYaml('e2e-survivor', ROOT_A, script));
    assert.equal(await waitPhase('world', 'e2e-survivor', ['Running', 'Captured', 'Failed', 'Refused'], 120_000), 'Running');
    const agents = await json<{ items: any[] }>(['get', 'pods', '-n', NS, '-l', 'app.kubernetes.io/component=node-agent', '--field-selector', `spec.nodeName=${node}`]);
    const old = agents.items[0]?.metadata?.name as string | undefined;
    assert.ok(old && agents.items.length === 1, `one node-agent pod on ${node}`);
    // A graceful delete (SIGTERM: the agent detaches), as a DaemonSet rollout does it.
    await kubectlMust(p, ['delete', 'pod', old, '-n', NS, '--wait', '--timeout', '120s']);
    const replaced = await waitFor(`a new node-agent pod Ready on ${node}`, async () => {
      const now = await json<{ items: any[] }>(['get', 'pods', '-n', NS, '-l', 'app.kubernetes.io/component=node-agent', '--field-selector', `spec.nodeName=${node}`]);
      return now.items.find((x) => x.metadata.name !== old && !x.metadata.deletionTimestamp && x.status?.conditions?.some((c: any) => c.type === 'Ready' && c.status === 'True'));
    }, 180_000, 2000);
    assert.notEqual(replaced.metadata.name, old);
    assert.equal(await waitPhase('world', 'e2e-survivor', ['Captured', 'Failed', 'Refused'], 180_000), 'Captured');
    const w = await json(['get', 'world', 'e2e-survivor']);
    assert.equal(w.status.exit.code, 0, JSON.stringify(w.status.exit));
    assert.equal(w.status.candidate.added, 1, 'the file written after the pod was replaced is captured');
    // Its whole output, both lines, in the log on the node (written by its supervisor, not the agent).
    const log = await inNode(node, ['cat', `/var/lib/worldline/worlds/${w.metadata.uid as string}.output.log`]);
    assert.match(log, /^started\nfinished\n$/);
  });

  it('rolls the pods on helm upgrade with a changed value, and the API keeps working', async () => {
    const before = await json<{ items: any[] }>(['get', 'pods', '-n', NS]);
    const oldNames = new Set(before.items.map((x) => x.metadata.name as string));
    await helmIn(p, ['upgrade', RELEASE, join(repo, 'charts/worldline'), '-n', NS, '--reuse-values', '--set', 'logLevel=debug', '--wait', '--timeout', '6m']);
    await waitFor('every worldline pod replaced', async () => {
      const now = await json<{ items: any[] }>(['get', 'pods', '-n', NS]);
      const live = now.items.filter((x) => !x.metadata.deletionTimestamp);
      return live.length >= 4 && live.every((x) => !oldNames.has(x.metadata.name)) && live.every((x) => x.status?.conditions?.some((c: any) => c.type === 'Ready' && c.status === 'True'));
    }, 300_000, 2000);
    await kubectlMust(p, ['apply', '-f', '-'], worldYaml('e2e-after-upgrade', ROOT_A, 'echo after-upgrade > NOTE'));
    assert.equal(await waitPhase('world', 'e2e-after-upgrade', ['Captured', 'Failed', 'Refused']), 'Captured');
  });

  it('leaves no World mounted and no worldline process on either node after helm uninstall', async () => {
    for (const kind of ['collapses', 'checks', 'worlds']) await kubectlMust(p, ['delete', kind, '--all', '-n', 'default', '--wait', '--timeout', '180s']);
    await kubectlMust(p, ['delete', 'roots', '--all', '--wait', '--timeout', '180s']);
    await helmIn(p, ['uninstall', RELEASE, '-n', NS, '--wait', '--timeout', '5m']);
    for (const node of p.nodes) {
      await waitFor(`no worldline process on ${node}`, async () => {
        const procs = await nodeProcesses(node);
        return !procs.some((l) => /node-agent\/main\.js|controller\/main\.js/.test(l));
      }, 120_000, 2000);
      const mounts = (await inNode(node, ['cat', '/proc/self/mountinfo'])).split('\n');
      const worldMounts = mounts.filter((l) => / \/var\/lib\/worldline\/\S/.test(l));
      assert.deepEqual(worldMounts, [], `mounts left below the store on ${node}`);
    }
  });
});
