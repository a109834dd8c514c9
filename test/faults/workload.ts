// The fault campaign's workload: a few Roots, and waves of Worlds forked from them (two per Root per
// wave, each sleeping a little and then writing either the Root's shared file — so Collapses of the same
// wave conflict and the later one is PRIME_MOVED — or a file of its own), then Collapses of three of each
// wave's Worlds (both Worlds of one Root, and one of another), applied without waiting for them so they
// run while the next wave forks. Every API call is retried while the control plane is down.
import { chownSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { collapseManifest } from '../support/collapses.js';
import type { FaultStack } from '../support/fault-stack.js';
import { getJson, kc } from '../support/wait.js';
import { rootManifest, shWorld, worldManifest } from '../support/worlds.js';
import type { Rng } from './fault-schedule.js';

export const OWNER = 1000;
export const WAVE_LABEL = 'faults-wave';
/** World phases after which nothing more happens to a World (Collapsed: a Collapse promoted it). */
export const WORLD_FINAL = ['Captured', 'Collapsed', 'Failed', 'Refused'];
export const COLLAPSE_FINAL = ['Committed', 'Denied'];

export interface PlannedWorld {
  name: string;
  root: string;
  script: string;
}

export interface Wave {
  worlds: PlannedWorld[];
  /** Names of the Worlds this wave collapses. */
  collapse: string[];
}

export interface Plan {
  roots: string[];
  waves: Wave[];
}

/** `worlds` Worlds (rounded up to whole waves of two per Root) over `rootCount` Roots. */
export function planWorkload(rng: Rng, worlds: number, rootCount: number): Plan {
  const roots = Array.from({ length: rootCount }, (_x, i) => `fr${i}`);
  const perWave = 2 * rootCount;
  const waves: Wave[] = [];
  for (let w = 0; waves.length * perWave < worlds; w++) {
    const planned: PlannedWorld[] = [];
    for (const root of roots) {
      for (const side of ['a', 'b']) {
        const name = `fw${w}-${root}-${side}`;
        const pause = (rng.int(0, 25) / 10).toFixed(1);
        const target = rng.next() < 0.6 ? 'shared.txt' : `own-${name}.txt`;
        planned.push({ name, root, script: `sleep ${pause}; printf '%s\\n' '${name}' > ${target}` });
      }
    }
    const both = rng.pick(roots);
    const other = rng.pick(roots.filter((r) => r !== both));
    const collapse = [`fw${w}-${both}-a`, `fw${w}-${both}-b`, `fw${w}-${other}-${rng.pick(['a', 'b'])}`];
    waves.push({ worlds: planned, collapse });
  }
  return { roots, waves };
}

/** kubectl through a control plane that may be down: retried until it succeeds, `timeoutMs` passes, or `aborted()`. */
export async function retrying<T>(what: string, fn: () => Promise<T>, timeoutMs = 180_000, aborted: () => boolean = () => false): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await fn();
    } catch (e) {
      if (Date.now() > deadline) throw new Error(`${what}: still failing after ${timeoutMs} ms: ${(e as Error).message}`, { cause: e });
      if (aborted()) throw new Error(`${what}: given up, the campaign was stopped: ${(e as Error).message}`, { cause: e });
      await sleep(500);
    }
  }
}

function labelled(manifest: string, wave: number): string {
  const o = JSON.parse(manifest) as { metadata: Record<string, unknown> };
  o.metadata['labels'] = { [WAVE_LABEL]: String(wave) };
  return JSON.stringify(o);
}

/** Every object of `kind` in the default namespace (retried). */
export async function listAll(s: FaultStack, kind: string, selector?: string, aborted?: () => boolean): Promise<Record<string, any>[]> {
  return retrying(`list ${kind}`, async () => ((await getJson(s.cp, ['get', kind, '-n', 'default', ...(selector ? ['-l', selector] : [])]))?.items ?? []) as Record<string, any>[], undefined, aborted);
}

/** Creates each Root's host directory (shared.txt and a subdirectory, owned by OWNER) and waits until all are Ready. */
export async function adoptRoots(s: FaultStack, roots: string[]): Promise<Map<string, string>> {
  const paths = new Map<string, string>();
  for (const r of roots) {
    const p = join(s.scratch, r);
    mkdirSync(join(p, 'sub'), { recursive: true, mode: 0o755 });
    writeFileSync(join(p, 'shared.txt'), 'initial\n', { mode: 0o644 });
    writeFileSync(join(p, 'sub', 'keep.txt'), 'kept\n', { mode: 0o644 });
    for (const f of ['.', 'sub', 'shared.txt', 'sub/keep.txt']) chownSync(join(p, f), OWNER, OWNER);
    paths.set(r, p);
  }
  await kc(s.cp, ['apply', '-f', '-'], roots.map((r) => rootManifest(r, s.nodeName, paths.get(r)!)).join('\n'));
  await retrying('every Root Ready', async () => {
    const items = ((await getJson(s.cp, ['get', 'roots']))?.items ?? []) as Record<string, any>[];
    const notReady = roots.filter((r) => items.find((i) => i.metadata.name === r)?.status?.phase !== 'Ready');
    if (notReady.length > 0) throw new Error(`not Ready: ${notReady.join(', ')}`);
  }, 120_000);
  return paths;
}

export interface WorkloadResult {
  worlds: number;
  collapses: number;
  /** Waves whose Worlds were not all final within the wave's wait (the campaign went on; the settle checks them). */
  slowWaves: number[];
}

/** Runs every wave (until `aborted()`): its Worlds, a bounded wait for them to end, then its Collapses (not waited for). */
export async function runWorkload(s: FaultStack, plan: Plan, say: (msg: string) => void, aborted: () => boolean, waveWaitMs = 150_000): Promise<WorkloadResult> {
  const result: WorkloadResult = { worlds: 0, collapses: 0, slowWaves: [] };
  for (const [i, wave] of plan.waves.entries()) {
    if (aborted()) break;
    const worlds = wave.worlds.map((w) => labelled(worldManifest(w.name, shWorld([w.root], w.script)), i)).join('\n');
    await retrying(`wave ${i}: apply Worlds`, () => kc(s.cp, ['apply', '-f', '-'], worlds), undefined, aborted);
    result.worlds += wave.worlds.length;
    const deadline = Date.now() + waveWaitMs;
    let final = 0;
    while (Date.now() < deadline && !aborted()) {
      const items = await listAll(s, 'worlds', `${WAVE_LABEL}=${i}`, aborted).catch(() => []);
      final = items.filter((w) => WORLD_FINAL.includes(w.status?.phase)).length;
      if (final === wave.worlds.length) break;
      await sleep(500);
    }
    if (final < wave.worlds.length) result.slowWaves.push(i);
    const collapses = wave.collapse.map((w) => labelled(collapseManifest(`${w}-col`, w), i)).join('\n');
    await retrying(`wave ${i}: apply Collapses`, () => kc(s.cp, ['apply', '-f', '-'], collapses), undefined, aborted);
    result.collapses += wave.collapse.length;
    say(`wave ${i + 1}/${plan.waves.length}: ${final}/${wave.worlds.length} Worlds final, ${wave.collapse.length} Collapses applied`);
  }
  return result;
}
