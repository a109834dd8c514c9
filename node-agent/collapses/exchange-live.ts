// The one step of a collapse that changes PRIME: live/ (one link per Root) is rebuilt as a sibling,
// live.next/, with the collapsing Roots' links pointing at their new generations and every other link
// copied, then the two directories are swapped with one renameat2(RENAME_EXCHANGE). Every Root of the
// collapse changes in that single call, or none does; a reader resolving a host path sees either the
// old mapping or the new one. Afterwards live.next/ holds the old mapping and is removed.
//
// Built, synced (by the caller, with the rest of the commit's batch) and exchanged inside one step of
// serializedOnStore, so no other writer of live/ in this process can slip a link in between.
import { chmodSync, closeSync, constants as fsc, fstatSync, mkdirSync, openSync, readdirSync, readlinkSync, rmSync, symlinkSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { RENAME_EXCHANGE, fsyncFd, renameat2 } from '../../native/index.js';
import type { StoreLayout } from '../store/store-layout.js';

/** The sibling of live/ that is built and exchanged with it. */
export const nextMappingPath = (layout: StoreLayout): string => join(dirname(layout.live), `${basename(layout.live)}.next`);

/** Removes a leftover live.next/ (a crash before or after an exchange: live/ is what counts). */
export function removeNextMapping(layout: StoreLayout): void {
  rmSync(nextMappingPath(layout), { recursive: true, force: true });
}

/**
 * Builds live.next/ from live/ with `links` (root key -> link target) replaced or added, and returns its
 * path. Not synced here: the caller makes it durable with the rest of what the exchange depends on, in one
 * batch (commit-generation.ts), before exchangeNextMapping. Built inside the same serialized step as the
 * exchange, so live/ cannot change in between.
 */
export function buildNextMapping(layout: StoreLayout, links: ReadonlyMap<string, string>): string {
  const next = nextMappingPath(layout);
  rmSync(next, { recursive: true, force: true });
  const liveFd = openSync(layout.live, fsc.O_RDONLY | fsc.O_DIRECTORY | fsc.O_NOFOLLOW);
  try {
    mkdirSync(next, { mode: 0o700 });
    chmodSync(next, fstatSync(liveFd).mode & 0o7777);
    for (const name of readdirSync(layout.live)) {
      if (name.startsWith('.')) continue; // prepared links of an older layout are never part of PRIME
      if (!links.has(name)) symlinkSync(readlinkSync(join(layout.live, name)), join(next, name));
    }
    for (const [rootKey, target] of links) symlinkSync(target, join(next, rootKey));
  } finally {
    closeSync(liveFd);
  }
  return next;
}

/** Exchanges a durable live.next/ with live/ in one renameat2, and makes the exchange durable. */
export function exchangeNextMapping(layout: StoreLayout): void {
  const parent = dirname(layout.live);
  const parentFd = openSync(parent, fsc.O_RDONLY | fsc.O_DIRECTORY | fsc.O_NOFOLLOW);
  try {
    renameat2(parentFd, basename(nextMappingPath(layout)), parentFd, basename(layout.live), RENAME_EXCHANGE);
    fsyncFd(parentFd);
  } finally {
    closeSync(parentFd);
  }
}
