// Collapse: the request to promote a World's candidate (or return to its checkpoint) into the live Roots.
// The node-agent prepares a transaction, a collapse decision authorizes it only when every identity matches
// and the evidence is fresh, and a signed receipt is appended to the ledger.
import { z } from 'zod';
import {
  signedStatement,
  AGE_COLUMN,
  cel,
  conditions,
  digest,
  listType,
  message,
  objectName,
  objectUid,
  unchangedFields,
  WORLD_UID_SET_ONCE,
  observedGeneration,
  outcomeCode,
  resourceSchema,
  type CrdDefinition,
} from './common.js';
import { COLLAPSE_MODES, COLLAPSE_PHASES, TRANSACTION_STATES } from './outcomes.js';

export const CollapseSpecSchema = cel(
  z
    .object({
      worldRef: objectName('Name of the World (in this namespace) to collapse.'),
      mode: z
        .enum(COLLAPSE_MODES)
        .default('Candidate')
        .describe('Candidate: promote the captured, checked candidate into PRIME. CheckpointReturn: return the Roots to the generation the World was forked from.'),
      rebase: z
        .boolean()
        .default(false)
        .describe(
          'When PRIME moved since the World forked (another Collapse committed first), rebase the candidate instead of refusing PRIME_MOVED: ' +
            'the node-agent applies the candidate\'s change to PRIME as it is now (a new candidate, with its own identity, shown in status.rebase), ' +
            'the controller creates Checks of the governing Policy for exactly those bytes, and the Collapse commits only on their evidence. ' +
            'A path changed on both sides since the World\'s base is refused CONFLICT, naming it. Mode Candidate only; false keeps PRIME_MOVED.',
        ),
      worldUID: objectUid(
        'uid of the one World this Collapse may act on. The controller sets it when it first sees the World named by worldRef (give it at creation to pin the World you reviewed); ' +
          'set once, never changed. A World of that name with another uid is refused by name (WORLD_REPLACED), never collapsed. ' +
          'It is spec, not status: it is part of what the Collapse authorizes, and a uid cannot be observed again once its World is gone.',
      ).optional(),
    })
    .describe('Which World to collapse and how. Immutable, except that worldUID is set once.'),
  unchangedFields(['worldRef', 'mode', 'rebase'], 'spec is immutable: create a new Collapse instead of editing this one'),
  WORLD_UID_SET_ONCE('Collapse'),
);

export const CollapseStatusSchema = z
  .object({
    phase: z
      .enum(COLLAPSE_PHASES)
      .optional()
      .describe(
        'Waiting (for its World: WORLD_NOT_FOUND, WORLD_NOT_BOUND), Queued (behind older Collapses of the same Roots, see queuePosition), ' +
          'Rebasing (spec.rebase: waiting for the checks of the rebased candidate), Preparing, Authorized, Committed or Denied (see reason and decision.reasons). ' +
          'The node-agent holds Preparing and Authorized for --collapse-status-hold-ms (default 250 ms): a quicker collapse goes from its binding straight to Committed or Denied; ' +
          'they are written at once when the controller\'s grant is required.',
      ),
    queuePosition: z
      .int()
      .min(1)
      .optional()
      .describe('While Queued: how many Collapses of the same Roots on this node were created before this one and are not finished yet. Collapses are served in order of creation.'),
    rebase: z
      .object({
        from: digest('The World\'s captured candidate (what the agent produced).'),
        candidate: digest('The rebased candidate: the same change applied to PRIME as it is now. Checks and the collapse decision are about these bytes.'),
        onto: listType(
          z
            .array(
              z
                .object({
                  root: z.string().max(253).describe('Root name.'),
                  generation: z.int().min(0).describe('PRIME generation the change was applied to.'),
                  digest: digest('Digest of that generation.'),
                })
                .describe('One Root\'s new base.'),
            )
            .max(16),
          'map',
          ['root'],
        ).describe('The generations the candidate was rebased onto, one per Root.'),
      })
      .optional()
      .describe('Set when spec.rebase formed a rebased candidate (PRIME had moved since the World\'s base); the receipt records the same three things.'),
    transaction: z
      .object({
        id: z.string().max(128).describe('Transaction id in the node store.'),
        state: z.enum(TRANSACTION_STATES).describe('PREPARED, AUTHORIZED, COMMITTED or DENIED.'),
      })
      .optional()
      .describe('The store transaction carrying out the collapse.'),
    decision: z
      .object({
        authorized: z.boolean().describe('Whether the collapse decision authorized the commit.'),
        reasons: listType(z.array(outcomeCode('One outcome code.')).max(32), 'atomic')
          .optional()
          .describe('Outcome codes explaining a denial (e.g. PRIME_MOVED, EVIDENCE_STALE, CONFLICT).'),
      })
      .optional()
      .describe('Result of the collapse decision.'),
    result: listType(
      z
        .array(
          z
            .object({
              root: z.string().max(253).describe('Root name.'),
              fromGeneration: z.int().min(0).describe('PRIME generation before the commit.'),
              toGeneration: z.int().min(0).describe('PRIME generation after the commit.'),
              digest: digest('Digest of the new PRIME generation.'),
            })
            .describe('How one Root advanced.'),
        )
        .max(16),
      'map',
      ['root'],
    )
      .optional()
      .describe('New PRIME generations, one per Root, after a commit.'),
    receipt: z
      .object({
        id: z.string().max(128).describe('Receipt id.'),
        sequence: z.int().min(0).describe('Position of the receipt in the node ledger.'),
        previous: z.string().max(128).optional().describe('Digest of the previous receipt (hash chain); absent for the first.'),
        signature: z.string().max(1024).describe('Ed25519 signature over the receipt id (128 hex characters).'),
        keyId: z.string().max(128).describe('Identity of the signing key.'),
      })
      .optional()
      .describe('Signed receipt appended to the tamper-evident ledger.'),
    attestation: signedStatement(
      'The receipt as a statement signed by the node (predicate https://worldline.dev/attestations/collapse-receipt/v1; the ' +
        'receipt body, about its own canonical bytes, whose digest is the receipt id).',
    ).optional(),
    grant: z
      .object({
        transaction: z.string().max(128).describe('The node-agent transaction this answers (status.transaction.id when the controller read it).'),
        outcome: z.enum(['Issued', 'Refused']).describe('Issued: the evidence graph verified and a grant was signed. Refused: it did not (see reason).'),
        reason: outcomeCode('Why the graph was refused (EVIDENCE_MISSING, EVIDENCE_EXTRA, EVIDENCE_DUPLICATE, EVIDENCE_WRONG_ROLE, EVIDENCE_SUBSTITUTED, ...).').optional(),
        message: message('What was refused, and where.').optional(),
        roster: listType(z.array(z.string().max(253)).max(64), 'atomic').optional().describe('The checks the governing Policy requires, as the controller read the Policy.'),
        evidence: listType(
          z
            .array(
              z
                .object({
                  role: z.string().max(64).describe('isolation-observation, isolation-decision, isolation-waiver or check-execution.'),
                  check: z.string().max(253).optional().describe('For a check execution: the check\'s name in the Policy.'),
                  digest: digest('SHA-256 of the statement\'s envelope as its object showed it.'),
                  signers: listType(z.array(z.string().max(253)).max(8), 'atomic').describe('Issuer labels of the distinct trusted keys that signed it.'),
                })
                .describe('One verified statement of the graph.'),
            )
            .max(128),
          'atomic',
        )
          .optional()
          .describe('The statements the controller verified, by role.'),
        digest: z.string().max(71).optional().describe('SHA-256 of the grant envelope.'),
        envelope: z.string().max(65536).optional().describe('The grant: a DSSE envelope of an in-toto statement (predicate https://worldline.dev/attestations/collapse-grant/v1) signed with the controller\'s grant key.'),
      })
      .optional()
      .describe(
        'Written by the controller when it runs with a grant key: its verification of this Collapse\'s evidence graph (check executions, the World\'s isolation ' +
          'observation, decision and waiver, the candidate) against the trust policy and the Policy\'s roster, and the single-use grant the node-agent spends before the exchange.',
      ),
    nodeName: z.string().max(253).optional().describe('Node executing the collapse (copied from the World\'s status.nodeName).'),
    reason: outcomeCode('UPPER_SNAKE outcome of the current phase.').optional(),
    message: message('Human-readable explanation.').optional(),
    observedGeneration: observedGeneration().optional(),
    conditions: conditions('Conditions (WorldFound, Prepared, Authorized, Committed, Ready); each type is owned by one field manager.').optional(),
  })
  .describe('Progress and outcome of the collapse.');

export const CollapseSchema = resourceSchema('Collapse', CollapseSpecSchema, CollapseStatusSchema);

export type CollapseSpec = z.infer<typeof CollapseSpecSchema>;
export type CollapseSpecInput = z.input<typeof CollapseSpecSchema>;
export type CollapseStatus = z.infer<typeof CollapseStatusSchema>;
export type Collapse = z.infer<typeof CollapseSchema>;

export const collapseDefinition: CrdDefinition = {
  kind: 'Collapse',
  listKind: 'CollapseList',
  plural: 'collapses',
  singular: 'collapse',
  scope: 'Namespaced',
  shortNames: ['wlcol'],
  categories: ['worldline'],
  description:
    'Collapse promotes a World\'s checked candidate into the live Roots atomically (or returns them to the World\'s checkpoint) and records a signed receipt.',
  spec: CollapseSpecSchema,
  status: CollapseStatusSchema,
  printerColumns: [
    { name: 'WORLD', type: 'string', jsonPath: '.spec.worldRef', description: 'Collapsed World.' },
    { name: 'MODE', type: 'string', jsonPath: '.spec.mode', description: 'Candidate or CheckpointReturn.' },
    { name: 'PHASE', type: 'string', jsonPath: '.status.phase', description: 'Lifecycle phase.' },
    { name: 'QUEUE', type: 'integer', jsonPath: '.status.queuePosition', description: 'Collapses of the same Roots ahead of this one while Queued.', priority: 1 },
    { name: 'RECEIPT', type: 'string', jsonPath: '.status.receipt.id', description: 'Receipt id once committed.' },
    { name: 'NODE', type: 'string', jsonPath: '.status.nodeName', description: 'Executing node.', priority: 1 },
    { name: 'REASON', type: 'string', jsonPath: '.status.reason', description: 'Outcome code.', priority: 1 },
    AGE_COLUMN,
  ],
  selectableFields: [{ jsonPath: '.status.nodeName' }],
};
