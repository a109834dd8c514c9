// The controller against a real kube-apiserver + etcd: binding, conditions and phases, SSA field
// ownership shared with the node-agent, dependents and deletion, events, metrics, restart.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startControlPlane, type ControlPlane } from '../../scripts/controlplane/harness.js';
import { startController, type ControllerProcess } from '../support/controller-process.js';
import { condition, getJson, kc, waitFor } from '../support/wait.js';

const NS = 'ctl-test';

function rootYaml(name: string, node: string, path: string): string {
  return `apiVersion: worldline.dev/v1alpha1\nkind: Root\nmetadata: {name: ${name}}\nspec: {nodeName: ${node}, path: ${path}}\n`;
}
function worldYaml(name: string, roots: string[]): string {
  return `apiVersion: worldline.dev/v1alpha1\nkind: World\nmetadata: {name: ${name}, namespace: ${NS}}\nspec:\n  roots: [${roots.join(', ')}]\n  agent: {command: [/bin/sh, -c, "echo hi"]}\n`;
}
/** Writes Root status as the node-agent would: server-side apply under its own field manager. */
async function nodeAgentMarksRoot(cp: ControlPlane, name: string, phase: string): Promise<void> {
  const body = `apiVersion: worldline.dev/v1alpha1\nkind: Root\nmetadata: {name: ${name}}\nstatus: {phase: ${phase}, generation: 1, digest: "sha256:${'a'.repeat(64)}"}\n`;
  await kc(cp, ['apply', '--server-side', '--field-manager=worldline-node-agent', '--force-conflicts', '--subresource=status', '-f', '-'], body);
}

/** World reconciles of any result (a bound World waiting for its node-agent ends in a requeue). */
function worldReconciles(metrics: string): number {
  let n = 0;
  for (const m of metrics.matchAll(/^worldline_reconcile_total\{[^}]*kind="World"[^}]*\} (\d+)/gm)) n += Number(m[1]);
  return n;
}

describe('controller on a real control plane', () => {
  let cp: ControlPlane;
  let ctl: ControllerProcess;

  before(async () => {
    cp = await startControlPlane({ crdDir: 'crds' });
    await kc(cp, ['create', 'namespace', 'worldline-system']);
    await kc(cp, ['create', 'namespace', NS]);
    ctl = await startController({ kubeconfig: cp.kubeconfigPath, identity: 'ctl-a' });
  });
  after(async () => {
    await ctl?.kill('SIGKILL');
    await cp?.stop();
  });

  test('a World naming a missing Root is Pending with Accepted=False RootNotFound', async () => {
    await kc(cp, ['apply', '-f', '-'], worldYaml('orphan', ['nope']));
    const w = await waitFor('orphan world status', async () => {
      const o = await getJson(cp, ['get', 'world', 'orphan', '-n', NS]);
      return condition(o, 'Accepted') ? o : undefined;
    });
    assert.equal(w.status.phase, 'Pending');
    assert.equal(w.status.reason, 'ROOT_NOT_FOUND');
    assert.equal(condition(w, 'Accepted')?.reason, 'RootNotFound');
    assert.equal(condition(w, 'Accepted')?.observedGeneration, w.metadata.generation);
    assert.match(condition(w, 'Accepted')?.message ?? '', /"nope"/);
  });

  test('Roots on different nodes refuse the World by name', async () => {
    await kc(cp, ['apply', '-f', '-'], rootYaml('split-a', 'node-a', '/srv/split-a') + '---\n' + rootYaml('split-b', 'node-b', '/srv/split-b'));
    await nodeAgentMarksRoot(cp, 'split-a', 'Ready');
    await nodeAgentMarksRoot(cp, 'split-b', 'Ready');
    await kc(cp, ['apply', '-f', '-'], worldYaml('split', ['split-a', 'split-b']));
    const w = await waitFor('split world refused', async () => {
      const o = await getJson(cp, ['get', 'world', 'split', '-n', NS]);
      return o?.status?.phase === 'Refused' ? o : undefined;
    });
    assert.equal(w.status.reason, 'ROOTS_ON_DIFFERENT_NODES');
    assert.equal(condition(w, 'Accepted')?.reason, 'RootsOnDifferentNodes');
    assert.equal(w.status.nodeName, undefined);
  });

  test('Ready Roots bind the World to their node; without a node-agent it waits (WaitingForNodeAgent)', async () => {
    await kc(cp, ['apply', '-f', '-'], rootYaml('repo', 'node-1', '/srv/repo'));
    await kc(cp, ['apply', '-f', '-'], worldYaml('bound', ['repo']));
    const pending = await waitFor('RootNotReady', async () => {
      const o = await getJson(cp, ['get', 'world', 'bound', '-n', NS]);
      return o?.status?.reason === 'ROOT_NOT_READY' ? o : undefined;
    });
    assert.equal(pending.status.phase, 'Pending');
    await nodeAgentMarksRoot(cp, 'repo', 'Ready');
    const w = await waitFor('bound world', async () => {
      const o = await getJson(cp, ['get', 'world', 'bound', '-n', NS]);
      return o?.status?.nodeName ? o : undefined;
    });
    assert.equal(w.status.nodeName, 'node-1');
    assert.equal(w.status.phase, 'Pending');
    assert.equal(w.status.reason, 'WAITING_FOR_NODE_AGENT');
    assert.equal(condition(w, 'Ready')?.reason, 'WaitingForNodeAgent');
    const labelled = await waitFor('finalizer and node label', async () => {
      const o = await getJson(cp, ['get', 'world', 'bound', '-n', NS]);
      return o?.metadata?.finalizers?.includes('worldline.dev/node-cleanup') && o.metadata.labels?.['worldline.dev/node'] === 'node-1' ? o : undefined;
    });
    assert.ok(labelled);
    // The node binding is selectable by field, for node-agents that watch only their own node.
    const sel = await kc(cp, ['get', 'worlds', '-n', NS, '--field-selector', 'status.nodeName=node-1', '-o', 'name']);
    assert.equal(sel.trim(), 'world.worldline.dev/bound');
    // Events record the transition.
    const events = await waitFor('Bound event', async () => {
      const out = await kc(cp, ['get', 'events', '-n', NS, '-o', 'json']);
      const items = (JSON.parse(out) as { items: any[] }).items.filter((e) => (e.regarding ?? e.involvedObject)?.name === 'bound');
      return items.some((e) => e.reason === 'Bound') ? items : undefined;
    });
    assert.ok(events.length > 0);
  });

  test('status written by the controller and the node-agent (SSA) does not clobber each other', async () => {
    const body = `apiVersion: worldline.dev/v1alpha1\nkind: World\nmetadata: {name: bound, namespace: ${NS}}\nstatus:\n  base: [{root: repo, generation: 1, digest: "sha256:${'b'.repeat(64)}"}]\n  conditions:\n  - {type: Admitted, status: "True", reason: ADMITTED, message: "fits", lastTransitionTime: "2026-11-30T10:00:00Z"}\n`;
    await kc(cp, ['apply', '--server-side', '--field-manager=worldline-node-agent', '--subresource=status', '-f', '-'], body);
    // Make the controller reconcile again (a label change is an update event) and wait for its pass.
    await kc(cp, ['label', 'world', 'bound', '-n', NS, 'touch=1', '--overwrite']);
    const r0 = worldReconciles(await ctl.metrics());
    await kc(cp, ['label', 'world', 'bound', '-n', NS, 'touch=2', '--overwrite']);
    await waitFor('another World reconcile', async () => worldReconciles(await ctl.metrics()) > r0);
    const w = await getJson(cp, ['get', 'world', 'bound', '-n', NS, '--show-managed-fields']);
    assert.equal(condition(w, 'Admitted')?.reason, 'ADMITTED');
    assert.equal(condition(w, 'Accepted')?.status, 'True');
    assert.equal(w?.status.base[0].root, 'repo');
    assert.equal(w?.status.nodeName, 'node-1');
    const managers = new Set((w?.metadata.managedFields as any[]).filter((m) => m.subresource === 'status').map((m) => m.manager));
    assert.ok(managers.has('worldline-controller'));
    assert.ok(managers.has('worldline-node-agent'));
  });

  test('Checks and Collapses name their World; a missing one is a clear condition; deletion follows the World', async () => {
    const check = `apiVersion: worldline.dev/v1alpha1\nkind: Check\nmetadata: {name: chk, namespace: ${NS}}\nspec: {worldRef: later, name: unit}\n`;
    const col = `apiVersion: worldline.dev/v1alpha1\nkind: Collapse\nmetadata: {name: col, namespace: ${NS}}\nspec: {worldRef: later, mode: Candidate}\n`;
    await kc(cp, ['apply', '-f', '-'], check + '---\n' + col);
    for (const kind of ['check', 'collapse']) {
      const name = kind === 'check' ? 'chk' : 'col';
      const o = await waitFor(`${kind} WorldFound=False`, async () => {
        const x = await getJson(cp, ['get', kind, name, '-n', NS]);
        return condition(x, 'WorldFound')?.status === 'False' ? x : undefined;
      });
      assert.equal(condition(o, 'WorldFound')?.reason, 'WorldNotFound');
      assert.match(condition(o, 'WorldFound')?.message ?? '', /"later"/);
    }
    await kc(cp, ['apply', '-f', '-'], worldYaml('later', ['repo']));
    const w = await waitFor('later bound', async () => {
      const x = await getJson(cp, ['get', 'world', 'later', '-n', NS]);
      return x?.status?.nodeName && x.metadata.finalizers?.length ? x : undefined;
    });
    const c = await waitFor('check owned by world', async () => {
      const x = await getJson(cp, ['get', 'check', 'chk', '-n', NS]);
      return condition(x, 'WorldFound')?.status === 'True' && x?.metadata.ownerReferences?.[0]?.uid === w.metadata.uid && x?.status.nodeName === 'node-1' ? x : undefined;
    });
    assert.equal(c.metadata.labels['worldline.dev/node'], 'node-1');
    await kc(cp, ['delete', 'world', 'later', '-n', NS, '--wait=false']);
    await waitFor('dependents deleted', async () => {
      const a = await getJson(cp, ['get', 'check', 'chk', '-n', NS]);
      const b = await getJson(cp, ['get', 'collapse', 'col', '-n', NS]);
      return !a && !b;
    });
    // The bound World is held by the node-cleanup finalizer until its node-agent releases it.
    const held = await getJson(cp, ['get', 'world', 'later', '-n', NS]);
    assert.ok(held?.metadata.deletionTimestamp);
    assert.deepEqual(held?.metadata.finalizers, ['worldline.dev/node-cleanup']);
    await kc(cp, ['patch', 'world', 'later', '-n', NS, '--type=json', '-p', '[{"op":"remove","path":"/metadata/finalizers/0"}]']);
    await waitFor('world gone', async () => !(await getJson(cp, ['get', 'world', 'later', '-n', NS])));
  });

  test('neighbours are re-decided when one arrives or leaves: overlapping Roots and rival Policies', async () => {
    const accepted = async (kind: string, name: string, want: string): Promise<any> => waitFor(`${kind} ${name} Accepted ${want}`, async () => {
      const o = await getJson(cp, ['get', kind, name]);
      return condition(o, 'Accepted')?.reason === want ? o : undefined;
    });
    await kc(cp, ['apply', '-f', '-'], rootYaml('ov-outer', 'node-ov', '/srv/ov') + '---\n' + rootYaml('ov-apart', 'node-ov', '/srv/ov-apart'));
    await accepted('root', 'ov-outer', 'RootAccepted');
    await new Promise((r) => setTimeout(r, 1100)); // a later creationTimestamp (second resolution; a tie goes by name)
    await kc(cp, ['apply', '-f', '-'], rootYaml('ov-inner', 'node-ov', '/srv/ov/inner'));
    const inner = await accepted('root', 'ov-inner', 'RootPathConflict');
    assert.match(condition(inner, 'Accepted')?.message ?? '', /"ov-outer"/);
    assert.equal(condition(await accepted('root', 'ov-apart', 'RootAccepted'), 'Accepted')?.status, 'True', '/srv/ov-apart does not overlap /srv/ov');
    // The older Root leaves: the one it blocked is accepted with no event of its own.
    await kc(cp, ['delete', 'root', 'ov-outer']);
    await accepted('root', 'ov-inner', 'RootAccepted');

    const policy = (name: string, roots: string[]): string => `apiVersion: worldline.dev/v1alpha1\nkind: Policy\nmetadata: {name: ${name}}\nspec:\n  roots: [${roots.join(', ')}]\n  checks: [{name: unit, command: [/bin/true, test.sh]}]\n`;
    await kc(cp, ['apply', '-f', '-'], policy('pol-early', ['ov-apart', 'ov-later']));
    await accepted('policy', 'pol-early', 'PolicyRootNotFound');
    // Its missing Root arrives: the Policy is re-decided.
    await kc(cp, ['apply', '-f', '-'], rootYaml('ov-later', 'node-ov', '/srv/ov-later'));
    await accepted('policy', 'pol-early', 'PolicyAccepted');
    await new Promise((r) => setTimeout(r, 1100)); // a later creationTimestamp (second resolution)
    await kc(cp, ['apply', '-f', '-'], policy('pol-late', ['ov-later']));
    const late = await accepted('policy', 'pol-late', 'PolicyRootConflict');
    assert.match(condition(late, 'Accepted')?.message ?? '', /"pol-early"/);
    // The older Policy stops naming that Root: the younger one governs it now.
    await kc(cp, ['apply', '-f', '-'], policy('pol-early', ['ov-apart']));
    await accepted('policy', 'pol-late', 'PolicyAccepted');
    assert.equal(condition(await getJson(cp, ['get', 'policy', 'pol-early']), 'Accepted')?.reason, 'PolicyAccepted');
  });

  test('a node-agent\'s Lease wakes its Worlds when it arrives, and again when it runs out with no event at all', async () => {
    await kc(cp, ['apply', '-f', '-'], rootYaml('lease-root', 'node-lease', '/srv/lease'));
    await nodeAgentMarksRoot(cp, 'lease-root', 'Ready');
    await kc(cp, ['apply', '-f', '-'], worldYaml('lease-w', ['lease-root']));
    const reason = async (want: string, ms?: number): Promise<any> => waitFor(`lease-w ${want}`, async () => {
      const o = await getJson(cp, ['get', 'world', 'lease-w', '-n', NS]);
      return o?.status?.reason === want ? o : undefined;
    }, ms);
    await reason('WAITING_FOR_NODE_AGENT');
    const renew = new Date().toISOString().replace('Z', '000Z');
    await kc(cp, ['apply', '-f', '-'], `apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata:\n  name: node-agent-node-lease\n  namespace: worldline-system\n  labels: {worldline.dev/component: node-agent, worldline.dev/node: node-lease}\nspec: {holderIdentity: test, leaseDurationSeconds: 6, renewTime: "${renew}"}\n`);
    const present = await reason('NODE_AGENT_PRESENT');
    assert.equal(condition(present, 'Ready')?.reason, 'NodeAgentPresent');
    // Nobody renews it: once it expires the World says so, though no object changed.
    const gone = await reason('WAITING_FOR_NODE_AGENT', 30_000);
    assert.match(condition(gone, 'Ready')?.message ?? '', /node-lease/);
  });

  test('an unbound World is deleted at once (no finalizer to release)', async () => {
    await kc(cp, ['delete', 'world', 'orphan', '-n', NS, '--wait=true', '--timeout=20s']);
    assert.equal(await getJson(cp, ['get', 'world', 'orphan', '-n', NS]), undefined);
  });

  test('metrics: reconcile counters and durations per kind, and process metrics', async () => {
    const m = await ctl.metrics();
    assert.match(m, /worldline_reconcile_total\{kind="World",result="success"\} [1-9]/);
    assert.match(m, /worldline_reconcile_duration_seconds_bucket\{le="[^"]+",kind="World"\}|worldline_reconcile_duration_seconds_bucket\{kind="World",le=/);
    assert.match(m, /process_resident_memory_bytes/);
    const health = await fetch(`${ctl.metricsUrl}/healthz`);
    assert.equal(health.status, 200);
    const ready = await fetch(`${ctl.metricsUrl}/readyz`);
    assert.equal(ready.status, 200);
  });

  test('a restarted controller resumes: work created while it was down is reconciled', async () => {
    const code = await ctl.kill('SIGTERM');
    assert.equal(code, 0, 'graceful shutdown exits 0');
    await kc(cp, ['apply', '-f', '-'], worldYaml('while-down', ['repo']));
    await new Promise((r) => setTimeout(r, 500));
    const untouched = await getJson(cp, ['get', 'world', 'while-down', '-n', NS]);
    assert.equal(untouched?.status, undefined);
    ctl = await startController({ kubeconfig: cp.kubeconfigPath, identity: 'ctl-a2' });
    const w = await waitFor('while-down bound', async () => {
      const o = await getJson(cp, ['get', 'world', 'while-down', '-n', NS]);
      return o?.status?.nodeName ? o : undefined;
    }, 45_000);
    assert.equal(w.status.reason, 'WAITING_FOR_NODE_AGENT');
  });
});
