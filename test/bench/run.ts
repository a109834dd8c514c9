// npm run bench — runs every benchmark and prints a table. Not a test: nothing here asserts a time.
//   --only controller,latency,fork,capture,admission,collapse,watcher,receipts,evidence,private,fleet   which benchmarks (default: all but fleet)
//   --worlds N                        Worlds for the controller benchmark (default 1000)
//   --sizes 1000,10000,100000         root sizes in files for fork, capture and collapse
//   --reps N                          rounds per size (default 5, 3 from 100k files up; collapse 10, 3 from 100k up);
//                                     fork runs 3 worlds a round on each of a size's two Roots (as adopted; stacked to MAX_STACK_DEPTH)
//   --collapse-paths stack,node       collapse on a real stack (API → Committed) and/or the node-level path alone
//   --compaction                      node-level collapse: then take each Root's stack to MAX_STACK_DEPTH and time the compacting collapse
//   --receipts N                      receipts in the ledger the receipts benchmark verifies (default 100000)
//   --receipt-appends N               receipts appended one by one, per ledger configuration (default 10000)
//   --sig-ops N                       operations per round of each raw Ed25519 rate (default 2000; 3 rounds)
//   --dir /var/tmp                    where the scratch store and trees go
//   --admission-samples N             admit() calls per level for the admission benchmark (default 2000)
//   --fleet-worlds N, --fleet-files N Worlds collapsing at once and the Root's size for fleet (default 20, 10000)
//   --watcher-files N                 files written beside a watched tree per round of the watcher benchmark (default 20000)
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { benchAdmission } from './admission.bench.js';
import { benchFleet } from './fleet.bench.js';
import { median } from './stats.js';
import { COMPACT_AT_DEPTH, MAX_STACK_DEPTH } from '../../node-agent/store/generation-stack.js';
import { noNodeCollapseSamples, nodeBackgroundCompaction, nodeCollapseResult, nodeCollapseRound, nodeCompaction, type BackgroundCompactionResult, type CompactionResult } from './collapse-node.bench.js';
import { noStackCollapseSamples, openCollapseStack, stackCollapseResult, type CollapseTarget } from './collapse.bench.js';
import { benchController, CONTROLLER_TARGETS } from './controller-throughput.bench.js';
import { deepenStack, stackOf } from './deep-stack.js';
import { benchReceipts } from './receipts.bench.js';
import { benchEvidence } from './evidence.bench.js';
import { benchPrivate } from './private.bench.js';
import { benchWorldLatency } from './world-latency.bench.js';
import { benchWatcherCost } from './prime-watcher.bench.js';
import type { CpuAccount } from './cpu-times.js';
import type { RequestAccount } from './api-requests.js';
import { generateGitRepo } from './tree-fixtures.js';
import { captureResult, captureRound, noCaptureSamples, type CaptureSamples } from './world-capture.bench.js';
import { openWorldEnv, TREE_OWNER, type WorldEnv } from './world-env.js';
import { FORKS_PER_ROUND, forkResult, forkRound, noForkSamples, type ForkSamples, type ForkTarget } from './world-fork.bench.js';

const { values } = parseArgs({
  options: {
    only: { type: 'string', default: 'controller,latency,fork,capture,admission,collapse,watcher,receipts,evidence,private' },
    worlds: { type: 'string', default: '1000' },
    sizes: { type: 'string', default: '1000,10000,100000' },
    reps: { type: 'string' },
    dir: { type: 'string', default: '/var/tmp' },
    'admission-samples': { type: 'string', default: '2000' },
    'collapse-paths': { type: 'string', default: 'stack,node' },
    compaction: { type: 'boolean', default: false },
    'background-compaction': { type: 'boolean', default: false },
    receipts: { type: 'string', default: '100000' },
    'receipt-appends': { type: 'string', default: '10000' },
    'sig-ops': { type: 'string', default: '2000' },
    'fleet-worlds': { type: 'string', default: '20' },
    'fleet-files': { type: 'string', default: '10000' },
    'watcher-files': { type: 'string', default: '20000' },
  },
});

const BENCHES = ['controller', 'latency', 'fork', 'capture', 'admission', 'collapse', 'watcher', 'receipts', 'evidence', 'private', 'fleet'] as const;
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
const collapsePaths = new Set(parseList('collapse-paths', values['collapse-paths']).map((p) => {
  if (p !== 'stack' && p !== 'node') throw new Error(`--collapse-paths: unknown path "${p}" (have stack, node)`);
  return p;
}));
if (values.compaction && !(only.has('collapse') && collapsePaths.has('node'))) throw new Error('--compaction is part of the node-level collapse benchmark: --only collapse --collapse-paths node');
const repsFor = (files: number): number => (values.reps !== undefined ? positiveInt('reps', values.reps) : files >= 100_000 ? 3 : 5);
const collapseRepsFor = (files: number): number => (values.reps !== undefined ? positiveInt('reps', values.reps) : files >= 100_000 ? 3 : 10);

async function controller(): Promise<void> {
  const n = Number(values.worlds);
  console.log(`controller: ${n} Worlds created with a raw API client (32 in flight) vs. all of them carrying controller status`);
  const r = await benchController(n);
  console.table([
    { measure: 'create only (raw API writes)', seconds: r.createSeconds.toFixed(2), 'per world (ms)': ((r.createSeconds * 1000) / n).toFixed(2) },
    { measure: 'create → every status written', seconds: r.allStatusSeconds.toFixed(2), 'per world (ms)': ((r.allStatusSeconds * 1000) / n).toFixed(2) },
  ]);
  console.log(`ratio (status / create): ${r.ratio.toFixed(2)}× (target ≤ ${CONTROLLER_TARGETS.ratio}×: ${verdict(r.met.ratio)})   controller peak RSS: ${r.controllerPeakRssMiB.toFixed(1)} MiB (target ≤ ${CONTROLLER_TARGETS.peakRssMiB} MiB: ${verdict(r.met.peakRssMiB)})`);
}

const ms = (x: number): string => x.toFixed(x < 10 ? 2 : 1);
/** A step's median over the runs that showed it, and how many did; "held" when none did (a quick collapse writes only its final status). */
const shown = (x: number, n: number, runs: number): string => (n === 0 ? 'held' : n === runs ? ms(x) : `${ms(x)} (${n}/${runs})`);
const times = (x: number): string => `${x.toFixed(2)}×`;
const verdict = (met: boolean): string => (met ? 'target met' : 'target NOT met');

const layers = (depth: number): string => (depth === 1 ? '1 layer' : `${depth} layers`);

async function worlds(env: WorldEnv): Promise<void> {
  const doFork = only.has('fork');
  const doCapture = only.has('capture');
  console.log(`worlds: ${[doFork && 'fork', doCapture && 'capture'].filter(Boolean).join(' + ')} on generated roots of ${sizes.join(', ')} files, each size as adopted (1 layer) and as a second Root stacked to ${MAX_STACK_DEPTH} layers by node-level collapses (MAX_STACK_DEPTH: the deepest stack a collapse publishes); scratch store in ${env.dir}`);
  const targets: (ForkTarget & { fork: ForkSamples; capture: CaptureSamples[] })[] = [];
  for (const files of sizes) {
    const root = `bench-${files}`;
    let t = performance.now();
    await env.adopt(root, files);
    const adoptS = (performance.now() - t) / 1000;
    const deep = `${root}-deep`;
    t = performance.now();
    const collapses = await deepenStack(env, { files, root: deep, hostPath: await env.adopt(deep, files) }, MAX_STACK_DEPTH);
    const deepS = (performance.now() - t) / 1000;
    let repo = '';
    let gitS = 0;
    if (doFork) {
      t = performance.now();
      repo = join(env.dir, 'git', root);
      generateGitRepo(repo, files, TREE_OWNER);
      gitS = (performance.now() - t) / 1000;
    }
    console.log(`  ${files} files: generated + adopted in ${adoptS.toFixed(1)} s; the second generated, adopted and stacked by ${collapses.length} collapses in ${deepS.toFixed(1)} s${doFork ? `; generated + committed to git in ${gitS.toFixed(1)} s` : ''}; ${repsFor(files)} rounds`);
    // Each Root's depth as its generation's marker lists the layers; every World is checked to mount as many.
    const stacks = await Promise.all([root, deep].map(async (r) => ({ root: r, depth: (await stackOf(env.store, r)).depth })));
    targets.push({ files, stacks, repo, fork: noForkSamples(stacks.length), capture: stacks.map(() => noCaptureSamples()) });
  }
  await env.run(await env.spec(targets[0]!.stacks[0]!.root, 'warmup', ['/bin/true'])); // the process's first sandbox spawn, not measured
  // Rounds interleave the sizes and the depths, so a busy moment of the machine does not fall on one only.
  const rounds = Math.max(...sizes.map(repsFor));
  for (let round = 0; round < rounds; round++) {
    for (const t of targets) {
      if (round >= repsFor(t.files)) continue;
      if (doFork) await forkRound(env, t, t.fork);
      if (doCapture) for (const [k, stack] of t.stacks.entries()) await captureRound(env, stack, t.files, t.capture[k]!);
    }
  }
  const small = sizes.reduce((a, b) => Math.min(a, b));
  const large = sizes.reduce((a, b) => Math.max(a, b));

  if (doFork) {
    const forks = targets.map((t) => forkResult(t, t.fork));
    console.log(`\nfork latency (startWorldRun → workload started, /bin/true; ${FORKS_PER_ROUND} forks per round of each Root, the two alternating), medians in ms; copies of the 1-layer Root`);
    console.table(forks.map((r) => {
      const one = r.stacks[0]!;
      const deepest = r.stacks.at(-1)!;
      return {
        files: r.files,
        'forks / copies': `${one.forks} / ${r.rounds}`,
        ...Object.fromEntries(r.stacks.map((s) => [`admit, ${layers(s.depth)}`, ms(s.admitMs)])),
        ...Object.fromEntries(r.stacks.map((s) => [`fork, ${layers(s.depth)}`, ms(s.forkMs)])),
        [`fork ${deepest.depth} / 1`]: times(deepest.forkMs / one.forkMs),
        'cp -a': ms(r.cpMs),
        'git worktree add': ms(r.worktreeMs),
        'cp -a / fork': times(r.cpMs / one.forkMs),
        'worktree / fork': times(r.worktreeMs / one.forkMs),
      };
    }));
    for (const k of forks[0]!.stacks.keys()) {
      const a = forks.find((r) => r.files === small)!.stacks[k]!;
      const b = forks.find((r) => r.files === large)!.stacks[k]!;
      const growth = small !== large ? `; ${large}/${small} files: ${times(b.forkMs / a.forkMs)} (target ≤ 1.5×: ${verdict(b.forkMs / a.forkMs <= 1.5)})` : '';
      console.log(`fork, ${layers(b.depth)}, at ${large} files: ${ms(b.forkMs)} ms (target ≤ 35 ms: ${verdict(b.forkMs <= 35)})${growth}`);
    }
    const b = forks.find((r) => r.files === large)!;
    const vsGit = b.worktreeMs / b.stacks[0]!.forkMs;
    console.log(`git worktree add / fork (1 layer) at ${large} files: ${times(vsGit)} (target ≥ 20×: ${verdict(vsGit >= 20)})`);
  }
  if (doCapture) {
    const captures = targets.flatMap((t) => t.stacks.map((stack, k) => ({ depth: stack.depth, ...captureResult(t.files, t.capture[k]!) })));
    console.log('\ncapture of a 10-file change (exited → captured; its parts timed again on the same upper layer), medians in ms');
    console.table(captures.map((r) => ({
      files: r.files,
      stack: layers(r.depth),
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
      console.log(`capture / sha256sum at ${r.files} files, ${layers(r.depth)}: ${times(ratio)} (target ≤ 2×: ${verdict(ratio <= 2)})`);
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

const perS = (x: number): string => x.toFixed(x < 100 ? 1 : 0);

/**
 * The collapse benchmarks' schedule: adopt a Root of each size (timed, reported as `adopted`), then run
 * the collapses in rounds, one per size per round while it has repetitions left, so each size's samples
 * spread over the whole run instead of meeting one stretch of machine load.
 */
async function collapseRounds<S>(
  adopted: string,
  adopt: (root: string, files: number) => Promise<string>,
  samples: () => S,
  round: (t: CollapseTarget & { s: S }) => Promise<void>,
): Promise<(CollapseTarget & { s: S })[]> {
  const targets: (CollapseTarget & { s: S })[] = [];
  for (const files of sizes) {
    const root = `bench-${files}`;
    const t = performance.now();
    const hostPath = await adopt(root, files);
    console.log(`  ${files} files: ${adopted} in ${((performance.now() - t) / 1000).toFixed(1)} s; ${collapseRepsFor(files)} collapses`);
    targets.push({ files, root, hostPath, s: samples() });
  }
  const rounds = Math.max(...sizes.map(collapseRepsFor));
  for (let r = 0; r < rounds; r++) {
    for (const t of targets) if (r < collapseRepsFor(t.files)) await round(t);
  }
  return targets;
}

async function collapseOnStack(): Promise<void> {
  console.log(`collapse on a real stack (kube-apiserver + etcd, controller, node-agent): Roots of ${sizes.join(', ')} files, each World a 10-file change (5 modified, 5 added); no Policy, so no checks run`);
  const env = await openCollapseStack();
  await guarded(() => env.close(), async () => {
    const targets = await collapseRounds('generated + adopted by the node-agent', (root, files) => env.adopt(root, files), noStackCollapseSamples, (t) => env.round(t, t.s));
    const rs = targets.map((t) => stackCollapseResult(t.files, t.s));
    console.log('\ncollapse latency on the stack: Collapse created → status.phase Committed as a watch delivers it (medians unless p90), ms');
    console.table(rs.map((r) => ({
      files: r.files,
      runs: r.runs,
      'Committed': ms(r.totalMs),
      'Committed p90': ms(r.totalP90Ms),
      '→ bound': ms(r.boundMs),
      '→ Preparing': shown(r.preparingMs, r.preparingShown, r.runs),
      '→ Authorized': shown(r.authorizedMs, r.authorizedShown, r.runs),
      'cp -a 10 files': ms(r.cpMs),
      'sha256sum 10': ms(r.sha256sumMs),
      'API create': ms(r.apiCreateMs),
      'create → watch': ms(r.apiSeenMs),
      'Committed / (cp + sha256sum)': times(r.totalMs / (r.cpMs + r.sha256sumMs)),
    })));
    console.log('\nCPU per collapse, Collapse created → Committed seen (means over the collapses; the processes\' utime + stime, the machine\'s busy time against its cores × the wall time), ms');
    console.table(rs.filter((r) => r.cpu).map((r) => ({ files: r.files, ...cpuRow(r.cpu!) })));
    for (const r of rs) if (r.requests) console.log(`API requests per collapse at ${r.files} files, as the API server counts them (apiserver_request_total): ${requestsLine(r.requests)}`);
    const idle = await env.idleCpu(5);
    console.log('The same stack with nothing asked of it (its background: leases, heartbeats, the PRIME watcher\'s drains, timers), CPU per second, ms');
    console.table([cpuRow(idle)]);
  });
}

async function collapseOnNode(): Promise<void> {
  console.log(`collapse, node-level path (no Kubernetes): a scratch node store in ${values.dir}, Roots of ${sizes.join(', ')} files, the same 10-file change captured by a real World`);
  const env = await openWorldEnv(values.dir);
  await guarded(() => env.cleanup(), async () => {
    const targets = await collapseRounds('generated + adopted', (root, files) => env.adopt(root, files), noNodeCollapseSamples, (t) => nodeCollapseRound(env, t, t.s));
    const background: BackgroundCompactionResult[] = [];
    if (values['background-compaction']) for (const t of targets) background.push(await nodeBackgroundCompaction(env, t));
    const compactions: CompactionResult[] = [];
    if (values.compaction) for (const t of targets) compactions.push(await nodeCompaction(env, t));
    const rs = targets.map((t) => nodeCollapseResult(t.files, t.s));
    console.log('\nnode-level collapse: the prepare step\'s re-hash of PRIME (the first a full walk; later ones vouched for by the PRIME watcher when it saw nothing) and its next manifest with its digest (kept for the commit), then collapseRoot (stage + commit), medians unless p90, ms');
    console.table(rs.map((r) => ({
      files: r.files,
      runs: r.runs,
      'first re-hash (walk)': ms(r.firstRehashMs),
      'later re-hashes': ms(r.walkMs),
      vouched: `${r.vouched}/${r.runs}`,
      'next manifest + digest': ms(r.testedMs),
      collapseRoot: ms(r.collapseMs),
      'collapseRoot p90': ms(r.collapseP90Ms),
      'prepare + collapseRoot (later)': ms(r.prepareAndCollapseMs),
      'owner edit published': ms(r.ownerMs),
      'cp -a 10 files': ms(r.cpMs),
      'sha256sum 10': ms(r.sha256sumMs),
      'collapseRoot / (cp + sha256sum)': times(r.collapseMs / (r.cpMs + r.sha256sumMs)),
    })));
    if (values['background-compaction']) {
      console.log(`\nbackground compaction: each Root's stack taken to ${COMPACT_AT_DEPTH} layers (COMPACT_AT_DEPTH) by ordinary collapses, compacted as the agent does off the collapse's path (build, sealed walk of every file, PRIME re-measured), then the next collapse stacked over it, ms`);
      console.table(background.map((b) => ({
        files: b.files,
        'stack compacted': b.depth,
        'ordinary collapseRoot': ms(b.ordinaryMs),
        'compaction (background)': ms(b.totalMs),
        build: ms(b.buildMs),
        'sealed walk': ms(b.walkMs),
        'PRIME re-measured': ms(b.remeasureMs),
        'files linked': b.linked,
        'next collapseRoot': ms(b.nextMs),
        'next stack': b.nextDepth,
      })));
    }
    if (!values.compaction) return;
    console.log(`\ncompaction: ordinary collapses of the same change take each Root's stack to MAX_STACK_DEPTH (${MAX_STACK_DEPTH} layers); the next collapse builds a full generation instead (one per size): collapseRoot and its parts (payload built: links and copies; staged payload walked; commit boundary, exchange, rows), ms`);
    console.table(compactions.map((c) => ({
      files: c.files,
      'ordinary collapses': c.ordinary,
      'ordinary collapseRoot': ms(c.ordinaryMs),
      'compacting collapseRoot': ms(c.compactionMs),
      'build (link + copy)': ms(c.buildMs),
      'walk staged': ms(c.walkMs),
      commit: ms(c.commitMs),
      'files linked': c.linked,
      'files copied': c.copied,
      'compacting / ordinary': times(c.compactionMs / c.ordinaryMs),
    })));
  });
}

async function collapse(): Promise<void> {
  if (collapsePaths.has('stack')) await collapseOnStack();
  if (collapsePaths.has('stack') && collapsePaths.has('node')) console.log('');
  if (collapsePaths.has('node')) await collapseOnNode();
}

async function receipts(): Promise<void> {
  const n = positiveInt('receipts', values.receipts);
  const appends = Math.min(n, positiveInt('receipt-appends', values['receipt-appends']));
  const sigOps = positiveInt('sig-ops', values['sig-ops']);
  const rounds = 3;
  console.log(`receipts: ${appends} appends through the node-agent's ledger (openCollapseLedger on a node store under ${values.dir}) and ${appends} through a file-only ledger, ${appends} each grouped (appendAsync) with 8 and 32 in flight on a second node store; a ledger of ${n} receipts verified with verifyLedger (\`worldline receipts verify\`, median of ${rounds}); raw Ed25519 rates: ${sigOps} ops × ${rounds} rounds, median`);
  const r = await benchReceipts({ dir: values.dir, receipts: n, appends, sigOps, rounds });
  const us = (x: number): string => x.toFixed(x < 100 ? 1 : 0);
  console.table([
    { measure: 'append, node-agent ledger (sign, write, fsync, store row)', 'ops/s': perS(r.append.perS), 'median µs': us(r.append.medianUs), 'p99 µs': us(r.append.p99Us) },
    { measure: 'append, file-only ledger (sign, write, fsync)', 'ops/s': perS(r.appendFileOnly.perS), 'median µs': us(r.appendFileOnly.medianUs), 'p99 µs': us(r.appendFileOnly.p99Us) },
    ...r.grouped.map((g) => ({ measure: `grouped append (appendAsync), node-agent ledger, ${g.inFlight} in flight, ${g.meanGroup.toFixed(1)} receipts per fsync`, 'ops/s': perS(g.perS), 'median µs': us(g.medianUs), 'p99 µs': us(g.p99Us) })),
    { measure: `write + fsync of a ${r.lineBytes}-byte line`, 'ops/s': perS(r.fsyncPerS) },
    { measure: '@noble/ed25519 sign', 'ops/s': perS(r.raw.nobleSignPerS) },
    { measure: 'Node crypto Ed25519 sign', 'ops/s': perS(r.raw.nodeSignPerS) },
    { measure: `receipts verify (verifyLedgerParallel), ${r.receipts} receipts in ${r.verifySeconds.toFixed(2)} s`, 'ops/s': perS(r.verifyPerS) },
    { measure: `the same on one thread (verifyLedger), ${r.verifyOneThreadSeconds.toFixed(2)} s`, 'ops/s': perS(r.verifyOneThreadPerS) },
    { measure: `Node crypto verify of the same ${r.receipts} signatures alone`, 'ops/s': perS(r.sameSignaturesPerS) },
    { measure: 'Node crypto Ed25519 verify', 'ops/s': perS(r.raw.nodeVerifyPerS) },
    { measure: '@noble/ed25519 verify', 'ops/s': perS(r.raw.nobleVerifyPerS) },
  ]);
}

async function latency(): Promise<void> {
  const reps = values.reps !== undefined ? positiveInt('reps', values.reps) : 20;
  console.log(`latency: a World running \`true\` on a 10-file Root, on a real stack, create → each phase as the bench's watch sees it; ${reps} Worlds one after another (after one untimed), next to one raw ConfigMap create each; ms`);
  const { rows, cpu, requests } = await benchWorldLatency({ reps });
  console.table(rows.map((r) => ({ hop: r.hop, 'median ms': r.medianMs.toFixed(1), 'p90 ms': r.p90Ms.toFixed(1) })));
  console.log(`\nCPU per World, created → Captured seen (means over the ${cpu.windows} Worlds), ms`);
  console.table([cpuRow(cpu)]);
  console.log(`API requests per World over the same window, as the API server counts them (apiserver_request_total; watches count when they open): ${requestsLine(requests)}`);
}

/** "12.8 APPLY worlds/status, 7.0 POST events, ..." */
function requestsLine(r: ReturnType<RequestAccount['result']>): string {
  return r.perWindow.map(([k, v]) => `${v.toFixed(1)} ${k}`).join(', ');
}

/** One table row of a CpuAccount result: each process, the rest of the machine (the workload, kernel threads, interrupts), the machine, and its busy share. */
function cpuRow(cpu: ReturnType<CpuAccount['result']>): Record<string, string> {
  const named = Object.values(cpu.perWindowMs).reduce((a, b) => a + b, 0);
  return {
    ...Object.fromEntries(Object.entries(cpu.perWindowMs).map(([k, v]) => [k, ms(v)])),
    'rest of the machine': ms(cpu.machineBusyMs - named),
    machine: ms(cpu.machineBusyMs),
    'busy share of the cores': `${(cpu.busyShare * 100).toFixed(0)}%`,
  };
}

async function watcherCost(): Promise<void> {
  const files = positiveInt('watcher-files', values['watcher-files']);
  console.log(`PRIME watcher: this process writes ${files} small files beside a watched tree on ${values.dir}'s filesystem, in slices of 1,000, each followed by one drain (3 rounds); its CPU (user + system) in the writes and in the drains, medians`);
  const r = await benchWatcherCost({ dir: values.dir, files, rounds: 3 });
  console.table([{
    files: r.files,
    'writes (ms)': ms(r.writeCpuMs),
    'drains (ms)': ms(r.drainCpuMs),
    'drains per file (µs)': r.perFileUs.toFixed(1),
    'drains / writes': times(r.drainCpuMs / r.writeCpuMs),
    'empty drain (µs)': r.emptyDrainUs.toFixed(1),
    'quiet second, timer running (ms)': ms(r.quietSecondCpuMs),
  }]);
}

function evidence(): void {
  const rounds = 200;
  console.log(`evidence: a controller-issued collapse grant for a World with N required checks — the evidence graph verified (verifyEvidenceGraph), the grant signed, and the grant verified on the node (ControllerGrants.verify, statements read back from a real evidence store under ${values.dir}); ${rounds} rounds each, next to Node crypto Ed25519 verify of as many signatures as the graph checks (each statement twice)`);
  const rows = benchEvidence({ dir: values.dir, checks: [1, 10], rounds });
  const us = (x: number): string => x.toFixed(0);
  console.table(rows.map((r) => ({
    'required checks': r.checks,
    statements: r.statements,
    'graph verify, median µs': us(r.graphUs.median),
    'graph verify, p99 µs': us(r.graphUs.p99),
    'grant sign µs': us(r.signGrantUs),
    'node verify, median µs': us(r.nodeVerifyUs.median),
    'node verify, p99 µs': us(r.nodeVerifyUs.p99),
    'raw verify of 2×statements µs': us(r.rawVerifyUs),
  })));
}

async function privateEvaluator(): Promise<void> {
  console.log(`private evaluator: a candidate tree of ${sizes.join(', ')} files frozen, an examiner run with no candidate, and candidate sessions (/bin/true, timed by the examiner), next to cp -a of the tree; medians in ms`);
  const rows = await benchPrivate(values.dir, sizes, repsFor);
  console.table(rows.map((r) => ({
    files: r.files,
    rounds: r.rounds,
    'cp -a': ms(r.cpMs),
    freeze: ms(r.freezeMs),
    'freeze / cp -a': times(r.freezeMs / r.cpMs),
    'examiner run, no candidate': ms(r.examinerOnlyMs),
    'one candidate session': ms(r.sessionMs),
    'session / cp -a': times(r.sessionMs / r.cpMs),
  })));
}

async function fleet(): Promise<void> {
  const worlds = positiveInt('fleet-worlds', values['fleet-worlds']);
  const files = positiveInt('fleet-files', values['fleet-files']);
  console.log(`fleet on a real stack: ${worlds} Worlds forked from one generation of a ${files}-file Root, each changing 10 files of its own, all Collapsing at once with spec.rebase under a Policy whose check is \`sleep 1\``);
  const r = await benchFleet({ files, worlds });
  const s = (ms: number): string => (ms / 1000).toFixed(2);
  const sum = (xs: number[]): number => xs.reduce((a, b) => a + b, 0);
  console.table([
    { measure: `all ${worlds} Collapses created → the last Committed`, seconds: s(r.totalMs) },
    { measure: `serial floor: ${worlds} × one check run (median ${s(r.checkRunMs)} s, startedAt → finishedAt)`, seconds: s(worlds * r.checkRunMs) },
    { measure: 'total / serial floor', seconds: (r.totalMs / (worlds * r.checkRunMs)).toFixed(2) + '×' },
    { measure: 'per Collapse, Rebasing (its checks on the rebased bytes), median', seconds: s(median(r.rebasingMs)) },
    { measure: 'per Collapse, Preparing → Committed (measure, stage, commit), median', seconds: s(median(r.commitMs)) },
    { measure: 'sum of Rebasing over the fleet', seconds: s(sum(r.rebasingMs)) },
    { measure: 'sum of Preparing → Committed over the fleet', seconds: s(sum(r.commitMs)) },
    { measure: 'the last Collapse, Queued', seconds: s(r.queuedMs.at(-1) ?? 0) },
  ]);
}

/** Runs `fn`, then `cleanup`; on SIGINT/SIGTERM runs `cleanup` and exits. */
async function guarded(cleanup: () => unknown, fn: () => Promise<void>): Promise<void> {
  const onSignal = (sig: NodeJS.Signals): void => {
    void Promise.resolve()
      .then(cleanup)
      .finally(() => process.exit(sig === 'SIGINT' ? 130 : 143));
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    await fn();
  } finally {
    await cleanup();
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

async function main(): Promise<void> {
  const sections: (() => Promise<void> | void)[] = [];
  if (only.has('controller')) sections.push(controller);
  if (only.has('latency')) sections.push(latency);
  if (only.has('admission')) sections.push(admission);
  if (only.has('fork') || only.has('capture')) {
    sections.push(async () => {
      const env = await openWorldEnv(values.dir);
      await guarded(() => env.cleanup(), () => worlds(env));
    });
  }
  if (only.has('collapse')) sections.push(collapse);
  if (only.has('watcher')) sections.push(watcherCost);
  if (only.has('receipts')) sections.push(receipts);
  if (only.has('evidence')) sections.push(evidence);
  if (only.has('private')) sections.push(privateEvaluator);
  if (only.has('fleet')) sections.push(fleet);
  for (const [i, section] of sections.entries()) {
    if (i > 0) console.log('');
    await section();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
