// Reading a cgroup v2 leaf for its budget preflight (issue 13, item 9): the leaf is opened from the
// cgroup2 mount by descriptor-relative components that may not be links or leave the mount (openBeneath),
// and its mount id (statx) must be the cgroup2 mount's, so no directory of ordinary files — a tmpfs with
// the same names, a bind mount of something else — stands in for the kernel's interface. Every control
// file is read twice with a bounded read; cgroup-v2-budget.ts judges the two reads against the expected
// budget. cgroup.procs and cgroup.kill are opened for writing (nothing is written) to check that the
// caller may place and kill processes there. Nothing is created, changed, moved or killed.
import { closeSync, openSync, readFileSync, readSync } from 'node:fs';
import { Refusal } from '../../core/errors.js';
import { closeFd, constants, openBeneath, statx } from '../../native/index.js';
import { parseMountinfo } from '../store/mount-table.js';
import { errnoCode } from '../store/store-errors.js';
import { judgeV2Leaf, V2_BUDGET_FILES, type LeafTexts, type V2Budget, type V2BudgetCode, type V2BudgetFile } from './cgroup-v2-budget.js';

export type V2PreflightCode = V2BudgetCode | 'CGROUP_V2_LEAF_INVALID' | 'CGROUP_V2_MOUNT_MISMATCH' | 'CGROUP_V2_NOT_WRITABLE';

export class V2PreflightError extends Refusal {
  constructor(
    override readonly code: V2PreflightCode,
    message: string,
  ) {
    super(code, message);
    this.name = 'V2PreflightError';
  }
}

/** What the preflight saw: the leaf's identity and the exact text of each control file. */
export interface V2LeafSnapshot {
  mountId: number;
  ino: bigint;
  texts: LeafTexts;
}

/** A control file is a line or a short list; more than this is not one. */
const MAX_FILE_BYTES = 4096;

function readBounded(leafFd: number, name: string): string | null {
  let fd: number;
  try {
    fd = openBeneath(leafFd, name, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (e) {
    if (errnoCode(e) === 'ENOENT') return null;
    throw new V2PreflightError('CGROUP_V2_LEAF_INVALID', `cannot open ${name} in the leaf: ${(e as Error).message}`);
  }
  try {
    const buf = Buffer.alloc(MAX_FILE_BYTES + 1);
    let off = 0;
    for (;;) {
      let n: number;
      try {
        n = readSync(fd, buf, off, buf.length - off, null);
      } catch (e) {
        throw new V2PreflightError('CGROUP_V2_VALUE_MALFORMED', `${name} cannot be read: ${(e as Error).message}`);
      }
      if (n === 0) break;
      off += n;
      if (off > MAX_FILE_BYTES) throw new V2PreflightError('CGROUP_V2_VALUE_MALFORMED', `${name} holds more than ${MAX_FILE_BYTES} bytes`);
    }
    return buf.subarray(0, off).toString('utf8');
  } finally {
    closeFd(fd);
  }
}

function readAll(leafFd: number): LeafTexts {
  const out = {} as Record<V2BudgetFile, string | null>;
  for (const f of V2_BUDGET_FILES) out[f] = readBounded(leafFd, f);
  return out;
}

/**
 * Inspects the leaf `leaf` (relative to the cgroup2 mount at `mountPoint`) against `want`; returns what it
 * saw, or throws V2PreflightError naming the first problem.
 */
export function inspectV2Leaf(o: { mountPoint: string; leaf: string; want: V2Budget; mountinfo?: string }): V2LeafSnapshot {
  const mounts = parseMountinfo(o.mountinfo ?? readFileSync('/proc/self/mountinfo', 'utf8'));
  // The last mount at that point is the one a path lookup reaches.
  const mount = mounts.filter((m) => m.mountPoint === o.mountPoint).pop();
  if (!mount || mount.fsType !== 'cgroup2') throw new V2PreflightError('CGROUP_V2_MOUNT_MISMATCH', `${o.mountPoint} is not a cgroup2 mount (${mount ? mount.fsType : 'nothing is mounted there'})`);
  let mountFd: number | undefined;
  let leafFd: number | undefined;
  try {
    mountFd = openSync(o.mountPoint, constants.O_RDONLY | constants.O_DIRECTORY);
    try {
      leafFd = openBeneath(mountFd, o.leaf, constants.O_RDONLY | constants.O_DIRECTORY);
    } catch (e) {
      throw new V2PreflightError('CGROUP_V2_LEAF_INVALID', `the leaf ${o.leaf} cannot be opened beneath ${o.mountPoint} without following a link or leaving it: ${(e as Error).message}`);
    }
    const mountSt = statx(mountFd, '', constants.AT_EMPTY_PATH);
    const leafSt = statx(leafFd, '', constants.AT_EMPTY_PATH);
    if (mountSt.mntId !== mount.mountId || leafSt.mntId !== mount.mountId) {
      throw new V2PreflightError('CGROUP_V2_MOUNT_MISMATCH', `the leaf ${o.leaf} is on mount ${leafSt.mntId}, not on the cgroup2 mount ${mount.mountId} at ${o.mountPoint}`);
    }
    for (const f of ['cgroup.procs', 'cgroup.kill']) {
      try {
        closeFd(openBeneath(leafFd, f, constants.O_WRONLY | constants.O_NOFOLLOW));
      } catch (e) {
        throw new V2PreflightError('CGROUP_V2_NOT_WRITABLE', `${f} of the leaf ${o.leaf} cannot be opened for writing: ${(e as Error).message}`);
      }
    }
    // A threaded leaf cannot even be read as a domain (its cgroup.procs refuses reads): its type first.
    const type = readBounded(leafFd, 'cgroup.type');
    if (type !== null && type !== 'domain\n') throw new V2PreflightError('CGROUP_V2_NOT_DOMAIN', `cgroup v2 leaf ${o.leaf}: cgroup.type is ${JSON.stringify(type.trim())}, not domain`);
    const first = readAll(leafFd);
    const second = readAll(leafFd);
    const verdict = judgeV2Leaf(first, second, o.want);
    if (!verdict.ok) throw new V2PreflightError(verdict.code, `cgroup v2 leaf ${o.leaf}: ${verdict.message}`);
    return { mountId: mount.mountId, ino: leafSt.ino, texts: first };
  } finally {
    if (leafFd !== undefined) closeFd(leafFd);
    if (mountFd !== undefined) closeSync(mountFd);
  }
}
