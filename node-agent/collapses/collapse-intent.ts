// The record a collapse writes before it stages anything, the paths it names, and the test hooks. Every
// path a collapse touches is derived here, so the collapse and its crash recovery agree on them.
import { join } from 'node:path';
import { generationDir, liveLinkPath, type StoreLayout } from '../store/store-layout.js';

export const COLLAPSE_INTENT_KIND = 'collapse';

export interface CollapseIntent {
  rootName: string;
  rootKey: string;
  baseGeneration: number;
  baseGenerationId: string;
  baseDigest: string;
  /** staging/collapse-<intent id>: where the next payload is built (as <staging>/payload). */
  staging: string;
  /**
   * The generation the collapse may publish: planned before the intent is written (present in every intent
   * of this agent; an older agent's intent may lack them when it stopped before staging).
   */
  generation?: number;
  generationId?: string;
  digest?: string;
}

/** The intent of a collapse of one or more Roots, committed in one exchange. */
export interface CollapseSetIntent {
  roots: CollapseIntent[];
}

/** An intent row's data: the set format, or the single-Root format written before it. */
export function asSetIntent(data: CollapseSetIntent | CollapseIntent): CollapseSetIntent {
  return 'roots' in data && Array.isArray(data.roots) ? data : { roots: [data as CollapseIntent] };
}

export const stagingDirFor = (layout: StoreLayout, intentId: string): string => join(layout.staging, `collapse-${intentId}`);

/** The prepared link that is exchanged with live/<rootKey>: a sibling in live/, so one renameat2 swaps them. */
export const nextLinkPath = (layout: StoreLayout, rootKey: string): string => join(layout.live, `.next-${rootKey}`);
export const nextLinkName = (rootKey: string): string => `.next-${rootKey}`;

export function collapsePaths(layout: StoreLayout, i: CollapseIntent): { liveLink: string; nextLink: string; generationDir?: string } {
  return {
    liveLink: liveLinkPath(layout, i.rootKey),
    nextLink: nextLinkPath(layout, i.rootKey),
    ...(i.generationId ? { generationDir: generationDir(layout, i.generationId) } : {}),
  };
}

/**
 * Steps a collapse reports to its test hook, in the order they happen. The marker of the new generation
 * is written and synced before the exchange: recovery trusts a live link to a new generation only when
 * that generation's marker (and its walk) agrees with the intent. At `after-marker-sync` the markers are
 * in place and mounted, and the batch of fsyncs that makes them durable has begun; the exchange waits for
 * it (commit-generation.ts).
 */
export const COLLAPSE_STEPS = ['after-intent', 'after-stage', 'after-verify', 'after-layer-publish', 'after-marker-sync', 'before-exchange', 'after-exchange', 'after-db'] as const;
export type CollapseStep = (typeof COLLAPSE_STEPS)[number];

export interface CollapseHooks {
  afterStep?: (step: CollapseStep) => Promise<void> | void;
}
