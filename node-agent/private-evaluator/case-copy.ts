// A case lease's two copies. Copy-in: a directory of the worker's copy into the case view, owned by the
// candidate. Copy-out: the case view back over that directory, owned by the worker. Both take the frozen
// input's rules (freeze-tree.ts: ordinary files and directories, one link each, no special bits, no
// xattrs, no mount inside, nothing changing while read) and accept one thing more, a symbolic link whose
// target is relative, stays inside the case and has no ".." after a name. Anything else is a case refusal,
// which the worker broker turns into a protocol violation.
//
// Copy-out never leaves the worker's directory half written: the case view is copied into a sibling of it
// first, then the two are exchanged by one renameat2(RENAME_EXCHANGE) through a descriptor of their parent
// opened without following any link, then the old tree is removed. A failure before the exchange leaves
// the worker's directory as it was; after it, the directory is the whole copy.
import { closeSync, constants as fsc, openSync, rmSync } from 'node:fs';
import { basename, dirname, join, posix } from 'node:path';
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

/** Copies the case at `src` into `dst` (which must not exist), owned by `owner`; returns the identity of what was read. */
export function copyCase(src: string, dst: string, owner: number): string {
  return identityOf(copyTree(src, dst, owner, caseRules));
}

/** The identity of a case directory as it stands now (owners left out); a tree the rules refuse has none. */
export function measureCase(dir: string): string | undefined {
  const walked = walkTreeSync(dir);
  if (walked.problems.length > 0 || walked.root.isMountPoint) return undefined;
  return identityOf(walked.manifest);
}

/**
 * Copies the case view `view` over the worker's directory `target`, owned by `owner`: into a sibling
 * first, then one exchange, then the old tree removed. Returns the new identity.
 */
export function copyOut(view: string, target: string, owner: number, scratchName: string): string {
  const parent = dirname(target);
  const staged = join(parent, scratchName);
  let identity: string;
  try {
    identity = copyCase(view, staged, owner);
  } catch (err) {
    rmSync(staged, { recursive: true, force: true });
    throw err;
  }
  const fd = openSync(parent, fsc.O_RDONLY | fsc.O_DIRECTORY | fsc.O_NOFOLLOW);
  try {
    native.renameat2(fd, scratchName, fd, basename(target), native.RENAME_EXCHANGE);
  } catch (err) {
    rmSync(staged, { recursive: true, force: true });
    throw err;
  } finally {
    closeSync(fd);
  }
  rmSync(staged, { recursive: true, force: true });
  return identity;
}
