// The fault campaign's seeded randomness: the seed (WORLDLINE_FAULTS_SEED to replay, else a fresh one),
// a small deterministic generator, the kill schedule drawn from it, and the workload's choices drawn from a
// second stream of the same seed. The schedule depends on the seed alone, never on timing or on the
// workload, so a failing seed replays the same kills in the same order with the same gaps.
import { randomInt } from 'node:crypto';
import { COMPONENTS, type Component } from '../support/fault-stack.js';

export const SEED_ENV = 'WORLDLINE_FAULTS_SEED';


/** The seed: WORLDLINE_FAULTS_SEED when set (a decimal integer 0..2^32-1), else a fresh random one. */
export function campaignSeed(env: NodeJS.ProcessEnv = process.env): number {
  const raw = env[SEED_ENV];
  if (raw === undefined || raw === '') return randomInt(0, 2 ** 32 - 1);
  if (!/^\d{1,10}$/.test(raw) || Number(raw) > 2 ** 32 - 1) throw new Error(`${SEED_ENV}="${raw}" is not a decimal integer 0..4294967295`);
  return Number(raw);
}

/** mulberry32: a 32-bit state generator, deterministic for a seed; next() in [0, 1). */
export class Rng {
  private state: number;
  constructor(seed: number) {
    this.state = seed >>> 0;
  }
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  /** An integer in [lo, hi]. */
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.next() * (hi - lo + 1));
  }
  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)]!;
  }
}

export interface Kill {
  /** Wait this long after the previous fault's component is back (the campaign's start for the first). */
  gapMs: number;
  component: Component;
  /** How long the component stays dead before it is started again. */
  downMs: number;
}

/**
 * `count` kills: gaps of 2-12 s, 0-3 s down. Components come in shuffled rounds of all four, so every
 * component is hit about equally often whatever the count.
 */
export function killSchedule(seed: number, count: number): Kill[] {
  const rng = new Rng(seed);
  const out: Kill[] = [];
  while (out.length < count) {
    const round = [...COMPONENTS];
    for (let i = round.length - 1; i > 0; i--) {
      const j = rng.int(0, i);
      [round[i], round[j]] = [round[j]!, round[i]!];
    }
    for (const component of round) out.push({ gapMs: rng.int(2_000, 12_000), component, downMs: rng.int(0, 3_000) });
  }
  return out.slice(0, count);
}

/** The workload's generator: the same seed, another stream (so the schedule never depends on it). */
export function workloadRng(seed: number): Rng {
  return new Rng((seed ^ 0x9e3779b9) >>> 0);
}
