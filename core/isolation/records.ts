// The four closed records of the containment contract (schema version 1): IsolationPolicy,
// IsolationRequest, IsolationObservation and IsolationDecision. Every object refuses unknown fields, every
// enumeration is closed, and every list is duplicate-free and in canonical order, so one value has exactly
// one canonical JSON text and therefore one identity. None of these records authorizes anything.
import { z } from 'zod';
import { controlList, digest, label, orderedUniqueList, TargetSchema } from './fields.js';
import { ISOLATION_OUTCOMES, ISOLATION_REASONS, outcomeFor } from './reasons.js';
import { INTRINSIC_CONTROLS, ISOLATION_LEVELS, ISOLATION_STAGES } from './vocabulary.js';

export const ISOLATION_SCHEMA_VERSION = 1;
const schemaVersion = z.literal(ISOLATION_SCHEMA_VERSION).describe('Version of this record format; only 1 exists.');
const level = (description: string) => z.enum(ISOLATION_LEVELS).describe(description);
const stage = z.enum(ISOLATION_STAGES).describe('Executable stage: agent (a World\'s program) or check (a Check run).');

// ---- IsolationPolicy ---------------------------------------------------------------------------------------

export const StageRuleSchema = z
  .strictObject({
    stage,
    minimumLevel: level('Weakest level the stage accepts (host-yolo < process-limited < os-sandboxed < vm-isolated).'),
    requiredControls: controlList(
      'Controls the stage requires beyond those its level implies, unique and in canonical order. Must include network-denied or network-egress-restricted.',
    ),
    allowHostYolo: z.boolean().describe('Whether host-yolo may be the effective minimum of this stage. A record, never an authorization.'),
  })
  .describe('Isolation rule of one stage.');
export type StageRule = z.infer<typeof StageRuleSchema>;

export const IsolationPolicySchema = z
  .strictObject({
    schemaVersion,
    kind: z.literal('IsolationPolicy'),
    stages: z
      .array(StageRuleSchema)
      .max(ISOLATION_STAGES.length)
      .superRefine((rules, ctx) => {
        let previousRank = -1;
        const seen = new Set<string>();
        for (const [i, rule] of rules.entries()) {
          if (seen.has(rule.stage)) {
            ctx.addIssue({ code: 'custom', path: [i, 'stage'], message: `duplicate rule for stage '${rule.stage}' at index ${i}`, params: { problem: 'DUPLICATE' } });
            return;
          }
          seen.add(rule.stage);
          const rank = ISOLATION_STAGES.indexOf(rule.stage);
          if (rank < previousRank) {
            ctx.addIssue({
              code: 'custom',
              path: [i, 'stage'],
              message: `rule for stage '${rule.stage}' at index ${i} comes after '${rules[i - 1]?.stage}'; canonical order is ${ISOLATION_STAGES.join(', ')}`,
              params: { problem: 'NON_CANONICAL_ORDER' },
            });
            return;
          }
          previousRank = rank;
        }
      })
      .describe('One rule per configured stage, unique by stage and in canonical stage order. An omitted stage is unsupported.'),
  })
  .describe('Trusted per-stage isolation rules. Its identity is the digest of its canonical JSON.');
export type IsolationPolicy = z.infer<typeof IsolationPolicySchema>;

// ---- IsolationRequest --------------------------------------------------------------------------------------

export const IsolationRequestSchema = z
  .strictObject({
    schemaVersion,
    kind: z.literal('IsolationRequest'),
    stage,
    subject: digest('Identity of the source or artifact the stage runs over (e.g. a candidate or PRIME manifest digest).'),
    target: TargetSchema,
    requestedMinimum: level('Weakest level the requester accepts; the effective minimum is the stronger of this and the policy rule.'),
    extraControls: controlList('Controls requested beyond the policy, unique and in canonical order.'),
    hostYoloAcknowledged: z
      .boolean()
      .describe('Whether the requester recorded that it accepts host-yolo. A reported boolean, not trusted consent.'),
  })
  .describe('One exact phase request. Its identity is the digest of its canonical JSON.');
export type IsolationRequest = z.infer<typeof IsolationRequestSchema>;

// ---- IsolationObservation ----------------------------------------------------------------------------------

export const IsolationObservationSchema = z
  .strictObject({
    schemaVersion,
    kind: z.literal('IsolationObservation'),
    backend: label('Name of the backend that ran the stage, as it reports it.'),
    backendVersion: label('Version of that backend, as it reports it.'),
    executionId: label('Identifier of the one execution this observation describes.'),
    requestIdentity: digest('Identity of the exact IsolationRequest this execution served.'),
    policyIdentity: digest('Identity of the exact IsolationPolicy this execution was evaluated under.'),
    subject: digest('Identity of the source or artifact the execution ran over.'),
    target: TargetSchema,
    achievedLevel: level('Level the backend reports it achieved.'),
    enforcedControls: controlList('Controls the backend reports it enforced, unique and in canonical order.'),
    complete: z.boolean().describe('Whether the backend reports that enforcement completed. False is never sufficient.'),
  })
  .describe('What a backend reported after one execution. Unauthenticated: not an attestation, and bound to one request and policy.');
export type IsolationObservation = z.infer<typeof IsolationObservationSchema>;

// ---- IsolationDecision -------------------------------------------------------------------------------------

const nonSufficient = ISOLATION_OUTCOMES.filter((o) => o !== 'reported-sufficient');

export const IsolationDecisionSchema = z
  .strictObject({
    schemaVersion,
    kind: z.literal('IsolationDecision'),
    requestIdentity: digest('Identity of the request evaluated.'),
    policyIdentity: digest('Identity of the policy evaluated.'),
    observationIdentity: digest('Identity of the observation evaluated.').nullable().describe('Identity of the observation evaluated; null when none was supplied.'),
    outcome: z.enum(ISOLATION_OUTCOMES).describe('reported-sufficient, rejected or unsupported. None of them authorizes execution.'),
    reasons: orderedUniqueList(ISOLATION_REASONS, 'reason', 'Stable reason codes, unique and in canonical order; empty exactly when reported-sufficient.'),
    effectiveMinimum: level('The stronger of the requested minimum and the policy rule minimum (the requested minimum when the stage has no rule).'),
    requiredControls: controlList('Union of policy controls, request extra controls and the controls intrinsic to the effective minimum.'),
    missingControls: controlList('Required controls the observation did not report; non-empty exactly when CONTROLS_MISSING is a reason.'),
    authority: z.literal('unauthenticated-local').describe('This decision is a local, unauthenticated report: neither execution authorization nor release evidence.'),
  })
  .superRefine((d, ctx) => {
    const inconsistent = (path: string, message: string): void => {
      ctx.addIssue({ code: 'custom', path: [path], message, params: { problem: 'INCONSISTENT' } });
    };
    const expected = outcomeFor(d.reasons);
    if (d.outcome !== expected) inconsistent('outcome', `outcome '${d.outcome}' does not follow from reasons [${d.reasons.join(', ')}] (expected '${expected}')`);
    if (d.outcome === 'reported-sufficient' && d.observationIdentity === null) inconsistent('observationIdentity', 'a reported-sufficient decision must bind an observation');
    if (d.reasons.includes('OBSERVATION_MISSING') && d.observationIdentity !== null) inconsistent('observationIdentity', 'OBSERVATION_MISSING with an observation identity');
    if ((d.missingControls.length > 0) !== d.reasons.includes('CONTROLS_MISSING')) {
      inconsistent('missingControls', 'missingControls must be non-empty exactly when CONTROLS_MISSING is a reason');
    }
    const required = new Set(d.requiredControls);
    const stray = d.missingControls.find((c) => !required.has(c));
    if (stray !== undefined) inconsistent('missingControls', `missing control '${stray}' is not a required control`);
    const absent = INTRINSIC_CONTROLS[d.effectiveMinimum].find((c) => !required.has(c));
    if (absent !== undefined) inconsistent('requiredControls', `requiredControls omits '${absent}', intrinsic to ${d.effectiveMinimum}`);
  })
  .meta({
    // The part of the consistency contract JSON Schema can state; typed decoding checks all of it.
    allOf: [
      {
        if: { properties: { outcome: { const: 'reported-sufficient' } }, required: ['outcome'] },
        then: { properties: { reasons: { maxItems: 0 }, missingControls: { maxItems: 0 }, observationIdentity: { type: 'string' } } },
        else: { properties: { outcome: { enum: nonSufficient }, reasons: { minItems: 1 } } },
      },
    ],
  })
  .describe('Local, deterministic evaluation of one observation against one request and policy. Unauthenticated; grants nothing.');
export type IsolationDecision = z.infer<typeof IsolationDecisionSchema>;

// ---- Kinds ---------------------------------------------------------------------------------------------------

export const ISOLATION_RECORD_SCHEMAS = {
  IsolationPolicy: IsolationPolicySchema,
  IsolationRequest: IsolationRequestSchema,
  IsolationObservation: IsolationObservationSchema,
  IsolationDecision: IsolationDecisionSchema,
} as const;
export type IsolationRecordKind = keyof typeof ISOLATION_RECORD_SCHEMAS;
export const ISOLATION_RECORD_KINDS = Object.keys(ISOLATION_RECORD_SCHEMAS) as IsolationRecordKind[];

export interface IsolationRecordOf {
  IsolationPolicy: IsolationPolicy;
  IsolationRequest: IsolationRequest;
  IsolationObservation: IsolationObservation;
  IsolationDecision: IsolationDecision;
}
export type IsolationRecord = IsolationRecordOf[IsolationRecordKind];
