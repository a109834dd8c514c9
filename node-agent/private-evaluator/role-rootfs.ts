// A private-evaluator role's root filesystem: the system tree every sandbox has (sandbox/rootfs.ts:
// read-only system directories, /proc, a minimal /dev, private /tmp), an empty /run, and exactly the
// binds the role is given — the frozen input or its copy, the staged verifiers, the report directory and
// a broker socket for the roles that get them. Then sealed read-only. Nothing else of the host or store.
import { closeSync, mkdirSync, openSync } from 'node:fs';
import { dirname, join } from 'node:path';
import * as native from '../../native/index.js';
import { mountSystemTree, sealRootfs, unmountAllUnder } from '../sandbox/rootfs.js';

export interface RoleBind {
  /** Host path: a directory, or a file or socket when `file`. */
  source: string;
  /** Absolute path inside the role. */
  target: string;
  readonly: boolean;
  file?: boolean;
}

export function assembleRoleRootfs(rf: string, binds: readonly RoleBind[], tmpSize = '256m'): void {
  mkdirSync(rf, { recursive: true, mode: 0o755 });
  mountSystemTree(rf, tmpSize);
  mkdirSync(join(rf, 'run'), { mode: 0o755 });
  for (const b of binds) {
    if (!b.target.startsWith('/') || b.target.split('/').some((c) => c === '..' || c === '.')) throw new RangeError(`bind target "${b.target}" is not a clean absolute path`);
    const at = join(rf, b.target);
    if (b.file) {
      mkdirSync(dirname(at), { recursive: true, mode: 0o755 });
      closeSync(openSync(at, 'a', 0o600));
    } else {
      mkdirSync(at, { recursive: true, mode: 0o755 });
    }
    native.bindMount(b.source, at, { readonly: b.readonly, recursive: false, nosuid: true, nodev: true });
  }
  sealRootfs(rf);
}

/** Unmounts everything under a role's root filesystem; returns mounts that could not be removed. */
export function unmountRoleRootfs(rf: string): string[] {
  return unmountAllUnder(rf);
}
