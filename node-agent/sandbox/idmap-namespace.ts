// The user namespace an idmapped mount maps a run's lowers through: one per id range, made on first use
// and kept for the agent's lifetime. Making one clones the agent (its whole address space to copy) and
// writes two maps on every launch; keeping it took node-level start → workload running from 20–27 ms to
// 18–21 ms medians on this project's test VM (docs/benchmarks.md, "Two fewer clones…"). A kept
// namespace has no process in it and holds nothing but its maps; it is reached only through the agent's
// own descriptor (O_CLOEXEC, never handed to a sandbox or the shim), so it maps a later run's lowers
// exactly as a new one would. The ranges are the admission's id slots, few and fixed by configuration;
// past KEPT_MAX distinct ranges a namespace is made for the one call and closed after it.
import { closeSync } from 'node:fs';
import * as native from '../../native/index.js';

const KEPT_MAX = 256;
const kept = new Map<string, number>();

/** [{ inside: 0, outside: base, count }]: container ids 0..count-1 are host ids base..base+count-1. */
export function idMap(base: number, count: number): native.IdMap[] {
  return [{ inside: 0, outside: base, count }];
}

/**
 * Runs `use` with a user namespace whose uid and gid maps are idMap(base, count). `use` must be
 * synchronous and must not keep or close the descriptor: it stays open for the next run of that range.
 */
export function withIdmapNamespace<T>(base: number, count: number, use: (usernsFd: number) => T): T {
  const key = `${base}:${count}`;
  const known = kept.get(key);
  if (known !== undefined) return use(known);
  const map = idMap(base, count);
  const fd = native.createUserNamespace(map, map);
  if (kept.size < KEPT_MAX) {
    kept.set(key, fd);
    return use(fd);
  }
  try {
    return use(fd);
  } finally {
    closeSync(fd);
  }
}
