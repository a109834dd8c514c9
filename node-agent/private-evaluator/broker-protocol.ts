// The private evaluator's two broker protocols: one JSON object per line each way, a request and then its
// answer, on a unix socket only one role reaches (docs/private-evaluator-broker.md has both protocols).
// The schemas are closed: an unknown field, a wrong type or a value out of bounds is a protocol violation.
import { z } from 'zod';

export const MAX_LINE_BYTES = 64 * 1024;
/** The longest a wait blocks, and the most output one read returns. */
export const MAX_WAIT_MS = 2000;
export const MAX_READ_BYTES = 64 * 1024;
/** Candidate sessions the examiner may start in one run, and workers. */
export const MAX_SESSIONS = 16;
export const MAX_WORKERS = 4;
/** Case leases one run may open, candidate starts one lease may make, and a start's stdin. */
export const MAX_CASE_LEASES = 256;
export const MAX_LEASE_STARTS = 64;
export const MAX_STDIN_BYTES = 2048;

const absolute = z.string().min(1).max(4096).refine((s) => s.startsWith('/') && !s.includes('\0') && !s.split('/').includes('..'), 'an absolute path without ".."');
const argv = z.array(z.string().max(4096).refine((s) => !s.includes('\0'), 'no NUL')).min(1).max(256);
const timeoutMs = z.number().int().min(1).max(600_000);
const session = z.string().regex(/^[cw][0-9]{1,6}$/);

const sessionOps = (id: z.ZodString) => [
  z.strictObject({ op: z.literal('wait'), session: id, waitMs: z.number().int().min(0).max(MAX_WAIT_MS) }),
  z.strictObject({ op: z.literal('output'), session: id, offset: z.number().int().min(0), max: z.number().int().min(1).max(MAX_READ_BYTES) }),
  z.strictObject({ op: z.literal('signal'), session: id, signal: z.enum(['SIGTERM', 'SIGKILL']) }),
  z.strictObject({ op: z.literal('teardown'), session: id }),
] as const;

export const BrokerRequest = z.discriminatedUnion('op', [
  z.strictObject({ op: z.literal('start'), argv, cwd: absolute, timeoutMs }),
  z.strictObject({ op: z.literal('run'), argv, cwd: absolute, timeoutMs }),
  z.strictObject({ op: z.literal('worker'), argv, cwd: absolute, timeoutMs }),
  ...sessionOps(session),
]);
export type BrokerRequest = z.infer<typeof BrokerRequest>;

const lease = z.string().regex(/^l[0-9]{1,6}$/);
const generation = z.number().int().min(1).max(1_000_000);
/** Base64 of at most MAX_STDIN_BYTES bytes. */
const stdin = z.string().max(Math.ceil(MAX_STDIN_BYTES / 3) * 4).regex(/^[A-Za-z0-9+/]*={0,2}$/, 'base64');
/** The whole environment a leased candidate may be given. */
const leaseEnv = z.strictObject({ PYTHONHASHSEED: z.string().regex(/^[0-9]{1,10}$/).optional(), PYTHONDONTWRITEBYTECODE: z.literal('1').optional() });

export const WorkerRequest = z.discriminatedUnion('op', [
  z.strictObject({ op: z.literal('open'), path: absolute }),
  z.strictObject({ op: z.literal('start'), lease, generation, argv, cwd: absolute, timeoutMs, stdin: stdin.optional(), env: leaseEnv.optional() }),
  z.strictObject({ op: z.literal('copy-in'), lease, generation }),
  z.strictObject({ op: z.literal('copy-out'), lease, generation }),
  z.strictObject({ op: z.literal('close'), lease, generation }),
  ...sessionOps(z.string().regex(/^c[0-9]{1,6}$/)),
]);
export type WorkerRequest = z.infer<typeof WorkerRequest>;

export interface SessionExit {
  code: number | null;
  signal: string | null;
  reason: string;
}

export interface Violation {
  ok: false;
  error: 'PROTOCOL_VIOLATION';
  message: string;
}
