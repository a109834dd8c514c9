// Scalar schemas of the API: names, absolute paths, Go durations, Kubernetes quantities, digests, codes,
// text, timestamps and process exit facts.
import { z } from 'zod';
import { celChecked } from './cel.js';
import { OUTCOME_CODE_PATTERN } from './outcomes.js';

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

/** A Kubernetes object uid (a UUID, as the API server assigns them). */
export const OBJECT_UID_PATTERN = '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$';

/** The uid of one Kubernetes object (lower-case UUID). */
export function objectUid(description: string) {
  return z.string().max(36).regex(new RegExp(OBJECT_UID_PATTERN)).describe(description);
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
