// The record an adoption writes before it moves anything, and the places it names. Every path an
// adoption touches is derived here, so the adoption and its crash recovery agree on them.
import { basename, dirname, join } from 'node:path';
import { generationDir, liveLinkPath, payloadDir, type StoreLayout } from './store-layout.js';

export const ADOPT_INTENT_KIND = 'adopt-root';

export interface AdoptIntent {
  name: string;
  hostPath: string;
  rootKey: string;
  generationId: string;
  generation: number;
  digest: string;
  /** metadata.uid of the Root object being adopted; absent in an intent a store client wrote without one. */
  objectUid?: string;
  /** Where the tree is moved (or copied) first: staging/<intent id>. */
  staging: string;
  /** Where the original waits, beside hostPath, when it must be copied across filesystems. */
  detached: string;
}

export function adoptIntentFor(
  layout: StoreLayout,
  id: string,
  a: { name: string; hostPath: string; rootKey: string; generationId: string; digest: string; objectUid?: string; generation?: number },
): AdoptIntent {
  return {
    ...a,
    // 1, or one past a released root's last generation (its history keeps the numbers below).
    generation: a.generation ?? 1,
    staging: join(layout.staging, id),
    detached: join(dirname(a.hostPath), `.${basename(a.hostPath)}.worldline-adopt-${id}`),
  };
}

export interface AdoptPaths {
  generationDir: string;
  payload: string;
  liveLink: string;
}

export function adoptPaths(layout: StoreLayout, i: AdoptIntent): AdoptPaths {
  return {
    generationDir: generationDir(layout, i.generationId),
    payload: payloadDir(layout, i.generationId),
    liveLink: liveLinkPath(layout, i.rootKey),
  };
}

/** Steps an adoption reports to its test hook, in order. */
export type AdoptStep = 'intent-recorded' | 'moved' | 'verified' | 'promoted' | 'live-published' | 'host-linked';

export interface AdoptHooks {
  afterStep?: (step: AdoptStep) => Promise<void> | void;
}
