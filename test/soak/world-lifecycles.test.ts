// Soak: many World lifecycles (fork, run, capture, delete) on one node against the real stack (kube-apiserver,
// etcd, controller, node-agent), sampling the node-agent's resident memory, open descriptors, the mounts
// below its store, the soak Worlds' cgroup directories, loop devices on the store, and the agent's
// descendant processes and their network namespaces, every WORLDLINE_SOAK_EVERY lifecycles once the
// batch's Worlds are gone. Asserts the figures stay flat: the last quarter's maximum may exceed the first
// quarter's maximum by at most the tolerance named per figure below. Prints the table and writes it as
// JSON (WORLDLINE_SOAK_REPORT, default reports/soak.json), with how long each phase of a lifecycle took
// (median, 90th percentile, maximum: created, Accepted, Admitted, Isolated, final phase, gone).
// The soak follows its Worlds through one watch (world-watch.ts), not a kubectl process per poll. Each World
// asks for an equal share of the node's CPUs, so that all WORLDLINE_SOAK_PARALLEL of them are admitted at once
// (at the default of one CPU each, a two-CPU node admits two and the others wait for room).
//   WORLDLINE_SOAK_LIFECYCLES  lifecycles in all (default 1000)
//   WORLDLINE_SOAK_EVERY       lifecycles between two samples (default 50)
//   WORLDLINE_SOAK_PARALLEL    Worlds in flight at once (default 4)
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { dirname, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { startStack, type Stack } from '../support/stack.js';
import { adoptSmallRoot, FINAL_PHASES, shWorld, worldManifest } from '../support/worlds.js';
import { sampleNode, sampleTable, SAMPLE_FIELDS, type NodeSample, type SampleField } from './node-samples.js';
import { phaseTable, SoakWorlds, type Milestone } from './world-watch.js';

function intEnv(name: string, dflt: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return dflt;
  if (!/^[1-9]\d*$/.test(raw)) throw new Error(`${name} must be a positive integer, got '${raw}'`);
  return Number(raw);
}

const LIFECYCLES = intEnv('WORLDLINE_SOAK_LIFECYCLES', 1000);
const EVERY = intEnv('WORLDLINE_SOAK_EVERY', 50);
const PARALLEL = intEnv('WORLDLINE_SOAK_PARALLEL', 4);
const REPORT = resolve(process.env['WORLDLINE_SOAK_REPORT'] ?? 'reports/soak.json');

/**
 * How far the last quarter's maximum may exceed the first quarter's. RSS: 16 MiB — V8 sizes its heap lazily
 * and a fresh agent's heap keeps growing for the first hundreds of lifecycles, but a leak of 22 KiB or more
 * per lifecycle adds more than that over the 750 lifecycles between the quarters. Descriptors: 4 — the API
 * client's keep-alive sockets and the store's SQLite files open and close on their own schedule. Everything
 * else counts kernel objects a finished, deleted World must not leave behind: 0.
 */
const TOLERANCE: Record<SampleField, number> = { rssKiB: 16 * 1024, fds: 4, mounts: 0, cgroupDirs: 0, loopDevices: 0, descendants: 0, netns: 0 };

/** Each World's CPU: an equal share of the node's CPUs (the agent's default node ceiling), so PARALLEL fit at once. */
const CPU = `${Math.max(1, Math.floor((cpus().length * 1000) / PARALLEL))}m`;

const WORKLOAD = 'echo "$WORLDLINE_SOAK" > "soak-$WORLDLINE_SOAK.txt"; head -c 65536 /dev/urandom > blob.bin; rm -f a.txt; sleep 0.1 & wait';

let s: Stack;
let worlds: SoakWorlds;
before(async () => {
  // Host ids of its own (2^31 onward, above the default ranges): it may run beside another stack.
  s = await startStack({ nodeName: 'soak-node', agentArgs: ['--id-base', String(2 ** 31)] });
  await adoptSmallRoot(s, 'soak', 1000);
  worlds = await SoakWorlds.open(s.cp.kubeconfigPath, 'default', FINAL_PHASES);
});
after(async () => {
  worlds?.stop();
  await s?.stop();
});

/** One lifecycle: fork a World from the Root, run the workload to Captured, delete it and wait until it is gone. */
async function lifecycle(i: number, uids: Set<string>, phases: Partial<Record<Milestone, number>>[]): Promise<void> {
  const name = `soak-${i}`;
  const spec = shWorld(['soak'], WORKLOAD, { agent: { env: [{ name: 'WORLDLINE_SOAK', value: String(i) }] }, resources: { cpu: CPU } });
  await worlds.create(name, worldManifest(name, spec));
  const w = await worlds.until(name, (x) => FINAL_PHASES.includes(x.status?.phase), 120_000, `World default/${name} in ${FINAL_PHASES.join('|')}`);
  uids.add(w.metadata.uid as string);
  assert.equal(w.status.phase, 'Captured', `lifecycle ${i}: ${JSON.stringify(w.status)}`);
  assert.ok(typeof w.status.candidate?.digest === 'string', `lifecycle ${i}: no candidate`);
  await worlds.deleteAndWait(name, 120_000);
  phases.push(worlds.take(name));
}

test(`${LIFECYCLES} World lifecycles leave the node-agent's memory, descriptors, mounts, cgroups, loop devices and namespaces flat`, async () => {
  const uids = new Set<string>();
  const phases: Partial<Record<Milestone, number>>[] = [];
  const agentPid = s.agent.pid;
  let agentEnded: unknown;
  void s.agent.waitExit().then((e) => (agentEnded = e));
  const quiet = async (done: number): Promise<NodeSample> => {
    // Teardown finishes just after the finalizer goes; give it a moment, then sample whatever is there.
    const deadline = Date.now() + 10_000;
    let sample = sampleNode(agentPid, s.storeDir, uids, done);
    while (Date.now() < deadline && (sample.mounts > samples[0]!.mounts || sample.cgroupDirs > 0 || sample.descendants > samples[0]!.descendants)) {
      await sleep(250);
      sample = sampleNode(agentPid, s.storeDir, uids, done);
    }
    return sample;
  };
  const samples: NodeSample[] = [sampleNode(agentPid, s.storeDir, uids, 0)];
  const started = Date.now();
  let next = 0;
  let done = 0;
  while (done < LIFECYCLES) {
    const batchEnd = Math.min(LIFECYCLES, done + EVERY);
    const worker = async (): Promise<void> => {
      while (next < batchEnd) await lifecycle(next++, uids, phases);
    };
    await Promise.all(Array.from({ length: PARALLEL }, worker));
    done = batchEnd;
    assert.equal(agentEnded, undefined, `the node-agent exited after ${done} lifecycles: ${JSON.stringify(agentEnded)}`);
    samples.push(await quiet(done));
    const rate = (done / ((Date.now() - started) / 1000)).toFixed(2);
    process.stderr.write(`soak: ${done}/${LIFECYCLES} lifecycles, ${rate}/s, ${JSON.stringify(samples.at(-1))}\n`);
  }
  const seconds = (Date.now() - started) / 1000;
  const table = sampleTable(samples);
  const phaseRows = phaseTable(phases);
  process.stdout.write(`\nsoak: ${LIFECYCLES} lifecycles in ${seconds.toFixed(0)} s (${(LIFECYCLES / seconds).toFixed(2)}/s), ${PARALLEL} in flight, ${CPU} CPU each, Worlds that waited for admission, by reason: ${JSON.stringify(worlds.waits)}\n${table}\n`);
  process.stdout.write(`soak: phases of a lifecycle (ms: median, 90th percentile, max)\n${phaseRows.map((r) => `  ${r.phase.padEnd(22)} ${String(r.medianMs).padStart(6)} ${String(r.p90Ms).padStart(6)} ${String(r.maxMs).padStart(6)}`).join('\n')}\n`);
  // Quarters by lifecycle count. The sample before any lifecycle is left out: it holds the agent's start-up
  // memory (its heap is larger then than once it settles), which would hide growth behind it.
  const quarter = (q: number) => samples.filter((x) => x.lifecycles > LIFECYCLES * q / 4 && x.lifecycles <= LIFECYCLES * (q + 1) / 4);
  const first = quarter(0);
  const last = quarter(3);
  const verdicts = SAMPLE_FIELDS.map((f) => {
    const firstMax = Math.max(...first.map((x) => x[f]));
    const lastMax = Math.max(...last.map((x) => x[f]));
    return { field: f, firstQuarterMax: firstMax, lastQuarterMax: lastMax, tolerance: TOLERANCE[f], flat: lastMax <= firstMax + TOLERANCE[f] };
  });
  mkdirSync(dirname(REPORT), { recursive: true });
  writeFileSync(REPORT, `${JSON.stringify({ lifecycles: LIFECYCLES, every: EVERY, parallel: PARALLEL, cpu: CPU, seconds, phases: phaseRows, waited: worlds.waits, samples, verdicts }, null, 2)}\n`);
  process.stdout.write(`soak: report written to ${REPORT}\n${verdicts.map((v) => `${v.field}: first quarter max ${v.firstQuarterMax}, last quarter max ${v.lastQuarterMax}, tolerance ${v.tolerance}: ${v.flat ? 'flat' : 'GROWING'}`).join('\n')}\n`);
  assert.ok(last.length > 0 && first.length > 0, `too few samples for quarters (${samples.length}); lower WORLDLINE_SOAK_EVERY`);
  assert.deepEqual(verdicts.filter((v) => !v.flat), [], 'every figure stays flat');
  const end = samples.at(-1)!;
  assert.equal(end.mounts, samples[0]!.mounts, 'no World mount is left below the store');
  assert.equal(end.cgroupDirs, 0, 'no soak World keeps a cgroup');
  assert.equal(s.agent.pid, agentPid);
  process.kill(agentPid, 0);
});
