// The controller's part of a Root's status: a Root is accepted unless another Root on the same node
// already manages the same directory or one nested in or around it (the older Root keeps it).
import type { ObjectMeta, RootSpec, RootStatus } from '../crds/index.js';
import { setCondition, type Condition } from '../kube/conditions.js';
import { ControllerConditions, Reasons } from './reasons.js';

/** What the Root's controller status reads (a Pick of the parsed Root). */
export interface RootObj {
  metadata: Pick<ObjectMeta, 'name' | 'generation' | 'creationTimestamp'>;
  spec: Pick<RootSpec, 'nodeName' | 'path'>;
  status?: Pick<RootStatus, 'conditions'>;
}

export interface RootControllerStatus {
  conditions: Condition[];
}

function normal(p: string): string {
  const trimmed = p.replace(/\/+$/, '');
  return trimmed === '' ? '/' : trimmed;
}

/** True when one path is the other or lies beneath it. */
export function pathsOverlap(a: string, b: string): boolean {
  const x = normal(a);
  const y = normal(b);
  if (x === y || x === '/' || y === '/') return true;
  return x.startsWith(`${y}/`) || y.startsWith(`${x}/`);
}

function olderFirst(a: RootObj, b: RootObj): number {
  const ta = a.metadata.creationTimestamp ? new Date(a.metadata.creationTimestamp).getTime() : Number.MAX_SAFE_INTEGER;
  const tb = b.metadata.creationTimestamp ? new Date(b.metadata.creationTimestamp).getTime() : Number.MAX_SAFE_INTEGER;
  if (ta !== tb) return ta - tb;
  return (a.metadata.name ?? '').localeCompare(b.metadata.name ?? '');
}

/** The Root that wins the path this one overlaps, if any. */
export function conflictingRoot(root: RootObj, all: readonly RootObj[]): RootObj | undefined {
  const node = root.spec.nodeName;
  const path = root.spec.path;
  const rivals = all
    .filter((o) => o.metadata.name !== root.metadata.name && o.spec.nodeName === node && pathsOverlap(o.spec.path, path))
    .sort(olderFirst);
  const first = rivals[0];
  if (first && olderFirst(first, root) < 0) return first;
  return undefined;
}

export function computeRootStatus(root: RootObj, all: readonly RootObj[], now: Date): RootControllerStatus {
  const prev = root.status?.conditions?.filter((c) => c.type === ControllerConditions.Accepted);
  const rival = conflictingRoot(root, all);
  const cond = rival
    ? {
        type: ControllerConditions.Accepted,
        status: 'False' as const,
        reason: Reasons.RootPathConflict.reason,
        message: `Root "${rival.metadata.name ?? ''}" already manages ${rival.spec.path} on node "${rival.spec.nodeName}", which overlaps ${root.spec.path}`,
      }
    : {
        type: ControllerConditions.Accepted,
        status: 'True' as const,
        reason: Reasons.RootAccepted.reason,
        message: `no other Root manages ${root.spec.path} on node "${root.spec.nodeName}"`,
      };
  return { conditions: setCondition(prev, cond, root.metadata.generation, now) };
}
