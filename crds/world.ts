// World: a private, copy-on-write view of one or more Roots on one node, in which an untrusted program
// runs inside a sandbox. Its changes are captured as a content-addressed candidate.
import { z } from 'zod';
import {
  signedStatement,
  AGE_COLUMN,
  absolutePath,
  cel,
  conditions,
  digest,
  duration,
  envName,
  exitStatus,
  isolationControls,
  isolationLevel,
  listType,
  message,
  networkSchema,
  objectName,
  observedGeneration,
  outcomeCode,
  quantity,
  resourceSchema,
  timestamp,
  uniqueBy,
  type CrdDefinition,
} from './common.js';
import { CHECK_VERDICTS, ISOLATION_DECISIONS, WORLD_PHASES } from './outcomes.js';

export const EnvVarSchema = z
  .object({
    name: envName('Variable name.'),
    value: z.string().max(32768).default('').describe('Variable value (literal; for secrets use spec.agent.credentials).'),
  })
  .describe('One environment variable set for the agent.');

export const CredentialsSchema = z
  .object({
    secretName: objectName('Name of a Secret in the World\'s namespace.'),
    key: z
      .string()
      .min(1)
      .max(253)
      .regex(/^[-._a-zA-Z0-9]+$/)
      .describe('Key inside the Secret whose value is handed to the agent.'),
    path: absolutePath('spec.agent.credentials.path', 'Absolute path inside the world where the value appears as a read-only file.'),
  })
  .describe('The one credential the agent is handed: a single Secret key, mounted read-only as a file. The world holds no other credential.');

export const AgentSchema = z
  .object({
    command: listType(
      z.array(z.string().min(1).max(4096).describe('One argument; must not be empty.')).min(1).max(256),
      'atomic',
    ).describe('Program and arguments run inside the world (no shell is implied). Must contain at least one non-empty element.'),
    env: listType(z.array(EnvVarSchema).max(128), 'map', ['name'])
      .refine((v) => uniqueBy(v, (e) => e.name), { message: 'spec.agent.env names must be unique' })
      .optional()
      .describe('Environment of the agent. The world starts from a minimal environment; only these variables are added.'),
    workingDir: absolutePath(
      'spec.agent.workingDir',
      "Absolute working directory inside the world. Default: the first Root's spec.path.",
    ).optional(),
    runAsUser: z
      .int()
      .min(0)
      .max(65535)
      .optional()
      .describe(
        "User id the agent runs as inside the world's user namespace (0-65535; never host root). Default: the owner " +
          'of the first Root\'s directory.',
      ),
    credentials: CredentialsSchema.optional(),
  })
  .describe('The untrusted program and how it starts.');

export const ResourcesSchema = z
  .object({
    cpu: quantity('spec.resources.cpu', 'CPU limit in cores (e.g. 2 or 500m).').optional(),
    memory: quantity('spec.resources.memory', 'Memory limit (e.g. 2Gi), swap included.').optional(),
    pids: z.int().min(1).max(4194304).optional().describe('Maximum number of processes and threads.'),
    wallTime: duration('spec.resources.wallTime', 'Wall-time limit of the agent as a Go duration (e.g. 30m); the whole process tree is killed when it expires.').optional(),
    outputBytes: quantity('spec.resources.outputBytes', 'Limit on bytes the world may write (upper layer plus captured output), as an integer or quantity (e.g. 1Gi).').optional(),
    ephemeralStorage: quantity(
      'spec.resources.ephemeralStorage',
      'Disk for the world\'s changes (e.g. 1Gi, at least 1Mi, rounded down to 4Ki): the upper layers of its Roots live on a ' +
        'filesystem of exactly this size, so a write beyond it fails with ENOSPC inside the world. Default and ceiling: the ' +
        'node\'s admission policy; its Checks take the node\'s default.',
    ).optional(),
  })
  .describe('Resource budget of the world. Omitted limits take the node-agent defaults; admission refuses budgets the node cannot reserve.');

export const WorldIsolationSchema = z
  .object({
    minimumLevel: isolationLevel(
      'Weakest isolation level this World accepts; the effective minimum is the stronger of this and the Policy\'s agent stage.',
    ).default('os-sandboxed'),
    controls: isolationControls('spec.isolation.controls', 'Extra controls requested beyond those the level implies; united with the Policy\'s.').optional(),
    acknowledgeHostYolo: z
      .boolean()
      .default(false)
      .describe('Records that the requester accepts host-yolo (no containment). Needed, with Policy permission, for host-yolo; it is not an authorization.'),
    waiver: z
      .string()
      .min(2)
      .max(16384)
      .optional()
      .describe(
        'A signed isolation waiver: a DSSE envelope (JSON text) carrying an in-toto statement of predicate type ' +
          'https://worldline.dev/attestations/isolation-waiver/v1 about this World, made with `kubectl worldline waiver sign`. ' +
          'It is the only way a World whose isolation decision is not reported-sufficient runs (network Shared, for one): its ' +
          'signer must be trusted for isolation waivers by the node\'s trust policy, it waives exactly the controls it names ' +
          '(missing controls only, never a wrong target, an incomplete observation or a level below the minimum) and it is ' +
          'spent once, at launch, in the node\'s grant store. See docs/operations.md, "Isolation waivers".',
      ),
  })
  .describe('Requested isolation for the agent stage, in the containment contract\'s vocabulary.');

export const WorldSpecSchema = z
  .object({
    roots: cel(
      listType(z.array(objectName('Name of a Root.')).min(1).max(16), 'set').refine((v) => uniqueBy(v, (x) => x), {
        message: 'spec.roots entries must be unique',
      }),
      { rule: 'self == oldSelf', message: 'spec.roots is immutable' },
    ).describe(
      'Names of the Roots this World forks (at least one, unique, all on the same node; the World is bound to that ' +
        "node). Inside the world each Root appears at its own spec.path. Immutable.",
    ),
    agent: AgentSchema,
    network: networkSchema('spec.network', 'Network disposition of the world. Default: the Policy\'s network, else None.').optional(),
    resources: ResourcesSchema.optional(),
    isolation: WorldIsolationSchema.optional(),
  })
  .describe('Desired World: which Roots to fork and what runs inside.');

export const BaseEntrySchema = z
  .object({
    root: z.string().max(253).describe('Root name.'),
    generation: z.int().min(0).describe('PRIME generation the world was forked from.'),
    digest: digest('Digest of that generation.'),
  })
  .describe('The generation one Root was forked from.');

/** How many changed paths a World's status lists at most (status.candidate.changes). */
export const CHANGED_PATHS_SHOWN = 50;

export const ChangedPathSchema = z
  .object({
    root: z.string().max(253).describe('Root the path belongs to.'),
    path: z.string().max(4096).describe('Path relative to the Root.'),
    change: z.enum(['Added', 'Modified', 'Deleted']).describe('Added, Modified (content, type, mode or owner) or Deleted, relative to the base.'),
    type: z.enum(['file', 'dir', 'symlink']).describe('Entry type now (before, for Deleted).'),
    size: z.int().min(0).optional().describe("A file's size in bytes now (before, for Deleted)."),
    previousSize: z.int().min(0).optional().describe("A Modified file's size in bytes before, when it was a file then."),
  })
  .describe('One changed path of the candidate.');

export const CandidateSchema = z
  .object({
    digest: digest('Content digest of the captured candidate (what Checks run on and Collapse promotes).'),
    shortDigest: z.string().max(24).optional().describe('First 12 hex digits of digest, for the CANDIDATE printer column.'),
    added: z.int().min(0).optional().describe('Number of paths added relative to the base.'),
    modified: z.int().min(0).optional().describe('Number of paths modified relative to the base.'),
    deleted: z.int().min(0).optional().describe('Number of paths deleted relative to the base.'),
    changes: listType(z.array(ChangedPathSchema).max(CHANGED_PATHS_SHOWN), 'atomic')
      .optional()
      .describe(`The first changed paths (by Root name, then path in byte order), at most ${CHANGED_PATHS_SHOWN}: what \`kubectl describe world\` shows of the change.`),
    changesTruncated: z.boolean().optional().describe('True when more paths changed than changes lists (added + modified + deleted says how many).'),
    capturedAt: timestamp('When the candidate was captured.').optional(),
  })
  .describe('The captured candidate.');

export const CheckResultSchema = z
  .object({
    name: z.string().max(63).describe('Check name from the Policy.'),
    checkRef: z.string().max(253).optional().describe('Name of the Check object carrying the evidence.'),
    verdict: z.enum(CHECK_VERDICTS).optional().describe('Verdict, once known.'),
  })
  .describe('Summary of one required check.');

/** How many execs a World's status lists (status.execs.recent): the most recent ones. */
export const EXECS_SHOWN = 20;

export const ExecRecordSchema = z
  .object({
    id: z.string().max(64).describe('Id of this exec, unique within the World (its Events name it too).'),
    user: z.string().max(512).describe('Who started it: the username the Kubernetes API server authenticated.'),
    command: listType(z.array(z.string().max(1024).describe('One argument.')).max(64), 'atomic').describe('The command and its arguments (each cut to 1 KiB, at most 64 shown).'),
    tty: z.boolean().describe('Whether it ran on a terminal (-t).'),
    startedAt: timestamp('When it started running in the World.'),
    finishedAt: timestamp('When it ended (absent while it runs).').optional(),
    exitCode: z.int().optional().describe('Its exit status, when it exited.'),
    signal: z.string().max(16).optional().describe('The signal that ended it, when one did (e.g. SIGKILL when its client went away).'),
  })
  .describe('One process started in the World through `kubectl worldline exec`; what it changed is part of the candidate.');

export const WorldStatusSchema = z
  .object({
    phase: z
      .enum(WORLD_PHASES)
      .optional()
      .describe('Pending, Admitted, Running, Captured, Collapsed, Refused (a named outcome in reason) or Failed. A launch shorter than a quarter second goes from Pending to Running in one status write (Admitted then shows only as a condition).'),
    nodeName: z.string().max(253).optional().describe('Node the World is bound to (the node of its Roots). Node-agents select Worlds by this field.'),
    base: listType(z.array(BaseEntrySchema).max(16), 'map', ['root']).optional().describe('Generations the world was forked from, one per Root.'),
    candidate: CandidateSchema.optional(),
    admission: z
      .object({
        outcome: outcomeCode('ADMITTED, or the refusal code (e.g. RESOURCES_UNAVAILABLE, RESOURCE_LIMIT_EXCEEDED).'),
        message: message('Details of the admission decision.').optional(),
      })
      .optional()
      .describe('Result of resource admission on the node.'),
    isolation: z
      .object({
        observation: z
          .looseObject({})
          .meta({ 'x-kubernetes-preserve-unknown-fields': true })
          .optional()
          .describe('What the sandbox backend reported it enforced (level, controls, completeness, target); free-form, unauthenticated.'),
        decision: z
          .object({
            outcome: z.enum(ISOLATION_DECISIONS).describe('reported-sufficient, rejected or unsupported. None of them authorizes execution.'),
            reasons: listType(z.array(z.string().max(256).describe('One reason.')).max(32), 'atomic')
              .optional()
              .describe('Stable reasons for a rejected or unsupported decision (e.g. missing controls).'),
          })
          .optional()
          .describe('Local evaluation of the observation against the request and Policy.'),
        waiver: z
          .object({
            grantId: z.string().max(128).describe('The waiver\'s grant id, spent on this node.'),
            waivedControls: listType(z.array(z.string().max(64).describe('One control.')).max(16), 'atomic').describe('The controls this run goes without.'),
            signers: listType(z.array(z.string().max(253).describe('One issuer label.')).max(8), 'atomic').describe('Issuer labels (from the trust policy) of the distinct keys that signed the waiver.'),
            reason: z.string().max(1024).describe('Why the waiver was issued, as its issuer wrote it.'),
            notAfter: z.string().max(64).describe('When the waiver stopped being spendable (RFC 3339).'),
            spentAt: z.string().max(64).describe('When the node spent it (RFC 3339).'),
          })
          .optional()
          .describe('The isolation waiver this World ran under, when its decision was not reported-sufficient.'),
        attestations: z
          .object({
            observation: signedStatement('The signed isolation observation (predicate https://worldline.dev/attestations/isolation-observation/v1; subject: the World\'s base).'),
            decision: signedStatement('The signed isolation decision (predicate https://worldline.dev/attestations/isolation-decision/v1; subject: the observation).'),
          })
          .optional()
          .describe('The observation and decision as statements signed by the node, re-verifiable offline with `kubectl worldline evidence verify` and the keys the trust policy pins for the node.'),
      })
      .optional()
      .describe('Isolation evidence of the agent stage.'),
    exit: exitStatus('How the agent process ended.').optional(),
    networkRefusals: listType(
      z
        .array(
          z
            .object({
              host: z.string().max(253).describe('Destination host that was refused.'),
              port: z.int().min(0).max(65535).describe('Destination port.'),
              time: timestamp('When the connection was refused.'),
            })
            .describe('One refused connection attempt.'),
        )
        .max(64),
      'atomic',
    )
      .optional()
      .describe('Connection attempts the proxy refused (most recent 64).'),
    execs: z
      .object({
        count: z.int().min(0).describe('How many execs were started in this World.'),
        recent: listType(z.array(ExecRecordSchema).max(EXECS_SHOWN), 'atomic').describe(`The most recent execs, oldest first, at most ${EXECS_SHOWN}.`),
      })
      .optional()
      .describe('Processes people started in the World while it ran (`kubectl worldline exec`), written by the node-agent.'),
    checksSummary: z.string().max(16).optional().describe('Passed/required checks, e.g. 2/3, for the CHECKS printer column.'),
    checkResults: listType(z.array(CheckResultSchema).max(32), 'map', ['name']).optional().describe('Per-check verdicts, keyed by check name.'),
    reason: outcomeCode('UPPER_SNAKE outcome of the current phase (e.g. a refusal code).').optional(),
    message: message('Human-readable explanation of the current phase.').optional(),
    observedGeneration: observedGeneration().optional(),
    conditions: conditions(
      'Conditions (Accepted, Admitted, Isolated, Running, Captured, ChecksPassed, Degraded, Collapsed, Ready); each type is owned by one field manager. Degraded is True while a required Check on the candidate ended without admissible evidence (REPORT_UNTRUSTED, PRIVATE_EVALUATOR_BOUNDARY_FAILED, PRIVATE_INPUT_REFUSED).',
    ).optional(),
  })
  .describe('Observed state of the World, written by the controller and the node-agent (each its own fields).');

export const WorldSchema = resourceSchema('World', WorldSpecSchema, WorldStatusSchema);

export type EnvVar = z.infer<typeof EnvVarSchema>;
export type Credentials = z.infer<typeof CredentialsSchema>;
export type Agent = z.infer<typeof AgentSchema>;
export type Resources = z.infer<typeof ResourcesSchema>;
export type WorldIsolation = z.infer<typeof WorldIsolationSchema>;
export type BaseEntry = z.infer<typeof BaseEntrySchema>;
export type Candidate = z.infer<typeof CandidateSchema>;
export type CheckResult = z.infer<typeof CheckResultSchema>;
export type ExecRecord = z.infer<typeof ExecRecordSchema>;
export type WorldSpec = z.infer<typeof WorldSpecSchema>;
export type WorldSpecInput = z.input<typeof WorldSpecSchema>;
export type WorldStatus = z.infer<typeof WorldStatusSchema>;
export type World = z.infer<typeof WorldSchema>;

export const worldDefinition: CrdDefinition = {
  kind: 'World',
  listKind: 'WorldList',
  plural: 'worlds',
  singular: 'world',
  scope: 'Namespaced',
  shortNames: ['wl'],
  categories: ['worldline'],
  description:
    'World is a private copy-on-write view of one or more Roots on one node in which an untrusted program runs sandboxed; its changes are captured as a content-addressed candidate.',
  spec: WorldSpecSchema,
  status: WorldStatusSchema,
  printerColumns: [
    { name: 'PHASE', type: 'string', jsonPath: '.status.phase', description: 'Lifecycle phase.' },
    { name: 'NODE', type: 'string', jsonPath: '.status.nodeName', description: 'Node the World is bound to.' },
    { name: 'CANDIDATE', type: 'string', jsonPath: '.status.candidate.shortDigest', description: 'Short digest of the captured candidate.' },
    { name: 'CHECKS', type: 'string', jsonPath: '.status.checksSummary', description: 'Passed/required checks.' },
    { name: 'REASON', type: 'string', jsonPath: '.status.reason', description: 'Outcome code of the current phase.', priority: 1 },
    { name: 'ROOTS', type: 'string', jsonPath: '.spec.roots', description: 'Forked Roots.', priority: 1 },
    AGE_COLUMN,
  ],
  selectableFields: [{ jsonPath: '.status.nodeName' }],
};
