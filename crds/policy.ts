// Policy: the trusted requirements for Roots — which checks a candidate must pass before it may be
// collapsed, the isolation each stage must reach, and default network disposition for worlds.
import { z } from 'zod';
import {
  AGE_COLUMN,
  celChecked,
  conditions,
  dnsLabel,
  duration,
  envName,
  identity,
  isolationControls,
  isolationLevel,
  listType,
  networkSchema,
  objectName,
  observedGeneration,
  resourceSchema,
  uniqueBy,
  type CrdDefinition,
} from './common.js';
import { EXAMINER_INTERPRETER, VERIFIERS_MOUNT } from '../core/private-evaluator/examiner-command.js';
import { CHECK_PROFILES, CHECK_REPORT_FORMATS } from './outcomes.js';

const VERIFIER_DOTDOT = /(^|\/)\.\.(\/|$)/;

export const PolicyCheckSchema = celChecked(
  z
    .object({
      name: dnsLabel('Name of the check, unique within the Policy; Check objects refer to it through spec.name.'),
      command: listType(
        z
          .array(z.string().min(1).max(4096).describe('One argument; must not be empty.'))
          .min(1)
          .max(64),
        'atomic',
      ).describe(
        'Command and arguments executed inside the check sandbox, in the candidate tree (no shell is implied). ' +
          'Must contain at least one non-empty element.',
      ),
      verifiers: listType(
        z
          .array(
            celChecked(
              z.string().min(1).max(1024).describe('A glob relative to the Root.'),
              {
                rule: String.raw`!self.startsWith('/') && !self.matches(r'(^|/)\.\.(/|$)')`,
                message: "spec.checks[].verifiers entries must be relative globs without '..' segments",
              },
              (v) => !v.startsWith('/') && !VERIFIER_DOTDOT.test(v),
            ),
          )
          .max(128),
        'set',
      )
        .refine((v) => uniqueBy(v, (x) => x), { message: 'spec.checks[].verifiers entries must be unique' })
        .optional()
        .describe(
          'Globs (relative to the Root) of the trusted verifier files. Their bytes are taken from PRIME, never from the ' +
            'candidate, are staged into the check, and are bound into the requirement identity; a candidate that modifies ' +
            'them is refused with VERIFIER_MODIFIED_BY_CANDIDATE.',
        ),
      timeout: duration('spec.checks[].timeout', 'Wall-time limit of one run of the check, as a Go duration (e.g. 10m). Default 10m.')
        .default('10m'),
      profile: z
        .enum(CHECK_PROFILES)
        .default('legacy')
        .describe(
          'Execution profile. legacy: the examiner and the candidate code it starts share one identity. ' +
            'private-evaluator-v1: the examiner is staged from PRIME and the candidate programs it starts cannot reach ' +
            'the report it writes; requires reportFormat and verifiers.',
        ),
      reportFormat: z
        .enum(CHECK_REPORT_FORMATS)
        .optional()
        .describe(
          'Format of the report a private-evaluator-v1 check produces: junit, or worldline-benchmark-v1 (measurements ' +
            'with bounds; docs/private-evaluator-broker.md). gnatprove is reserved: no node-agent reads it yet, so a ' +
            'Policy asking for it is not Accepted (REPORT_FORMAT_UNSUPPORTED).',
        ),
      env: listType(z.array(envName('Name of an environment variable of the node-agent forwarded to the check.')).max(64), 'set')
        .refine((v) => uniqueBy(v, (x) => x), { message: 'spec.checks[].env entries must be unique' })
        .optional()
        .describe('Names of environment variables forwarded into the check; everything else is removed.'),
    })
    .describe('One check a candidate must pass.'),
  {
    rule:
      "!has(self.profile) || self.profile != 'private-evaluator-v1' || " +
      '(has(self.reportFormat) && has(self.verifiers) && size(self.verifiers) > 0)',
    message: 'spec.checks[] with profile private-evaluator-v1 requires reportFormat and at least one verifier',
  },
  (v) => v.profile !== 'private-evaluator-v1' || (v.reportFormat !== undefined && (v.verifiers?.length ?? 0) > 0),
);

/** A check, with the examiner rule of private-evaluator-v1 (the controller checks the rest: PRIVATE_EXAMINER_INVALID). */
const PolicyCheckWithExaminer = celChecked(
  PolicyCheckSchema,
  {
    rule:
      "!has(self.profile) || self.profile != 'private-evaluator-v1' || " +
      `(self.command[0] == '${EXAMINER_INTERPRETER}' && self.command.exists(a, a.startsWith('${VERIFIERS_MOUNT}/')))`,
    message: `spec.checks[] with profile private-evaluator-v1 runs ${EXAMINER_INTERPRETER} with a script under ${VERIFIERS_MOUNT}/<root>/ (the staged verifiers)`,
  },
  (v) => v.profile !== 'private-evaluator-v1' || (v.command[0] === EXAMINER_INTERPRETER && v.command.some((a) => a.startsWith(`${VERIFIERS_MOUNT}/`))),
);

export const StageIsolationSchema = z
  .object({
    minimumLevel: isolationLevel(
      'Weakest isolation level accepted for this stage (host-yolo < process-limited < os-sandboxed < vm-isolated). ' +
        'The effective minimum is the stronger of this and the World\'s request.',
    ),
    controls: isolationControls('spec.isolation.*.controls', 'Controls the stage must enforce in addition to those its level implies.').optional(),
    allowHostYolo: z
      .boolean()
      .default(false)
      .describe('Whether this stage may run at host-yolo at all (the World must also acknowledge it). A record, not an authorization.'),
  })
  .describe('Isolation requirement of one stage.');

export const PolicySpecSchema = z
  .object({
    roots: listType(z.array(objectName('Name of a Root.')).min(1).max(64), 'set')
      .refine((v) => uniqueBy(v, (x) => x), { message: 'spec.roots entries must be unique' })
      .describe('Names of the Roots this Policy governs. Worlds, Checks and Collapses on these Roots follow it.'),
    checks: listType(z.array(PolicyCheckWithExaminer).max(32), 'map', ['name'])
      .refine((v) => uniqueBy(v, (c) => c.name), { message: 'spec.checks names must be unique', path: [] })
      .optional()
      .describe(
      'Checks every candidate must pass before a Collapse may commit it. Ordinary checks run first; ' +
        'private-evaluator-v1 checks must follow them. Names are unique (the list is keyed by name).',
      ),
    isolation: z
      .object({
        agent: StageIsolationSchema.optional().describe('Requirement for the agent stage (the World\'s program). Omitted means unsupported: worlds are refused.'),
        check: StageIsolationSchema.optional().describe('Requirement for the check stage. Omitted means unsupported: checks are refused.'),
      })
      .optional()
      .describe('Isolation requirements per stage, as in the containment contract. A stage without a rule is unsupported.'),
    network: networkSchema('spec.network', 'Default network disposition for Worlds on these Roots that do not set spec.network.').optional(),
  })
  .describe('Trusted requirements for a set of Roots.');

export const PolicyStatusSchema = z
  .object({
    observedGeneration: observedGeneration().optional(),
    requirementHash: identity('Identity of the requirement this Policy imposes (checks, verifiers, profiles, order), as recorded in evidence.').optional(),
    warnings: listType(z.array(z.string().max(1024).describe('One warning.')).max(64), 'atomic')
      .optional()
      .describe('Problems that do not make the Policy invalid (e.g. a named Root that does not exist yet).'),
    conditions: conditions('Conditions (Accepted, Ready); each type is owned by one field manager.').optional(),
  })
  .describe('Observed state of the Policy, written by the controller.');

export const PolicySchema = resourceSchema('Policy', PolicySpecSchema, PolicyStatusSchema);

export type PolicyCheck = z.infer<typeof PolicyCheckSchema>;
export type StageIsolation = z.infer<typeof StageIsolationSchema>;
export type PolicySpec = z.infer<typeof PolicySpecSchema>;
export type PolicySpecInput = z.input<typeof PolicySpecSchema>;
export type PolicyStatus = z.infer<typeof PolicyStatusSchema>;
export type Policy = z.infer<typeof PolicySchema>;

export const policyDefinition: CrdDefinition = {
  kind: 'Policy',
  listKind: 'PolicyList',
  plural: 'policies',
  singular: 'policy',
  scope: 'Cluster',
  shortNames: ['wlpol'],
  categories: ['worldline'],
  description:
    'Policy holds the trusted requirements for a set of Roots: the checks a candidate must pass, the isolation each stage must reach and default network disposition.',
  spec: PolicySpecSchema,
  status: PolicyStatusSchema,
  printerColumns: [
    { name: 'ROOTS', type: 'string', jsonPath: '.spec.roots', description: 'Governed Roots.' },
    { name: 'ACCEPTED', type: 'string', jsonPath: '.status.conditions[?(@.type=="Accepted")].status', description: 'Whether the controller accepted the Policy (valid, Roots resolved).' },
    { name: 'REQUIREMENT', type: 'string', jsonPath: '.status.requirementHash', description: 'Requirement identity.', priority: 1 },
    AGE_COLUMN,
  ],
  selectableFields: [],
};
