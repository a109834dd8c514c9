// Check: one required check run on exactly the bytes of a World's captured candidate, with verifiers
// staged from the trusted side. The controller creates one per required check; users may create one to
// revalidate against the current PRIME.
import { z } from 'zod';
import {
  signedStatement,
  AGE_COLUMN,
  cel,
  conditions,
  digest,
  dnsLabel,
  exitStatus,
  identity,
  message,
  objectName,
  objectUid,
  unchangedFields,
  WORLD_UID_SET_ONCE,
  observedGeneration,
  outcomeCode,
  resourceSchema,
  timestamp,
  type CrdDefinition,
} from './common.js';
import { CHECK_PHASES, CHECK_VERDICTS } from './outcomes.js';

export const CheckSpecSchema = cel(
  z
    .object({
      worldRef: objectName('Name of the World (in this namespace) whose candidate is checked.'),
      name: dnsLabel('Name of the check in the governing Policy\'s spec.checks.'),
      revalidate: z
        .boolean()
        .default(false)
        .describe('Re-run the check against the current PRIME\'s requirement and verifiers (fresh evidence) instead of the ones the World was forked from.'),
      subject: digest(
        'The candidate to check instead of the World\'s captured one: a rebased candidate (the World\'s change applied to a newer PRIME) formed for a Collapse with spec.rebase. ' +
          'The controller sets it on the Checks it creates for that Collapse. Verifiers are staged from the generation it was rebased onto. ' +
          'A digest that is not a rebase of the World\'s captured candidate on its node is refused (CHECK_SUBJECT_INVALID).',
      ).optional(),
      worldUID: objectUid(
        'uid of the one World this Check may run on. The controller sets it when it first sees the World named by worldRef (and on the Checks it creates); ' +
          'set once, never changed. A World of that name with another uid is refused by name (WORLD_REPLACED), never checked.',
      ).optional(),
    })
    .describe('Which check to run on which World. Immutable, except that worldUID is set once.'),
  unchangedFields(['worldRef', 'name', 'revalidate', 'subject'], 'spec is immutable: create a new Check instead of editing this one'),
  WORLD_UID_SET_ONCE('Check'),
);

export const CheckStatusSchema = z
  .object({
    phase: z.enum(CHECK_PHASES).optional().describe('Waiting (for its World: WORLD_NOT_FOUND, WORLD_NOT_BOUND), Pending, Running, Passed, Failed or Refused (see reason).'),
    verdict: z.enum(CHECK_VERDICTS).optional().describe('PASS, FAIL or REFUSED once the check finished.'),
    subject: digest('Digest of the candidate the check ran on.').optional(),
    requirementHash: identity('Requirement identity (policy, check definition, verifier bytes, profile) the evidence is bound to.').optional(),
    verifierIdentity: identity('Identity of the verifier files staged from the trusted side.').optional(),
    executedVerifierIdentity: identity('Identity of the verifier files actually executed; must equal verifierIdentity.').optional(),
    exit: exitStatus('How the check process ended.').optional(),
    nodeName: z.string().max(253).optional().describe('Node that runs the check (copied from the World\'s status.nodeName).'),
    attestation: signedStatement(
      'The run as a statement signed by the node (predicate https://worldline.dev/attestations/check-execution/v1; subject: ' +
        'the candidate): re-verifiable offline with `kubectl worldline evidence verify --check` and the keys the trust policy pins for the node.',
    ).optional(),
    reason: outcomeCode('UPPER_SNAKE outcome (e.g. VERIFIER_MODIFIED_BY_CANDIDATE, EVIDENCE_STALE).').optional(),
    message: message('Human-readable explanation.').optional(),
    startedAt: timestamp('When the check started.').optional(),
    finishedAt: timestamp('When the check finished.').optional(),
    observedGeneration: observedGeneration().optional(),
    conditions: conditions('Conditions (WorldFound, Started, Completed, Passed); each type is owned by one field manager.').optional(),
  })
  .describe('Evidence of the check run.');

export const CheckSchema = resourceSchema('Check', CheckSpecSchema, CheckStatusSchema);

export type CheckSpec = z.infer<typeof CheckSpecSchema>;
export type CheckSpecInput = z.input<typeof CheckSpecSchema>;
export type CheckStatus = z.infer<typeof CheckStatusSchema>;
export type Check = z.infer<typeof CheckSchema>;

export const checkDefinition: CrdDefinition = {
  kind: 'Check',
  listKind: 'CheckList',
  plural: 'checks',
  singular: 'check',
  scope: 'Namespaced',
  shortNames: ['wlcheck'],
  categories: ['worldline'],
  description:
    'Check is one required check run on exactly the bytes of a World\'s captured candidate, with verifiers taken from the trusted side.',
  spec: CheckSpecSchema,
  status: CheckStatusSchema,
  printerColumns: [
    { name: 'WORLD', type: 'string', jsonPath: '.spec.worldRef', description: 'Checked World.' },
    { name: 'CHECK', type: 'string', jsonPath: '.spec.name', description: 'Check name.' },
    { name: 'PHASE', type: 'string', jsonPath: '.status.phase', description: 'Lifecycle phase.' },
    { name: 'VERDICT', type: 'string', jsonPath: '.status.verdict', description: 'PASS, FAIL or REFUSED.' },
    { name: 'NODE', type: 'string', jsonPath: '.status.nodeName', description: 'Node running the check.', priority: 1 },
    { name: 'REASON', type: 'string', jsonPath: '.status.reason', description: 'Outcome code.', priority: 1 },
    AGE_COLUMN,
  ],
  selectableFields: [{ jsonPath: '.status.nodeName' }],
};
