// Shared building blocks of the worldline API: CEL-rule helpers, name/path/duration/quantity/digest
// schemas, the Kubernetes Condition shape, ObjectMeta and the CRD definition descriptor type. Each rule
// that the API server enforces through CEL is declared here once, together with the TypeScript predicate
// that makes zod enforce the same thing, so the generated CRDs and in-process validation never disagree.
import { z } from 'zod';
import { API_VERSION } from './api-group.js';
import { ISOLATION_CONTROLS, ISOLATION_LEVELS } from './isolation-vocabulary.js';
import { CONDITION_STATUSES, NETWORK_POLICIES, OUTCOME_CODE_PATTERN } from './outcomes.js';

// ---- CEL rules -------------------------------------------------------------------------------------------

/** One `x-kubernetes-validations` entry. */
export interface CelRule {
  /** The CEL expression; `self` is the value of the node the rule is attached to. */
  rule: string;
  /** Human-readable message; by convention it names the field and the rule. */
  message: string;
  /** Optional JSONPath (relative to the node) of the field the error should point at. */
  fieldPath?: string;
  /** Optional machine-readable reason reported by the API server. */
  reason?: 'FieldValueInvalid' | 'FieldValueForbidden' | 'FieldValueRequired' | 'FieldValueDuplicate';
}

export const VALIDATIONS_KEY = 'x-kubernetes-validations';

function existingRules(schema: z.ZodType): CelRule[] {
  const meta = schema.meta();
  const rules = meta?.[VALIDATIONS_KEY];
  return Array.isArray(rules) ? (rules as CelRule[]) : [];
}

/**
 * Attaches CEL rules to a schema without a TypeScript counterpart. Use only for rules zod cannot express
 * (transition rules that compare against `oldSelf`); everything else goes through {@link celChecked}.
 */
export function cel<T extends z.ZodType>(schema: T, ...rules: CelRule[]): T {
  return schema.meta({ [VALIDATIONS_KEY]: [...existingRules(schema), ...rules] });
}

/**
 * Attaches one CEL rule and the equivalent TypeScript predicate: the API server evaluates `rule.rule`,
 * zod evaluates `check`, and both report `rule.message`.
 */
export function celChecked<T extends z.ZodType>(schema: T, rule: CelRule, check: (value: z.output<T>) => boolean): T {
  const path = rule.fieldPath ? rule.fieldPath.replace(/^\./, '').split('.') : [];
  const refined = schema.refine((v) => check(v), { message: rule.message, path });
  return cel(refined, rule);
}

/** Marks a list with its server-side-apply merge semantics. */
export function listType<T extends z.ZodType>(schema: T, type: 'atomic' | 'set'): T;
export function listType<T extends z.ZodType>(schema: T, type: 'map', keys: string[]): T;
export function listType<T extends z.ZodType>(schema: T, type: 'atomic' | 'set' | 'map', keys?: string[]): T {
  const meta: Record<string, unknown> = { 'x-kubernetes-list-type': type };
  if (type === 'map') meta['x-kubernetes-list-map-keys'] = keys;
  return schema.meta(meta);
}

/** Zod-side mirror of `x-kubernetes-list-type: set` / `map`: items (or their keys) must be unique. */
export function uniqueBy<T>(items: readonly T[] | undefined, key: (item: T) => unknown): boolean {
  if (!items) return true;
  const seen = new Set<unknown>();
  for (const item of items) {
    const k = key(item);
    if (seen.has(k)) return false;
    seen.add(k);
  }
  return true;
}

// ---- Names ------------------------------------------------------------------------------------------------

export const DNS_SUBDOMAIN_PATTERN = '^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$';
export const DNS_LABEL_PATTERN = '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$';

/** A Kubernetes object name (DNS subdomain, at most 253 characters). */
export function objectName(description: string) {
  return z.string().min(1).max(253).regex(new RegExp(DNS_SUBDOMAIN_PATTERN)).describe(description);
}

/** A DNS label (at most 63 characters), used for check names. */
export function dnsLabel(description: string) {
  return z.string().min(1).max(63).regex(new RegExp(DNS_LABEL_PATTERN)).describe(description);
}

/** Environment variable name, as accepted by execve and POSIX shells. */
export const ENV_NAME_PATTERN = '^[A-Za-z_][A-Za-z0-9_]*$';
export function envName(description: string) {
  return z.string().min(1).max(256).regex(new RegExp(ENV_NAME_PATTERN)).describe(description);
}

// ---- Paths ------------------------------------------------------------------------------------------------

function hasControlCharacter(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x20 || c === 0x7f) return true;
  }
  return false;
}

const DOT_SEGMENT = /(^|\/)\.\.?(\/|$)/;

/**
 * An absolute, normalized host path: starts with '/', has no '.' or '..' segments, no empty segments
 * ('//'), no trailing '/', no control characters. `field` is the path users see in error messages.
 */
export function absolutePath(field: string, description: string) {
  let s = z.string().min(1).max(4096).describe(description);
  s = celChecked(
    s,
    { rule: "self.startsWith('/')", message: `${field} must be an absolute path (it must start with '/')` },
    (v) => v.startsWith('/'),
  );
  s = celChecked(
    s,
    { rule: String.raw`!self.matches(r'(^|/)\.\.?(/|$)')`, message: `${field} must not contain '.' or '..' segments` },
    (v) => !DOT_SEGMENT.test(v),
  );
  s = celChecked(
    s,
    {
      rule: "!self.contains('//') && (self == '/' || !self.endsWith('/'))",
      message: `${field} must be normalized: no empty segments ('//') and no trailing '/'`,
    },
    (v) => !v.includes('//') && (v === '/' || !v.endsWith('/')),
  );
  s = celChecked(
    s,
    { rule: String.raw`!self.matches(r'[\x00-\x1f\x7f]')`, message: `${field} must not contain control characters` },
    (v) => !hasControlCharacter(v),
  );
  return s;
}

// ---- Durations ----------------------------------------------------------------------------------------------

/** Go duration syntax (e.g. `90s`, `1h30m`, `1.5s`); the unit is mandatory. */
export const DURATION_PATTERN = '^([0-9]+(\\.[0-9]+)?(ns|us|ms|s|m|h))+$';

const DURATION_UNIT_SECONDS: Record<string, number> = { ns: 1e-9, us: 1e-6, ms: 1e-3, s: 1, m: 60, h: 3600 };

/** Parses a Go duration string to seconds; undefined when malformed. */
export function parseDuration(value: string): number | undefined {
  if (!new RegExp(DURATION_PATTERN).test(value)) return undefined;
  let total = 0;
  for (const m of value.matchAll(/([0-9]+(?:\.[0-9]+)?)(ns|us|ms|s|m|h)/g)) {
    total += Number(m[1]) * (DURATION_UNIT_SECONDS[m[2] ?? 's'] ?? 1);
  }
  return total;
}

/** A positive Go duration string. */
export function duration(field: string, description: string) {
  const s = z
    .string()
    .min(2)
    .max(64)
    .regex(new RegExp(DURATION_PATTERN), { message: `${field} must be a Go duration such as 30s, 5m or 1h30m` })
    .describe(description);
  return celChecked(
    s,
    {
      rule: `!self.matches(r'${DURATION_PATTERN}') || duration(self) > duration('0s')`,
      message: `${field} must be a positive duration`,
    },
    (v) => (parseDuration(v) ?? 1) > 0,
  );
}

// ---- Quantities ---------------------------------------------------------------------------------------------

/** Non-negative Kubernetes resource quantity (e.g. `500m`, `2`, `512Mi`, `1G`, `1e3`). */
export const QUANTITY_PATTERN =
  '^(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$';

/** Parses a quantity to a number (base units); undefined when malformed. */
export function parseQuantity(value: string | number): number | undefined {
  if (typeof value === 'number') return Number.isFinite(value) && value >= 0 ? value : undefined;
  if (!new RegExp(QUANTITY_PATTERN).test(value)) return undefined;
  const m = /^([0-9.]+)(.*)$/.exec(value);
  if (!m) return undefined;
  const n = Number(m[1]);
  const suffix = m[2] ?? '';
  const binary: Record<string, number> = { Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, Pi: 2 ** 50, Ei: 2 ** 60 };
  const decimal: Record<string, number> = { n: 1e-9, u: 1e-6, m: 1e-3, '': 1, k: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15, E: 1e18 };
  if (suffix in binary) return n * (binary[suffix] ?? 1);
  if (suffix in decimal) return n * (decimal[suffix] ?? 1);
  if (/^[eE]/.test(suffix)) return n * 10 ** Number(suffix.slice(1));
  return undefined;
}

/**
 * A non-negative resource quantity, written as an integer or a quantity string, like the core API's
 * resource fields (`x-kubernetes-int-or-string`).
 */
export function quantity(field: string, description: string) {
  const u = z
    .union([
      z.int().min(0),
      z
        .string()
        .min(1)
        .max(64)
        .regex(new RegExp(QUANTITY_PATTERN), { message: `${field} must be a resource quantity such as 512Mi, 2 or 500m` }),
    ])
    .meta({ 'x-kubernetes-int-or-string': true, pattern: QUANTITY_PATTERN, maxLength: 64 })
    .describe(description);
  return celChecked(
    u,
    { rule: 'type(self) == int ? self >= 0 : isQuantity(self)', message: `${field} must be a valid non-negative quantity` },
    (v) => parseQuantity(v) !== undefined,
  );
}

// ---- Digests, codes, text, time -------------------------------------------------------------------------------

export const DIGEST_PATTERN = '^sha256:[0-9a-f]{64}$';

/** `sha256:` followed by 64 lower-case hex digits. */
export function digest(description: string) {
  return z.string().max(71).regex(new RegExp(DIGEST_PATTERN)).describe(description);
}

/** An opaque identity/hash string written by worldline (e.g. `sha256:...`). */
export function identity(description: string) {
  return z.string().max(256).describe(description);
}

/** A stable UPPER_SNAKE outcome code (see crds/outcomes.ts). */
export function outcomeCode(description: string) {
  return z.string().min(1).max(128).regex(new RegExp(OUTCOME_CODE_PATTERN)).describe(description);
}

/** Free-form human-readable text. */
export function message(description: string) {
  return z.string().max(32768).describe(description);
}

/** RFC 3339 timestamp, as Kubernetes serializes metav1.Time. */
export function timestamp(description: string) {
  return z.iso.datetime({ offset: true }).describe(description);
}

/** Process exit facts. */
/** How a supervised process ended. */
export const EXIT_REASONS = ['Completed', 'WallTimeExceeded', 'OutputLimitExceeded', 'OOMKilled', 'Signaled'] as const;

export function exitStatus(description: string) {
  return z
    .object({
      code: z.int().min(-1).max(255).optional().describe('Exit code of the process; -1 when it did not exit normally.'),
      signal: z.string().max(32).optional().describe('Name of the signal that ended the process (e.g. SIGKILL), when it was killed.'),
      reason: z
        .enum(EXIT_REASONS)
        .optional()
        .describe(
          'How the process ended: Completed (it exited by itself; see code), WallTimeExceeded, OutputLimitExceeded ' +
            '(worldline killed the whole process tree at that limit), OOMKilled (the kernel killed it at the memory limit), ' +
            'Signaled (killed by a signal; see signal).',
        ),
    })
    .describe(description);
}

// ---- Network -----------------------------------------------------------------------------------------------

/** `host:port`: a DNS name or IPv4 address, or a bracketed IPv6 address, then a decimal port. */
export const HOST_PORT_PATTERN =
  '^(\\[[0-9A-Fa-f:.]+\\]|[A-Za-z0-9]([-A-Za-z0-9]*[A-Za-z0-9])?(\\.[A-Za-z0-9]([-A-Za-z0-9]*[A-Za-z0-9])?)*):[0-9]{1,5}$';

function portOf(hostPort: string): number {
  return Number(hostPort.slice(hostPort.lastIndexOf(':') + 1));
}

/** One `host:port` allowlist entry. */
export function hostPort(field: string, description: string) {
  const s = z
    .string()
    .min(3)
    .max(262)
    .regex(new RegExp(HOST_PORT_PATTERN), { message: `${field} entries must have the form host:port` })
    .describe(description);
  return celChecked(
    s,
    {
      rule:
        `!self.matches(r'${HOST_PORT_PATTERN}') || ` +
        "(int(self.substring(self.lastIndexOf(':') + 1)) >= 1 && int(self.substring(self.lastIndexOf(':') + 1)) <= 65535)",
      message: `${field} entries must be host:port with a port from 1 to 65535`,
    },
    (v) => {
      const p = portOf(v);
      return p >= 1 && p <= 65535;
    },
  );
}

/** Network disposition of a world (`prefix` is e.g. `spec.network`). */
export function networkSchema(prefix: string, description: string) {
  let s = z
    .object({
      policy: z
        .enum(NETWORK_POLICIES)
        .default('None')
        .describe(
          'None: an empty network namespace, no egress at all. Allowlist: an empty network namespace whose only exit ' +
            'is the node-agent proxy, which connects only to the allow entries and records every refusal. Shared: the ' +
            'host network, no containment (use only for trusted workloads).',
        ),
      allow: listType(
        z.array(hostPort(`${prefix}.allow`, 'A destination the proxy may connect to, as host:port (e.g. api.example.com:443).')).max(64),
        'set',
      )
        .refine((v) => uniqueBy(v, (x) => x), { message: `${prefix}.allow entries must be unique` })
        .optional()
        .describe('Destinations reachable through the proxy, as host:port. Only allowed when policy is Allowlist.'),
    })
    .describe(description);
  s = celChecked(
    s,
    {
      rule: "(has(self.policy) && self.policy == 'Allowlist') || !has(self.allow) || size(self.allow) == 0",
      message: `${prefix}.allow is only allowed when ${prefix}.policy is Allowlist`,
      fieldPath: '.allow',
      reason: 'FieldValueForbidden',
    },
    (v) => v.policy === 'Allowlist' || !v.allow || v.allow.length === 0,
  );
  s = celChecked(
    s,
    {
      rule: "!has(self.policy) || self.policy != 'Allowlist' || (has(self.allow) && size(self.allow) > 0)",
      message: `${prefix}.policy Allowlist requires at least one ${prefix}.allow entry`,
      fieldPath: '.allow',
      reason: 'FieldValueRequired',
    },
    (v) => v.policy !== 'Allowlist' || (v.allow?.length ?? 0) > 0,
  );
  return s;
}

// ---- Isolation ------------------------------------------------------------------------------------------------

/** One level of the ordered isolation vocabulary. */
export function isolationLevel(description: string) {
  return z.enum(ISOLATION_LEVELS).describe(description);
}

/** A set of isolation controls (unique, any order; worldline canonicalizes the order). */
export function isolationControls(field: string, description: string) {
  return listType(
    z.array(z.enum(ISOLATION_CONTROLS).describe('One control of the containment vocabulary.')).max(ISOLATION_CONTROLS.length),
    'set',
  )
    .refine((v) => uniqueBy(v, (x) => x), { message: `${field} must not repeat a control` })
    .describe(description);
}

// ---- Conditions ----------------------------------------------------------------------------------------------

const CONDITION_TYPE_PATTERN =
  '^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$';
const CONDITION_REASON_PATTERN = '^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$';

/** A standard Kubernetes condition (metav1.Condition). */
export const ConditionSchema = z
  .object({
    type: z.string().min(1).max(316).regex(new RegExp(CONDITION_TYPE_PATTERN)).describe('Type of the condition in CamelCase (e.g. Ready, Admitted). Each type is owned by exactly one field manager.'),
    status: z.enum(CONDITION_STATUSES).describe('Whether the condition holds: True, False or Unknown.'),
    observedGeneration: z.int().min(0).optional().describe('metadata.generation of the object the condition was computed from.'),
    lastTransitionTime: timestamp('When the condition last changed status.'),
    reason: z.string().min(1).max(1024).regex(new RegExp(CONDITION_REASON_PATTERN)).describe('CamelCase, machine-readable reason for the last transition.'),
    message: z.string().max(32768).describe('Human-readable details about the last transition; may be empty.'),
  })
  .describe('One observation of the state of the object, following the Kubernetes API conventions.');
export type Condition = z.infer<typeof ConditionSchema>;

/** Conditions list: an SSA map keyed by `type`, so the controller and the node-agent each own their own types. */
export function conditions(description: string) {
  return listType(z.array(ConditionSchema).max(32), 'map', ['type'])
    .refine((v) => uniqueBy(v, (c) => c.type), { message: 'status.conditions types must be unique' })
    .describe(description);
}

export function observedGeneration() {
  return z.int().min(0).describe('metadata.generation of the spec this status was last computed from.');
}

// ---- ObjectMeta / resources ------------------------------------------------------------------------------------

/** The subset of metav1.ObjectMeta worldline reads; unknown fields pass through. */
export const ObjectMetaSchema = z
  .looseObject({
    name: z.string().max(253).optional().describe('Object name.'),
    generateName: z.string().max(253).optional().describe('Prefix for a server-generated name.'),
    namespace: z.string().max(63).optional().describe('Namespace (namespaced kinds only).'),
    uid: z.string().optional().describe('Server-assigned unique id.'),
    resourceVersion: z.string().optional().describe('Opaque version for optimistic concurrency.'),
    generation: z.int().optional().describe('Sequence number of the desired state (spec).'),
    creationTimestamp: z.string().optional().describe('Creation time (RFC 3339).'),
    deletionTimestamp: z.string().optional().describe('Deletion time, when deletion was requested.'),
    labels: z.record(z.string(), z.string()).optional().describe('Labels.'),
    annotations: z.record(z.string(), z.string()).optional().describe('Annotations.'),
    finalizers: z.array(z.string()).optional().describe('Finalizers.'),
    ownerReferences: z.array(z.looseObject({})).optional().describe('Owner references.'),
  })
  .describe('Standard Kubernetes object metadata.');
export type ObjectMeta = z.infer<typeof ObjectMetaSchema>;

/** Builds the zod schema of a full object (apiVersion, kind, metadata, spec, status). */
export function resourceSchema<K extends string, S extends z.ZodType, T extends z.ZodType>(kind: K, spec: S, status: T) {
  return z.object({
    apiVersion: z.literal(API_VERSION),
    kind: z.literal(kind),
    metadata: ObjectMetaSchema,
    spec,
    status: status.optional(),
  });
}

// ---- CRD definition descriptor ---------------------------------------------------------------------------------

export interface PrinterColumn {
  name: string;
  type: 'string' | 'integer' | 'number' | 'boolean' | 'date';
  jsonPath: string;
  description: string;
  /** 0 = shown by `kubectl get`; 1 = only with `-o wide`. */
  priority?: 0 | 1;
  format?: string;
}

/** Everything needed to render one CustomResourceDefinition. */
export interface CrdDefinition {
  kind: string;
  listKind: string;
  plural: string;
  singular: string;
  scope: 'Cluster' | 'Namespaced';
  shortNames: string[];
  categories: string[];
  /** Top-level description of the kind (shown by `kubectl explain <kind>`). */
  description: string;
  spec: z.ZodType;
  status: z.ZodType;
  printerColumns: PrinterColumn[];
  selectableFields: { jsonPath: string }[];
}

/** Age column every kind ends with. */
export const AGE_COLUMN: PrinterColumn = {
  name: 'AGE',
  type: 'date',
  jsonPath: '.metadata.creationTimestamp',
  description: 'Time since the object was created.',
};
