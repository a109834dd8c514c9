// The Checks of a rebased candidate (Collapse spec.rebase): when a node-agent shows a Collapse Rebasing with
// status.rebase, the controller creates one Check per check of the Policy governing the World's Roots, with
// spec.subject the rebased candidate, so the checks run on exactly the bytes the Collapse will commit.
// Named <collapse>-<check>-<10 hex of the candidate> (a later rebase of the same Collapse onto a newer PRIME
// gets its own), bound and owned like the World's own Checks. Created idempotently.
import type { ObjectCache } from '../kube/informer.js';
import type { Check } from '../crds/index.js';
import { API_VERSION } from './api-refs.js';
import type { CheckCreator } from './world-checks.js';

const MAX_NAME = 253;

/** The Check object name for one check of a Collapse's rebased candidate (a DNS subdomain of at most 253 characters). */
export function rebaseCheckName(collapse: string, check: string, candidate: string): string {
  const tail = `-${check}-${candidate.replace(/^sha256:/, '').slice(0, 10)}`;
  const head = collapse.slice(0, MAX_NAME - tail.length).replace(/[-.]+$/, '');
  return `${head}${tail}`;
}

/** Creates each Check of the rebased candidate that the cache does not hold yet; returns the names created. */
export async function ensureRebaseChecks(
  create: CheckCreator,
  checks: ObjectCache<Pick<Check, 'spec'>>,
  collapse: { name: string; namespace: string },
  world: { name: string; uid: string },
  candidate: string,
  required: readonly string[],
): Promise<string[]> {
  const made: string[] = [];
  for (const check of required) {
    const name = rebaseCheckName(collapse.name, check, candidate);
    if (checks.get(`${collapse.namespace}/${name}`)) continue;
    await create({
      apiVersion: API_VERSION,
      kind: 'Check',
      metadata: {
        name,
        namespace: collapse.namespace,
        ownerReferences: [{ apiVersion: API_VERSION, kind: 'World', name: world.name, uid: world.uid, blockOwnerDeletion: true }],
      },
      spec: { worldRef: world.name, name: check, worldUID: world.uid, subject: candidate },
    });
    made.push(name);
  }
  return made;
}
