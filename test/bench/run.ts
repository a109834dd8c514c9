// npm run bench — runs every benchmark and prints a table. Not a test: nothing here asserts a time.
//   --only controller,fork,capture,admission   which benchmarks (default: all)
//   --worlds N                        Worlds for the controller benchmark (default 1000)
//   --sizes 1000,10000,100000         root sizes in files for fork and capture
//   --reps N                          rounds per size (default 5, 3 from 100k files up); fork runs 3 worlds a round
//   --dir /var/tmp                    where the scratch store and trees go
//   --admission-samples N             admit() calls per level for the admission benchmark (default 2000)
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { benchAdmission } from './admission.bench.js';
import { benchController } from './controller-throughput.bench.js';
import { generateGitRepo } from './tree-fixtures.js';
import { captureResult, captureRound, noCaptureSamples, type CaptureSamples } from './world-capture.bench.js';
import { openWorldEnv, TREE_OWNER, type WorldEnv } from './world-env.js';
import { FORKS_PER_ROUND, forkResult, forkRound, noForkSamples, type ForkSamples, type ForkTarget } from './world-fork.bench.js';

const { values } = parseArgs({
  options: {
    only: { type: 'string', default: 'controller,fork,capture,admission' },
    worlds: { type: 'string', default: '1000' },
    sizes: { type: 'string', default: '1000,10000,100000' },
    reps: { type: 'string' },
    dir: { type: 'string', default: '/var/tmp' },
    'admission-samples': { type: 'string', default: '2000' },
  },
});

const BENCHES = ['controller', 'fork', 'capture', 'admission'] as const;
type Bench = (typeof BENCHES)[number];

function parseList(flag: string, raw: string): string[] {
  const items = raw.split(',').map((s) => s.trim()).filter(Boolean);
  if (items.length === 0) throw new Error(`--${flag} is empty`);
  return items;
}

function positiveInt(flag: string, raw: string): number {
  const n = Number(raw);
  if (!Number.isInteger(n) || n <= 0) throw new Error(`--${flag}: "${raw}" is not a positive integer`);
  return n;
}

const only = new Set(parseList('only', values.only).map((b) => {
  if (!(BENCHES as readonly string[]).includes(b)) throw new Error(`--only: unknown benchmark "${b}" (have ${BENCHES.join(', ')})`);
  return b as Bench;
}));
const sizes = parseList('sizes', values.sizes).map((s) => positiveInt('sizes', s));
const repsFor = (files: number): number => (values.reps !== undefined ? positiveInt('reps', values.reps) : files >= 100_000 ? 3 : 5);

async function controller(): Promise<void> {
  const n = Number(values.worlds);
  console.log(`controller: ${n} Worlds created with a raw API client (32 in flight) vs. all of them carrying controller status`);
  const r = await benchController(n);
  console.table([
    { measure: 'create only (raw API writes)', seconds: r.createSeconds.toFixed(2), 'per world (ms)': ((r.createSeconds * 1000) / n).toFixed(2) },
    { measure: 'create → every status written', seconds: r.allStatusSeconds.toFixed(2), 'per world (ms)': ((r.allStatusSeconds * 1000) / n).toFixed(2) },
  ]);
  console.log(`ratio (status / create): ${r.ratio.toFixed(2)}×   controller peak RSS: ${r.controllerPeakRssMiB.toFixed(1)} MiB`);
}

const ms = (x: number): string => x.toFixed(x < 10 ? 2 : 1);
const times = (x: number): string => `${x.toFixed(2)}×`;
const verdict = (met: boolean): string => (met ? 'target met' : 'target NOT met');

async function worlds(env: WorldEnv): Promise<void> {
  const doFork = only.has('fork');
  const doCapture = only.has('capture');
  console.log(`worlds: ${[doFork && 'fork', doCapture && 'capture'].filter(Boolean).join(' + ')} on generated roots of ${sizes.join(', ')} files; scratch store in ${env.dir}`);
  const targets: (ForkTarget & { fork: ForkSamples; capture: CaptureSamples })[] = [];
  for (const files of sizes) {
    const root = `bench-${files}`;
    let t = performance.now();
    await env.adopt(root, files);
    const adoptS = (performance.now() - t) / 1000;
    let repo = '';
    let gitS = 0;
    if (doFork) {
      t = performance.now();
      repo = join(env.dir, 'git', root);
      generateGitRepo(repo, files, TREE_OWNER);
      gitS = (performance.now() - t) / 1000;
    }
    console.log(`  ${files} files: generated + adopted in ${adoptS.toFixed(1)} s${doFork ? `, generated + committed to git in ${gitS.toFixed(1)} s` : ''}; ${repsFor(files)} rounds`);
    targets.push({ files, root, repo, fork: noForkSamples(), capture: noCaptureSamples() });
  }
  await env.run(await env.spec(targets[0]!.root, 'warmup', ['/bin/true'])); // the process's first sandbox spawn, not measured
  // Rounds interleave the sizes, so a busy moment of the machine does not fall on one size only.
  const rounds = Math.max(...sizes.map(repsFor));
  for (let round = 0; round < rounds; round++) {
    for (const t of targets) {
      if (round >= repsFor(t.files)) continue;
      if (doFork) await forkRound(env, t, t.fork);
      if (doCapture) await captureRound(env, t.root, t.files, t.capture);
    }
  }
  const small = sizes.reduce((a, b) => Math.min(a, b));
  const large = sizes.reduce((a, b) => Math.max(a, b));

  if (doFork) {
    const forks = targets.map((t) => forkResult(t.files, t.fork));
    console.log(`\nfork latency (startWorldRun → workload started, /bin/true; ${FORKS_PER_ROUND} forks per round), medians in ms`);
    console.table(forks.map((r) => ({
      files: r.files,
      'forks / copies': `${r.forks} / ${r.rounds}`,
      'admit: buildRunSpec': ms(r.admitMs),
      fork: ms(r.forkMs),
      'cp -a': ms(r.cpMs),
      'git worktree add': ms(r.worktreeMs),
      'cp -a / fork': times(r.cpMs / r.forkMs),
      'worktree / fork': times(r.worktreeMs / r.forkMs),
    })));
    const a = forks.find((r) => r.files === small)!;
    const b = forks.find((r) => r.files === large)!;
    if (a !== b) {
      const growth = b.forkMs / a.forkMs;
      console.log(`fork ${large}/${small} files: ${times(growth)} (target ≤ 1.5×: ${verdict(growth <= 1.5)})`);
    }
    const vsGit = b.worktreeMs / b.forkMs;
    console.log(`git worktree add / fork at ${large} files: ${times(vsGit)} (target ≥ 20×: ${verdict(vsGit >= 20)})`);
  }
  if (doCapture) {
    const captures = targets.map((t) => captureResult(t.files, t.capture));
    console.log('\ncapture of a 10-file change (exited → captured; its parts timed again on the same upper layer), medians in ms');
    console.table(captures.map((r) => ({
      files: r.files,
      runs: r.runs,
      capture: ms(r.captureMs),
      'base index': ms(r.baseIndexMs),
      captureLayer: ms(r.layerMs),
      storeCandidate: ms(r.storeMs),
      'sha256sum 10 files': ms(r.sha256sumMs),
      'hash 10 in-process': ms(r.hashInProcessMs),
      'capture / sha256sum': times(r.captureMs / r.sha256sumMs),
    })));
    for (const r of captures) {
      const ratio = r.captureMs / r.sha256sumMs;
      console.log(`capture / sha256sum at ${r.files} files: ${times(ratio)} (target ≤ 2×: ${verdict(ratio <= 2)})`);
    }
  }
}

async function admission(): Promise<void> {
  const samples = positiveInt('admission-samples', values['admission-samples']);
  console.log(`admission: AdmissionAuthority.admit() on a node store in ${values.dir}, ${samples} admits per level (each released again), large ceilings; µs`);
  const rows = await benchAdmission({ dir: values.dir, samples });
  const us = (x: number): string => x.toFixed(x < 100 ? 1 : 0);
  console.table(rows.map((r) => ({
    'live reservations': r.live,
    'node observed': r.observe === 'proc' ? 'from /proc' : 'fixed',
    'admit median': us(r.admitMedianUs),
    'admit p99': us(r.admitP99Us),
    'release median': us(r.releaseMedianUs),
  })));
}

async function main(): Promise<void> {
  if (only.has('controller')) await controller();
  if (only.has('admission')) {
    if (only.has('controller')) console.log('');
    await admission();
  }
  if (!only.has('fork') && !only.has('capture')) return;
  if (only.has('controller') || only.has('admission')) console.log('');
  const env = await openWorldEnv(values.dir);
  const onSignal = (sig: NodeJS.Signals): void => {
    env.cleanup();
    process.exit(sig === 'SIGINT' ? 130 : 143);
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    await worlds(env);
  } finally {
    env.cleanup();
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
