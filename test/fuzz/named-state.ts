// Whether an object's status is a named state: a phase from its kind's vocabulary, or a condition whose
// reason is a code documented in docs/codes.md (condition reasons are the CamelCase form of a code).
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { CHECK_PHASES, COLLAPSE_PHASES, ROOT_PHASES, WORLD_PHASES } from '../../crds/outcomes.js';
import type { FuzzKind } from './crd-schema.js';

const PHASES: Record<FuzzKind, readonly string[]> = { Root: ROOT_PHASES, Policy: [], World: WORLD_PHASES, Check: CHECK_PHASES, Collapse: COLLAPSE_PHASES };

/** Terminal World phases: a workload World must end in one of these. */
export const WORLD_TERMINAL = ['Captured', 'Failed', 'Refused'];

export function codesDoc(repoRoot = resolve(import.meta.dirname, '..', '..', '..')): string {
  return readFileSync(join(repoRoot, 'docs', 'codes.md'), 'utf8');
}

/** `RootNotFound` → `ROOT_NOT_FOUND`. */
export function upperSnake(reason: string): string {
  return reason.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toUpperCase();
}

/** The named state of `obj` (`phase Ready`, `Accepted/RootNotFound`), or undefined when it has none. */
export function namedState(kind: FuzzKind, obj: Record<string, any>, doc: string): string | undefined {
  const phase = obj['status']?.['phase'] as string | undefined;
  if (phase !== undefined && PHASES[kind].includes(phase)) return `phase ${phase}`;
  for (const c of (obj['status']?.['conditions'] ?? []) as { type: string; reason?: string }[]) {
    if (c.reason && (doc.includes(`\`${upperSnake(c.reason)}\``) || doc.includes(`\`${c.reason}\``))) return `${c.type}/${c.reason}`;
  }
  return undefined;
}
