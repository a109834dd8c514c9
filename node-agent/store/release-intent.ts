// The record a Root release writes before it touches anything, and the places it names. A release puts
// PRIME back at the host path as a plain directory (store/release-root.ts); its crash recovery
// (store/release-recovery.ts) derives every path from this record alone, so both agree on them.
import { basename, dirname, join } from 'node:path';

export const RELEASE_INTENT_KIND = 'release-root';

export interface ReleaseIntent {
  name: string;
  hostPath: string;
  rootKey: string;
  /** The PRIME generation released (it stays in the store as history). */
  generationId: string;
  generation: number;
  /** Digest of the tree copied out: PRIME's bytes as walked when the release began. */
  digest: string;
  /** Where the copy is built, beside the host path (same filesystem, so it can be exchanged with the link). */
  copy: string;
}

export function releaseIntentFor(id: string, r: Omit<ReleaseIntent, 'copy'>): ReleaseIntent {
  return { ...r, copy: join(dirname(r.hostPath), `.${basename(r.hostPath)}.worldline-release-${id}`) };
}

/** Steps a release reports to its test hook, in order. */
export type ReleaseStep = 'intent-recorded' | 'copied' | 'exchanged' | 'released';

export interface ReleaseHooks {
  afterStep?: (step: ReleaseStep) => Promise<void> | void;
}
