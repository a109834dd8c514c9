// Transient errno failures on the real kernel are retried, never turned into a refusal (issue 9's bug:
// an error whose code matched /^[A-Z_]+$/ — ENOENT, EEXIST, EBUSY — was taken for a named refusal).
// - A Check whose run meets ENOENT (its base payload is briefly gone) is shown Pending CHECK_RETRYING,
//   retried by its runner with backoff, and passes once the payload is back: the real NodeChecks
//   reconciler and runner, a real store and sandbox; only the API side (informers, status, Events) is
//   in memory.
// - runCheck clears what an interrupted attempt left, and rejects on an errno (ENOTDIR) instead of
//   answering REFUSED with the errno as code.
// - A World run that meets an errno ends WORLD_SETUP_FAILED with the errno in the message.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { chownSync, existsSync, mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { CheckSchema, PolicySchema, WorldSchema, type Check, type Policy, type World } from '../../crds/index.js';
import { sha256Hex } from '../../core/digest.js';
import { systemClock } from '../../kube/clock.js';
import type { EventRecorder } from '../../kube/events.js';
import type { Informer } from '../../kube/informer.js';
import { nullLogger } from '../../kube/logger.js';
import type { ReconcileOutcome } from '../../kube/reconcile.js';
import type { RefusalWriter } from '../../kube/refusal-writer.js';
import type { StatusWriter } from '../../kube/status-writer.js';
import * as native from '../../native/index.js';
import { NodeChecks } from '../../node-agent/checks/check-reconciler.js';
import { hasEvaluation } from '../../node-agent/store/evaluation-records.js';
import { readCandidate } from '../../node-agent/store/candidates.js';
import { CHECK_ENV_BASE, runCheck } from '../../node-agent/checks/run-check.js';
import type { AgentConfig } from '../../node-agent/config.js';
import { detectCgroups } from '../../node-agent/sandbox/cgroup.js';
import { worldPaths } from '../../node-agent/sandbox/run-paths.js';
import { adoptRoot } from '../../node-agent/store/adopt-root.js';
import { storeCandidate } from '../../node-agent/store/candidates.js';
import { mountsUnder } from '../../node-agent/store/mount-table.js';
import { openStore, type Store } from '../../node-agent/store/open-store.js';
import { checkRouting } from '../../node-agent/store/routing.js';
import { startWorldRun, type WorldEvent } from '../../node-agent/worlds/run-world.js';
import { requireRoot } from '../support/require-root.js';

requireRoot('the transient-error tests (a real store, sandbox and overlay mounts)');
const OWNER = 1000;
const ID_BASE = 2 ** 30 + 65536 * 40;

const dir = mkdtempSync(join('/var/tmp', 'wl-transient-'));
let store: Store | undefined;
after(() => {
  for (const m of mountsUnder(dir).reverse()) {
    try {
      native.umount2(m, native.MNT_DETACH);
    } catch {
      /* best effort */
    }
  }
  store?.close();
  if (mountsUnder(dir).length === 0) rmSync(dir, { recursive: true, force: true });
});

interface Fixture {
  store: Store;
  rootKey: string;
  generation: number;
  digest: string;
  payload: string;
  candidateDir: string;
}

let fixture: Fixture | undefined;

/** A Root proj whose check greps README.md for "ok", adopted into a store, and a candidate that keeps it ok. */
async function setup(): Promise<Fixture> {
  if (fixture) return fixture;
  store = (await openStore({ dir: join(dir, 'store') })).store;
  const host = join(dir, 'roots', 'proj');
  mkdirSync(join(host, 'checks'), { recursive: true });
  writeFileSync(join(host, 'README.md'), 'ok\n');
  writeFileSync(join(host, 'checks', 'verify.sh'), 'grep -q ok README.md\n');
  for (const p of ['', 'checks', 'checks/verify.sh', 'README.md']) chownSync(join(host, p), OWNER, OWNER);
  await adoptRoot(store, { name: 'proj', hostPath: host });
  const r = await checkRouting(store, 'proj');
  const upper = join(dir, 'upper');
  mkdirSync(upper);
  const content = 'still ok\n';
  writeFileSync(join(upper, 'README.md'), content);
  const upsert = [{ path: 'README.md', type: 'file' as const, mode: 0o644, uid: OWNER, gid: OWNER, size: content.length, sha256: sha256Hex(content) }];
  const change = { root: 'proj', rootKey: r.root.rootKey, baseGeneration: r.root.generation, baseDigest: r.root.digest, upperDir: upper, capture: { upsert, deleted: [], rootChanged: false, added: 0, modified: 1, upperFiles: ['README.md'], problems: [] } };
  const candidate = await storeCandidate(store.layout.candidates, [change]);
  fixture = { store, rootKey: r.root.rootKey, generation: r.root.generation, digest: r.root.digest, payload: r.payloadPath, candidateDir: candidate.dir };
  return fixture;
}

// Parsed as the informer would hand it over (typed, defaults applied).
const POLICY: Policy = PolicySchema.parse({ apiVersion: 'worldline.dev/v1alpha1', kind: 'Policy', ...{
  metadata: { name: 'p' },
  spec: {
    roots: ['proj'],
    checks: [{ name: 'verify', command: ['sh', 'checks/verify.sh'], timeout: '1m' }],
    isolation: { check: { minimumLevel: 'os-sandboxed', controls: ['network-denied'] } },
  },
} });

/** NodeChecks over the real store and sandbox; the API side is in memory and records every status applied. */
function nodeChecks(f: Fixture, onStatus: (s: Record<string, unknown>) => void) {
  const world: World = WorldSchema.parse({
    apiVersion: 'worldline.dev/v1alpha1',
    kind: 'World',
    metadata: { namespace: 'ns', name: 'w', uid: '6f1d2c3b-1a2b-4c3d-8e4f-5a6b7c8d9e0f' },
    spec: { roots: ['proj'], agent: { command: ['true'] } },
    status: { phase: 'Captured', nodeName: 'n1', candidate: { digest: readCandidate(f.candidateDir).digest }, base: [{ root: 'proj', generation: f.generation, digest: f.digest }] },
  });
  const worlds = { get: (k: string) => (k === 'ns/w' ? world : undefined), list: () => [world], onAdd: () => undefined, onUpdate: () => undefined };
  const policies = { get: () => POLICY, list: () => [POLICY], onAdd: () => undefined, onUpdate: () => undefined };
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromOptions({ clusters: [{ name: 'none', server: 'http://127.0.0.1:9' }], users: [{ name: 'u' }], contexts: [{ name: 'c', cluster: 'none', user: 'u' }], currentContext: 'c' });
  const outcomes: ReconcileOutcome[] = [];
  let checks: NodeChecks | undefined = undefined;
  const status = {
    applyOwnedStatus: (_ref: unknown, obj: Check, s: Record<string, unknown>) => {
      const applied = JSON.parse(JSON.stringify(s)) as Record<string, unknown>;
      onStatus(applied);
      // As the watch would deliver it: the informer's copy carries the status just written.
      const cached = checks?.informer.get('ns/c1');
      if (cached) cached.status = { ...cached.status, ...applied };
      // No written object to hand the informer: the line above already put the status in its copy.
      return Promise.resolve(undefined);
    },
  };
  const events = { normal: () => undefined, warning: () => undefined };
  const reserve = { cpuMillis: 1000, memoryBytes: 256 * 1024 * 1024, pids: 64, wallTimeSeconds: 60, outputBytes: 64 * 1024, ephemeralStorageBytes: 64 * 1024 * 1024 };
  checks = new NodeChecks({
    kubeConfig,
    nodeName: 'n1',
    worlds: worlds as unknown as Informer<World>,
    policies: policies as unknown as Informer<Policy>,
    rootPath: () => undefined,
    store: f.store,
    config: { idBase: ID_BASE, idSlots: 2 } as AgentConfig,
    cgroups: detectCgroups(),
    agentNs: native.nsIds('self'),
    admission: { admit: () => ({ outcome: 'ADMITTED', message: 'admitted', reserve }), release: () => undefined, checkResources: () => null },
    status: status as unknown as StatusWriter,
    // Every object here is valid: a schema refusal would be a bug of the test.
    refusals: { refuse: () => Promise.reject(new Error('no schema refusal expected')) } as unknown as RefusalWriter,
    events: events as unknown as EventRecorder,
    clock: systemClock,
    logger: nullLogger,
    metrics: { observe: (_kind, result) => void outcomes.push(result) },
  });
  const check: Check = CheckSchema.parse({ apiVersion: 'worldline.dev/v1alpha1', kind: 'Check', metadata: { namespace: 'ns', name: 'c1', uid: 'check-uid-1' }, spec: { worldRef: 'w', name: 'verify', worldUID: '6f1d2c3b-1a2b-4c3d-8e4f-5a6b7c8d9e0f' }, status: { nodeName: 'n1' } });
  // The informer is never started: the Check is put in its cache as a list would put it there.
  checks.informer['cache'].set('ns/c1', check);
  return { checks, outcomes };
}

async function until(cond: () => boolean, what: string, ms = 60_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

test('a Check whose run meets ENOENT is retried with backoff and passes; it is never refused with the errno', async () => {
  const f = await setup();
  const away = `${f.payload}.away`;
  const seen: Record<string, unknown>[] = [];
  let taken = false;
  const { checks, outcomes } = nodeChecks(f, (s) => {
    seen.push(s);
    // Once the run has started, the base's payload goes away (its view was built with it in place).
    if (s.phase === 'Running' && !taken) {
      taken = true;
      native.umount2(f.payload, native.MNT_DETACH); // the payload is sealed by a read-only bind mount: lift it to move the tree
      renameSync(f.payload, away);
    }
    // The transient condition passes once the Check has shown it: the payload comes back.
    if (s.reason === 'CHECK_RETRYING' && existsSync(away)) {
      renameSync(away, f.payload);
      native.bindMount(f.payload, f.payload, { readonly: true, recursive: false, nosuid: true, nodev: true }); // sealed again
    }
  });
  checks.runner.start();
  try {
    checks.runner.enqueue('ns/c1');
    await until(() => seen.some((s) => s.phase === 'Passed' || s.phase === 'Refused'), 'a final phase');
  } finally {
    await checks.runner.stop();
    if (existsSync(away)) renameSync(away, f.payload);
  }
  const phases = seen.map((s) => [s.phase, s.reason].filter((x): x is string => typeof x === 'string').join(' '));
  assert.deepEqual(phases, ['Running', 'Pending CHECK_RETRYING', 'Running', 'Passed'], JSON.stringify(seen));
  const retrying = seen[1]!;
  assert.match(String(retrying.message), /^retrying after a transient failure: ENOENT: no such file or directory/);
  assert.equal(seen[3]!.verdict, 'PASS');
  assert.ok(!seen.some((s) => typeof s.reason === 'string' && /^E[A-Z]+$/.test(s.reason)), 'no errno reached status.reason');
  assert.deepEqual(outcomes, ['error', 'success'], 'the runner retried the failed attempt once');
  assert.equal(hasEvaluation(f.store.db, 'check-uid-1'), true, 'the passing run is recorded');
  assert.deepEqual(mountsUnder(join(f.store.dir, 'checks')), []);
});

test('runCheck clears what an interrupted attempt left and passes; an errno it meets rejects, never a REFUSED with the errno as code', async () => {
  const f = await setup();
  const runId = 'leftover';
  const { deltas } = readCandidate(f.candidateDir);
  const run = (checksDir: string) =>
    runCheck({
      runId,
      checksDir,
      checkName: 'verify',
      argv: ['sh', 'checks/verify.sh'],
      env: [...CHECK_ENV_BASE, 'HOME=/home/check'],
      cwd: '/work/proj',
      runAsUid: OWNER,
      runAsGid: OWNER,
      home: '/home/check',
      roots: [{ name: 'proj', rootKey: f.rootKey, path: '/work/proj', basePayload: f.payload, primePayload: f.payload, bound: ['checks/verify.sh'], delta: deltas.get(f.rootKey) ?? null }],
      candidateDir: f.candidateDir,
      subject: readCandidate(f.candidateDir).digest,
      requirementHash: 'sha256:' + '0'.repeat(64),
      verifierIdentity: 'sha256:' + '0'.repeat(64),
      idBase: ID_BASE,
      idCount: 65536,
      limits: { pids: 64, memoryBytes: 256 * 1024 * 1024 },
      wallTimeMs: 30_000,
      newNetwork: true,
      outputLimitBytes: 64 * 1024,
      outputFile: join(dir, `${runId}.log`),
      cgroups: detectCgroups(),
      agentNs: native.nsIds('self'),
    });
  // What an interrupted earlier attempt (an agent killed mid-check) leaves: the run's staging directory.
  // A Check re-run after an agent restart starts by clearing it.
  const checksDir = join(dir, 'checks-direct');
  mkdirSync(join(worldPaths(checksDir, runId).dir, 'staging'), { recursive: true });
  const again = await run(checksDir);
  assert.equal(again.verdict, 'PASS', JSON.stringify(again));
  assert.equal(existsSync(worldPaths(checksDir, runId).dir), false, 'the run left its directory behind');

  // An errno (the checks directory is a file: ENOTDIR) is thrown for the caller to retry, not answered.
  const notADir = join(dir, 'checks-file');
  writeFileSync(notADir, '');
  await assert.rejects(run(notADir), (e: NodeJS.ErrnoException) => {
    assert.equal(e.code, 'ENOTDIR', String(e));
    return true;
  });
});

test('a World run that meets an errno ends WORLD_SETUP_FAILED with the errno in the message', async () => {
  const worlds = join(dir, 'worlds');
  mkdirSync(worlds, { recursive: true });
  const paths = worldPaths(worlds, 'world-errno');
  // A file where the world's directory goes: mkdir answers EEXIST.
  writeFileSync(paths.dir, '');
  const events: WorldEvent[] = [];
  const run = startWorldRun(
    {
      uid: 'world-errno',
      paths,
      roots: [],
      argv: ['true'],
      env: [],
      cwd: '/',
      runAsUid: 0,
      runAsGid: 0,
      home: '/root',
      newNetwork: true,
      idBase: ID_BASE,
      idCount: 65536,
      limits: { pids: 64 },
      wallTimeMs: 10_000,
      outputLimitBytes: 1024,
      cgroups: detectCgroups(),
      agentNs: native.nsIds('self'),
      candidatesDir: join(dir, 'no-candidates'),
    },
    (e) => {
      events.push(e);
      return Promise.resolve();
    },
  );
  await run.finished;
  assert.equal(events.length, 1);
  const failed = events[0]!;
  assert.equal(failed.type, 'failed');
  assert.equal(failed.type === 'failed' && failed.code, 'WORLD_SETUP_FAILED');
  assert.match(failed.type === 'failed' ? failed.message : '', /^EEXIST: file already exists, mkdir/);
});
