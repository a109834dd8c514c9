// Checks on candidates, end to end on the kernel (root): a Root adopted into a temporary store, stored
// candidates built by hand, the check's view (staged PRIME verifiers over the candidate's delta over the
// base generation, all idmapped) and the check itself run in the world sandbox.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { chownSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { sha256Hex } from '../../core/digest.js';
import { boundVerifierPaths, qualifiedVerifierPath, requirementHash, verifierIdentity, type CheckDefinition } from '../../core/evidence/requirement.js';
import type { ManifestEntry } from '../../core/manifest.js';
import * as native from '../../native/index.js';
import { verifierModifiedByCandidate } from '../../core/evidence/verifier-delta.js';
import { mountCheckViews, prepareCheckLayers, type CheckRoot } from '../../node-agent/checks/materialize.js';
import { readCandidate } from '../../node-agent/store/candidates.js';
import { runCheck, CHECK_ENV_BASE, type CheckResult } from '../../node-agent/checks/run-check.js';
import { detectCgroups } from '../../node-agent/sandbox/cgroup.js';
import { adoptRoot } from '../../node-agent/store/adopt-root.js';
import { openStore, type Store } from '../../node-agent/store/open-store.js';
import { checkRouting } from '../../node-agent/store/routing.js';
import { walkTreeSync } from '../../node-agent/store/walk-tree-sync.js';
import { storeCandidate, type RootChange } from '../../node-agent/store/candidates.js';
import { mountsUnder } from '../../node-agent/store/mount-table.js';
import { removeWorldDir, unmountLayers } from '../../node-agent/sandbox/rootfs.js';
import { worldPaths } from '../../node-agent/sandbox/run-paths.js';
import { requireRoot } from '../support/require-root.js';

requireRoot('check runs');
const OWNER = 1000;
const ID_BASE = 2 ** 30 + 65536 * 11;
const ID_COUNT = 65536;

const dir = mkdtempSync(join('/var/tmp', 'wl-check-'));
let store: Store | undefined;
after(() => {
  for (let pass = 0; pass < 3 && mountsUnder(dir).length > 0; pass++) {
    for (const m of mountsUnder(dir)) {
      try {
        native.umount2(m, native.MNT_DETACH);
      } catch {
        /* next pass */
      }
    }
  }
  store?.close();
  if (mountsUnder(dir).length === 0) rmSync(dir, { recursive: true, force: true });
});

const CHECK: CheckDefinition = { name: 'verify', command: ['sh', 'checks/verify.sh'], verifiers: [], timeout: '1m', profile: 'legacy' };

interface Fixture {
  store: Store;
  root: { name: string; rootKey: string; generation: number; digest: string; payload: string };
  bound: string[];
  declared: string;
  requirement: string;
}

let fixture: Fixture | undefined;

async function setup(): Promise<Fixture> {
  if (fixture) return fixture;
  store = (await openStore({ dir: join(dir, 'store') })).store;
  const host = join(dir, 'roots', 'proj');
  mkdirSync(join(host, 'checks'), { recursive: true });
  mkdirSync(join(host, 'old', 'deep'), { recursive: true });
  writeFileSync(join(host, 'README.md'), 'ok\n');
  writeFileSync(join(host, 'checks', 'verify.sh'), 'grep -q ok README.md\n');
  writeFileSync(join(host, 'gone.txt'), 'bye\n');
  writeFileSync(join(host, 'keep.txt'), 'stay\n');
  writeFileSync(join(host, 'old', 'deep', 'x'), 'x\n');
  for (const p of ['', 'checks', 'checks/verify.sh', 'README.md', 'gone.txt', 'keep.txt', 'old', 'old/deep', 'old/deep/x']) chownSync(join(host, p), OWNER, OWNER);
  await adoptRoot(store, { name: 'proj', hostPath: host });
  const r = await checkRouting(store, 'proj');
  const manifest = walkTreeSync(r.payloadPath).manifest;
  const bound = boundVerifierPaths(CHECK, manifest.entries);
  const declared = verifierIdentity(
    bound.map((p) => ({ path: qualifiedVerifierPath('proj', p), sha256: manifest.entries.find((e) => e.path === p)!.sha256! })),
  );
  fixture = {
    store,
    root: { name: 'proj', rootKey: r.root.rootKey, generation: r.root.generation, digest: r.root.digest, payload: r.payloadPath },
    bound,
    declared,
    requirement: requirementHash({ checks: [CHECK], verifierIdentity: declared, engineVersion: 'test', isolation: { minimumLevel: 'os-sandboxed' }, resources: null }),
  };
  return fixture;
}

let seq = 0;

/** Stores a candidate for Root proj that writes `files` (path → content) and deletes `deleted`. */
async function candidate(f: Fixture, files: Record<string, string>, deleted: string[]): Promise<string> {
  const upper = join(dir, `upper-${seq++}`);
  mkdirSync(upper);
  const upsert: ManifestEntry[] = [];
  for (const [p, content] of Object.entries(files)) {
    // New parent directories are changes of the candidate too (as capture reports them).
    for (let a = p.slice(0, Math.max(0, p.lastIndexOf('/'))); a !== ''; a = a.slice(0, Math.max(0, a.lastIndexOf('/')))) {
      if (!existsSync(join(f.root.payload, a)) && !upsert.some((e) => e.path === a)) {
        mkdirSync(join(upper, a), { recursive: true });
        upsert.push({ path: a, type: 'dir', mode: 0o755, uid: OWNER, gid: OWNER });
      }
    }
    mkdirSync(join(upper, p, '..'), { recursive: true });
    writeFileSync(join(upper, p), content);
    upsert.push({ path: p, type: 'file', mode: 0o644, uid: OWNER, gid: OWNER, size: Buffer.byteLength(content), sha256: sha256Hex(content) });
  }
  upsert.sort((a, b) => (a.path < b.path ? -1 : 1));
  const change: RootChange = {
    root: 'proj',
    rootKey: f.root.rootKey,
    baseGeneration: f.root.generation,
    baseDigest: f.root.digest,
    upperDir: upper,
    capture: { upsert, deleted: [...deleted].sort(), rootChanged: false, added: 0, modified: upsert.length, upperFiles: Object.keys(files), problems: [] },
  };
  const c = await storeCandidate(f.store.layout.candidates, [change]);
  return c.dir;
}

function checkRoots(f: Fixture, candidateDir: string, primePayload = f.root.payload): CheckRoot[] {
  const { deltas } = readCandidate(candidateDir);
  return [{ name: 'proj', rootKey: f.root.rootKey, path: '/work/proj', basePayload: f.root.payload, primePayload, bound: f.bound, delta: deltas.get(f.root.rootKey) ?? null }];
}

async function check(f: Fixture, candidateDir: string, argv = CHECK.command): Promise<CheckResult> {
  const runId = `c${seq++}`;
  const result = await runCheck({
    runId,
    checksDir: join(dir, 'checks'),
    checkName: CHECK.name,
    argv: [...argv],
    env: [...CHECK_ENV_BASE, 'HOME=/home/check'],
    cwd: '/work/proj',
    runAsUid: OWNER,
    runAsGid: OWNER,
    home: '/home/check',
    roots: checkRoots(f, candidateDir),
    candidateDir,
    subject: readCandidate(candidateDir).digest,
    requirementHash: f.requirement,
    verifierIdentity: f.declared,
    idBase: ID_BASE,
    idCount: ID_COUNT,
    limits: { pids: 64, memoryBytes: 256 * 1024 * 1024 },
    wallTimeMs: 30_000,
    newNetwork: true,
    outputLimitBytes: 64 * 1024,
    outputFile: join(dir, `${runId}.log`),
    cgroups: detectCgroups(),
    agentNs: native.nsIds('self'),
  });
  // Nothing of the run is left mounted or on disk.
  assert.deepEqual(mountsUnder(join(dir, 'checks')), []);
  assert.equal(existsSync(join(dir, 'checks', runId)), false);
  return result;
}

function verdictOf(r: CheckResult): string {
  return r.verdict === 'REFUSED' ? `REFUSED ${r.code}: ${r.message}` : r.verdict;
}

test('the check binds checks/verify.sh from its argv', async () => {
  const f = await setup();
  assert.deepEqual(f.bound, ['checks/verify.sh']);
});

test('PASS when the candidate README says ok; the record carries the run and the executed identity equals the declared one', async () => {
  const f = await setup();
  const c = await candidate(f, { 'README.md': 'still ok\n' }, []);
  const r = await check(f, c);
  assert.equal(verdictOf(r), 'PASS');
  assert.ok(r.verdict !== 'REFUSED');
  assert.equal(r.record.check, 'verify');
  assert.equal(r.record.subject, readCandidate(c).digest);
  assert.equal(r.record.requirementHash, f.requirement);
  assert.equal(r.record.verifierIdentity, f.declared);
  assert.equal(r.record.executedVerifierIdentity, f.declared);
  assert.deepEqual(r.record.exit, { code: 0, signal: null, reason: 'Completed' });
  assert.ok(r.record.startedAt <= r.record.finishedAt);
});

test('FAIL when the candidate README does not say ok', async () => {
  const f = await setup();
  const c = await candidate(f, { 'README.md': 'bad\n' }, []);
  const r = await check(f, c);
  assert.equal(verdictOf(r), 'FAIL');
  assert.ok(r.verdict !== 'REFUSED');
  assert.equal(r.record.exit.code, 1);
  assert.equal(r.record.executedVerifierIdentity, f.declared);
});

test('a candidate that rewrites verify.sh to exit 0 still runs PRIME\'s verify.sh, and is named as modifying it', async () => {
  const f = await setup();
  const c = await candidate(f, { 'README.md': 'bad\n', 'checks/verify.sh': 'exit 0\n' }, []);
  const delta = readCandidate(c).deltas.get(f.root.rootKey)!;
  assert.deepEqual(verifierModifiedByCandidate(f.bound, delta), ['checks/verify.sh']);
  const r = await check(f, c);
  assert.equal(verdictOf(r), 'FAIL');
  assert.ok(r.verdict !== 'REFUSED');
  assert.equal(r.record.executedVerifierIdentity, f.declared);
  // A candidate that deletes the verifier is named too, and PRIME's still runs.
  const d = await candidate(f, { 'README.md': 'bad\n' }, ['checks/verify.sh']);
  assert.deepEqual(verifierModifiedByCandidate(f.bound, readCandidate(d).deltas.get(f.root.rootKey)!), ['checks/verify.sh']);
  assert.equal(verdictOf(await check(f, d)), 'FAIL');
});

test('deleted files and directories are absent in the check\'s view; everything else is the candidate\'s bytes', async () => {
  const f = await setup();
  const c = await candidate(f, { 'README.md': 'ok v2\n', 'new/file.txt': 'n\n' }, ['gone.txt', 'old', 'old/deep', 'old/deep/x']);
  // Inspect the mounted view directly.
  const paths = worldPaths(join(dir, 'views'), `v${seq++}`);
  const roots = checkRoots(f, c);
  try {
    const staged = await prepareCheckLayers(paths, roots, c);
    assert.equal(verifierIdentity(staged), f.declared);
    const [layers] = mountCheckViews(paths, roots, ID_BASE, ID_COUNT);
    const merged = layers!.merged;
    assert.deepEqual(readdirSync(merged).sort(), ['README.md', 'checks', 'keep.txt', 'new']);
    assert.equal(readFileSync(join(merged, 'README.md'), 'utf8'), 'ok v2\n');
    assert.equal(readFileSync(join(merged, 'new', 'file.txt'), 'utf8'), 'n\n');
    assert.equal(readFileSync(join(merged, 'checks', 'verify.sh'), 'utf8'), 'grep -q ok README.md\n');
    // Owners as a world sees them: PRIME's owner, shifted into the id range.
    assert.equal(statSync(join(merged, 'README.md')).uid, ID_BASE + OWNER);
    assert.equal(statSync(join(merged, 'checks', 'verify.sh')).uid, ID_BASE + OWNER);
  } finally {
    assert.deepEqual(unmountLayers(paths), []);
    removeWorldDir(paths);
  }
  // And in the sandbox.
  const r = await check(f, c, ['sh', '-c', 'test ! -e gone.txt && test ! -e old && test -e keep.txt && grep -q v2 README.md']);
  assert.equal(verdictOf(r), 'PASS');
});

test('a revalidation stages the current PRIME\'s verifier bytes, so the executed identity follows them', async () => {
  const f = await setup();
  const c = await candidate(f, { 'README.md': 'bad\n' }, []);
  const prime = join(dir, 'next-prime');
  mkdirSync(join(prime, 'checks'), { recursive: true });
  writeFileSync(join(prime, 'checks', 'verify.sh'), 'grep -q bad README.md\n');
  chownSync(join(prime, 'checks', 'verify.sh'), OWNER, OWNER);
  const paths = worldPaths(join(dir, 'views'), `v${seq++}`);
  try {
    const staged = await prepareCheckLayers(paths, checkRoots(f, c, prime), c);
    assert.deepEqual(staged, [{ path: 'proj/checks/verify.sh', sha256: sha256Hex('grep -q bad README.md\n') }]);
    assert.notEqual(verifierIdentity(staged), f.declared);
  } finally {
    removeWorldDir(paths);
  }
});
