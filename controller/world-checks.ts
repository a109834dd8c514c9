// The Checks a Captured World needs: one per check of the Policy governing its Roots, named
// <world>-<check>, owned by the World. Created idempotently (AlreadyExists is success); the summary
// "passed/required" for the World's CHECKS column is computed from the Checks' verdicts.
import type { KubeAccess } from '../kube/kube-access.js';
import { governingPolicy, type GoverningCandidate } from '../core/policy/governing.js';
import type { Check, PolicySpec } from '../crds/index.js';
import { isAlreadyExists } from '../kube/api-error.js';
import { collectionPath } from '../kube/api-paths.js';
import { httpClientFor } from '../kube/http.js';
import type { ObjectCache } from '../kube/informer.js';
import { API_VERSION, refs } from './api-refs.js';

/** What the required checks read of a Policy. */
export type PolicyChecksView = GoverningCandidate & { spec: Pick<PolicySpec, 'checks'> };

/** What the summary reads of a Check. */
type CheckView = Pick<Check, 'spec' | 'status'>;

/** Names of the checks the Policy governing any of the Roots requires (policy order); [] when none governs. */
export function requiredChecks(policies: readonly PolicyChecksView[], roots: readonly string[]): string[] {
  return (governingPolicy(policies, roots)?.spec.checks ?? []).map((c) => c.name);
}

/** The Check object name for a World's required check. */
export function checkObjectName(world: string, check: string): string {
  return `${world}-${check}`;
}

/** The controller-created Check of a World's required check, when it is the one for that World and check. */
function requiredCheck(checks: ObjectCache<CheckView>, namespace: string, world: string, name: string): CheckView | undefined {
  const c = checks.get(`${namespace}/${checkObjectName(world, name)}`);
  return c?.spec.worldRef === world && c.spec.name === name ? c : undefined;
}

/** "passed/required" over the controller-created Checks of the World (revalidations are not counted). */
export function checksSummary(checks: ObjectCache<CheckView>, namespace: string, world: string, required: readonly string[]): string {
  const passed = required.filter((name) => requiredCheck(checks, namespace, world, name)?.status?.verdict === 'PASS').length;
  return `${passed}/${required.length}`;
}

export type CheckCreator = (obj: Record<string, unknown> & { metadata: { name: string; namespace: string } & Record<string, unknown> }) => Promise<void>;

/** Creates an object with POST; an object of that name already existing is success. */
export function checkCreator(kc: KubeAccess): CheckCreator {
  const http = httpClientFor(kc);
  return async (obj) => {
    try {
      await http.request({ method: 'POST', path: collectionPath(refs.Check, obj.metadata.namespace), body: obj });
    } catch (err) {
      if (!isAlreadyExists(err)) throw err;
    }
  };
}

/**
 * Creates each required Check the informer does not hold yet. One of that name bound to an earlier World of
 * this name (left when that World was replaced while no controller ran) is removed first: it can never run
 * (WORLD_REPLACED), and the replacement needs its own.
 */
export async function ensureChecks(
  create: CheckCreator,
  checks: ObjectCache<CheckView>,
  world: { name: string; namespace: string; uid: string },
  required: readonly string[],
  removeStale: (name: string) => Promise<void>,
): Promise<string[]> {
  const made: string[] = [];
  for (const check of required) {
    const name = checkObjectName(world.name, check);
    const existing = checks.get(`${world.namespace}/${name}`);
    const stale = existing?.spec.worldUID !== undefined && existing.spec.worldUID !== world.uid;
    if (existing && !stale) continue;
    if (stale) await removeStale(name);
    await create({
      apiVersion: API_VERSION,
      kind: 'Check',
      metadata: {
        name,
        namespace: world.namespace,
        ownerReferences: [{ apiVersion: API_VERSION, kind: 'World', name: world.name, uid: world.uid, blockOwnerDeletion: true }],
      },
      // Bound to this World from the start: a later World of the same name is never checked by it.
      spec: { worldRef: world.name, name: check, worldUID: world.uid },
    });
    made.push(name);
  }
  return made;
}

/**
 * The World's ChecksPassed condition from its required Checks on the current candidate: True when every
 * one passed, False naming the first that failed or was refused, Unknown while any is pending. With no
 * check required it is True (NoChecksRequired): the collapse then needs no evaluation either.
 */
export function checksPassedCondition(
  checks: ObjectCache<CheckView>,
  namespace: string,
  world: string,
  required: readonly string[],
  candidate: string | undefined,
): { status: 'True' | 'False' | 'Unknown'; reason: string; message: string } {
  if (required.length === 0) return { status: 'True', reason: 'NoChecksRequired', message: 'the governing Policy requires no check' };
  const pending: string[] = [];
  for (const name of required) {
    const c = requiredCheck(checks, namespace, world, name);
    const verdict = c?.status?.subject === candidate ? c?.status?.verdict : undefined;
    if (verdict === 'FAIL') return { status: 'False', reason: 'CheckFailed', message: `check ${name} failed on candidate ${candidate ?? ''}` };
    if (verdict === 'REFUSED') return { status: 'False', reason: 'CheckRefused', message: `check ${name} was refused on candidate ${candidate ?? ''}` };
    if (verdict !== 'PASS') pending.push(name);
  }
  if (pending.length > 0) return { status: 'Unknown', reason: 'ChecksPending', message: `waiting for ${pending.join(', ')}` };
  return { status: 'True', reason: 'ChecksPassed', message: `all ${required.length} required checks passed on candidate ${candidate ?? ''}` };
}

/** Check reasons that mean its evidence could not be admitted at all (a private-evaluator report or boundary). */
export const NOT_ADMISSIBLE_REASONS: ReadonlySet<string> = new Set(['REPORT_UNTRUSTED', 'PRIVATE_EVALUATOR_BOUNDARY_FAILED', 'PRIVATE_INPUT_REFUSED']);

/**
 * The World's Degraded condition: True when a required Check on the current candidate ended without
 * admissible evidence (its report UNTRUSTED, its boundary failed, its input refused) — not a verdict about
 * the candidate, but a run that could not produce one, which no collapse can use. False otherwise.
 */
export function degradedCondition(
  checks: ObjectCache<CheckView>,
  namespace: string,
  world: string,
  required: readonly string[],
  candidate: string | undefined,
): { status: 'True' | 'False'; reason: string; message: string } {
  for (const name of required) {
    const c = requiredCheck(checks, namespace, world, name);
    const reason = c?.status?.subject === candidate ? c?.status?.reason : undefined;
    if (reason !== undefined && NOT_ADMISSIBLE_REASONS.has(reason)) {
      return { status: 'True', reason: 'CheckNotAdmissible', message: `check ${name} on candidate ${candidate ?? ''} has no admissible evidence: ${reason}${c?.status?.message ? ` (${c.status.message})` : ''}` };
    }
  }
  return { status: 'False', reason: 'ChecksAdmissible', message: required.length === 0 ? 'the governing Policy requires no check' : 'no required check ended without admissible evidence' };
}
