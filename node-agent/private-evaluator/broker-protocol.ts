// The examiner broker's protocol: one JSON object per line each way, a request and then its answer, on a
// unix socket only the examiner reaches (docs/private-evaluator-broker.md has the whole protocol). The
// schemas are closed: an unknown field, a wrong type or a value out of bounds is a protocol violation.
import { z } from 'zod';

export const MAX_LINE_BYTES = 64 * 1024;
/** The longest a wait blocks, and the most output one read returns. */
export const MAX_WAIT_MS = 2000;
export const MAX_READ_BYTES = 64 * 1024;
export const MAX_SESSIONS = 16;

const absolute = z.string().min(1).max(4096).refine((s) => s.startsWith('/') && !s.includes('\0') && !s.split('/').includes('..'), 'an absolute path without ".."');
const argv = z.array(z.string().max(4096).refine((s) => !s.includes('\0'), 'no NUL')).min(1).max(256);
const session = z.string().regex(/^c[0-9]{1,6}$/);

export const BrokerRequest = z.discriminatedUnion('op', [
  z.strictObject({ op: z.literal('start'), argv, cwd: absolute, timeoutMs: z.number().int().min(1).max(600_000) }),
  z.strictObject({ op: z.literal('run'), argv, cwd: absolute, timeoutMs: z.number().int().min(1).max(600_000) }),
  z.strictObject({ op: z.literal('wait'), session, waitMs: z.number().int().min(0).max(MAX_WAIT_MS) }),
  z.strictObject({ op: z.literal('output'), session, offset: z.number().int().min(0), max: z.number().int().min(1).max(MAX_READ_BYTES) }),
  z.strictObject({ op: z.literal('signal'), session, signal: z.enum(['SIGTERM', 'SIGKILL']) }),
  z.strictObject({ op: z.literal('teardown'), session }),
]);
export type BrokerRequest = z.infer<typeof BrokerRequest>;

export interface SessionExit {
  code: number | null;
  signal: string | null;
  reason: string;
}

export type BrokerAnswer =
  | { ok: true; session: string }
  | { ok: true; running: true }
  | { ok: true; running: false; exit: SessionExit }
  | { ok: true; data: string; eof: boolean }
  | { ok: true; exit: SessionExit; output: string; truncated: boolean }
  | { ok: true }
  | { ok: false; error: 'PROTOCOL_VIOLATION'; message: string };
