// A small seeded pseudo-random source for the fuzz campaign (xorshift128+ over BigInt-free 32-bit halves,
// seeded through splitmix32), so one printed seed replays a whole run: WORLDLINE_FUZZ_SEED=<seed>.
export class SeededRandom {
  private a: number;
  private b: number;
  private c: number;
  private d: number;

  constructor(readonly seed: number) {
    let s = seed >>> 0;
    const next = (): number => {
      s = (s + 0x9e3779b9) >>> 0;
      let z = s;
      z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
      z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
      return (z ^ (z >>> 16)) >>> 0;
    };
    this.a = next();
    this.b = next();
    this.c = next();
    this.d = next();
  }

  /** A float in [0, 1) (xoshiro128**). */
  next(): number {
    const r = Math.imul(rotl(Math.imul(this.b, 5) >>> 0, 7), 9) >>> 0;
    const t = (this.b << 9) >>> 0;
    this.c ^= this.a;
    this.d ^= this.b;
    this.b ^= this.c;
    this.a ^= this.d;
    this.c ^= t;
    this.d = rotl(this.d, 11);
    return r / 2 ** 32;
  }

  /** An integer in [min, max]. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  chance(p: number): boolean {
    return this.next() < p;
  }

  pick<T>(xs: readonly T[]): T {
    if (xs.length === 0) throw new Error('pick from an empty list');
    return xs[Math.floor(this.next() * xs.length)]!;
  }

  /** Up to `max` distinct elements of `xs`, at least `min`. */
  subset<T>(xs: readonly T[], min: number, max: number): T[] {
    return this.shuffle([...xs]).slice(0, this.int(min, Math.min(max, xs.length)));
  }

  shuffle<T>(xs: T[]): T[] {
    for (let i = xs.length - 1; i > 0; i--) {
      const j = Math.floor(this.next() * (i + 1));
      [xs[i], xs[j]] = [xs[j]!, xs[i]!];
    }
    return xs;
  }
}

function rotl(x: number, k: number): number {
  return ((x << k) | (x >>> (32 - k))) >>> 0;
}

/** The seed of this run: WORLDLINE_FUZZ_SEED when set (a decimal uint32), else a fresh one. */
export function fuzzSeed(): number {
  const raw = process.env['WORLDLINE_FUZZ_SEED'];
  if (raw === undefined || raw === '') return Math.floor(Math.random() * 2 ** 32);
  if (!/^\d+$/.test(raw) || Number(raw) >= 2 ** 32) throw new Error(`WORLDLINE_FUZZ_SEED must be a decimal integer below 2^32, got '${raw}'`);
  return Number(raw);
}
