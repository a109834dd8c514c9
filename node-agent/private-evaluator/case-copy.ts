// A case lease's two copies. Copy-in: a directory of the worker's copy into the case view, owned by the
// candidate. Copy-out: the case view back over that directory, owned by the worker. Both take the frozen
// input's rules (freeze-tree.ts: ordinary files and directories, one link each, no special bits, no
// xattrs, no mount inside, nothing changing while read) and accept one thing more, a symbolic link whose
// target is relative, stays inside the case and has no ".." after a name. Anything else is a case refusal,
// which the worker broker turns into a protocol violation.
//
// The worker can write below its copy while the node-agent works there, so every path into it is opened
// beneath the copy's top with no link in any component, and a copy reads entries through its open top.
// Copy-out never leaves the worker's directory half written: the case view is copied into a staging
// directory of the node-agent's first, then exchanged with the worker's directory by one
// renameat2(RENAME_EXCHANGE) between two directory descriptors, then the old tree is removed. A failure
// before the exchange leaves the worker's directory as it was; after it, the directory is the whole copy.
import { closeSync, constants as fsc, openSync, rmSync } from 'node:fs';
import { join, posix } from 'node:path';
import * as native from '../../native/index.js';
import { walkTreeSync } from '../store/walk-tree-sync.js';
import { copyTree, identityOf } from './freeze-tree.js';

export class CaseRefused extends Error {
  constructor(readonly path: string, why: string) {
    super(`the case cannot be copied: ${path === '' ? 'its top' : path}: ${why}`);
    this.name = 'CaseRefused';
  }
}

/** Why a link at `rel` (relative to the case's top) pointing at `target` may not be copied; undefined when it may. */
export function caseLinkProblem(rel: string, target: string): string | undefined {
  if (target === '' || target.includes('\0')) return 'is a link with an empty target';
  if (target.startsWith('/')) return `is a link to an absolute path (${target})`;
  let depth = posix.dirname(rel) === '.' ? 0 : posix.dirname(rel).split('/').length;
  let named = false;
  for (const part of target.split('/')) {
    if (part === '' || part === '.') continue;
    if (part === '..') {
      if (named) return `is a link with ".." after a name (${target})`;
      depth -= 1;
      if (depth < 0) return `is a link that leaves the case (${target})`;
    } else {
      named = true;
      depth += 1;
    }
  }
  return undefined;
}

const caseRules = { linkProblem: caseLinkProblem, refuse: (rel: string, why: string) => new CaseRefused(rel, why) };

/** Runs `f` with a directory fd of `base`, a path the node-agent made (the worker's copy, a case view). */
function withDir<T>(base: string, f: (fd: number) => T): T {
  const fd = openSync(base, fsc.O_RDONLY | fsc.O_DIRECTORY | fsc.O_NOFOLLOW);
  try {
    return f(fd);
  } finally {
    closeSync(fd);
  }
}

/**
 * Copies the case at `rel` beneath `base` into `dst` (which must not exist), owned by `owner`; returns the
 * identity of what was read. `rel` is reached without following any link (the worker can write below `base`).
 */
export function copyCase(base: string, rel: string, dst: string, owner: number): string {
  return withDir(base, (fd) => identityOf(copyTree(rel, dst, owner, { ...caseRules, beneath: fd })));
}

/** The identity of the case at `rel` beneath `base` as it stands now (owners left out); none when it cannot be reached without a link or the walk finds a problem. */
export function measureCase(base: string, rel: string): string | undefined {
  return withDir(base, (baseFd) => {
    let fd: number;
    try {
      fd = native.openBeneath(baseFd, rel, fsc.O_RDONLY | fsc.O_DIRECTORY);
    } catch {
      return undefined;
    }
    try {
      const walked = walkTreeSync(`/proc/self/fd/${fd}`);
      if (walked.problems.length > 0 || walked.root.isMountPoint) return undefined;
      return identityOf(walked.manifest);
    } finally {
      native.closeFd(fd);
    }
  });
}

/**
 * Copies the case view `view` over the case at `rel` beneath `base`, owned by `owner`: into `staging/name`
 * first (a directory of the node-agent's on the same filesystem), then one exchange between that and the
 * case through directory fds (the case's parent opened beneath `base` without following links), then the
 * old tree removed from staging. Returns the new identity.
 */
export function copyOut(view: string, base: string, rel: string, owner: number, staging: string, name: string): string {
  const staged = join(staging, name);
  let identity: string;
  try {
    identity = withDir(view, (fd) => identityOf(copyTree('.', staged, owner, { ...caseRules, beneath: fd })));
  } catch (err) {
    rmSync(staged, { recursive: true, force: true });
    throw err;
  }
  try {
    withDir(base, (baseFd) => {
      const parentRel = posix.dirname(rel);
      const parentFd = parentRel === '.' ? baseFd : native.openBeneath(baseFd, parentRel, fsc.O_RDONLY | fsc.O_DIRECTORY);
      try {
        withDir(staging, (stagingFd) => native.renameat2(stagingFd, name, parentFd, posix.basename(rel), native.RENAME_EXCHANGE));
      } finally {
        if (parentFd !== baseFd) native.closeFd(parentFd);
      }
    });
  } finally {
    // The old tree after the exchange, or the unused copy when it failed.
    rmSync(staged, { recursive: true, force: true });
  }
  return identity;
}
