// Small deterministic pseudo-random numbers for seeded test campaigns, so a failure can be replayed.

/** A linear congruential sequence in [0, 1) from `seed`. */
export function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}
