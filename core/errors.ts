// One error model for the controller, the node-agent and the CLI.
//
// A Refusal is a named, terminal answer: its UPPER_SNAKE code goes to status.reason with its message,
// and trying again cannot change it. Every other error — an errno from the kernel (ENOENT, EBUSY,
// EAGAIN…), an API error, a bug — is a transient failure: the work queue retries it with per-key
// backoff. The classifier never reads a code off an unknown error: only `instanceof Refusal` is
// terminal. An errno that has to end in a status is wrapped first (refusalFromErrno), so the reason is
// a named code and the errno is in the message. Pure: no Node or kube imports.

/** A named, terminal refusal: `code` is the UPPER_SNAKE reason a status carries, `message` the detail. */
export class Refusal extends Error {
  constructor(
    readonly code: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'Refusal';
  }
}

/**
 * A failure that may pass: retried with backoff. `code`, when given, is a named code the object may show
 * while it waits (e.g. RESOURCES_UNAVAILABLE on a Pending World); it never makes the failure terminal.
 */
export class TransientFailure extends Error {
  readonly code?: string;
  constructor(
    message: string,
    options?: { cause?: unknown; code?: string },
  ) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'TransientFailure';
    if (options?.code !== undefined) this.code = options.code;
  }
}

export function isRefusal(err: unknown): err is Refusal {
  return err instanceof Refusal;
}

/** The errno name of a system error (Node's `err.code`, the addon's, a sandbox setup error's), if any. */
export function errnoOf(err: unknown): string | undefined {
  if (typeof err !== 'object' || err === null) return undefined;
  const e = err as { code?: unknown; errnoCode?: unknown };
  if (typeof e.code === 'string' && /^E[A-Z0-9]+$/.test(e.code)) return e.code;
  if (typeof e.errnoCode === 'string' && /^E[A-Z0-9]+$/.test(e.errnoCode)) return e.errnoCode;
  return undefined;
}

/** The message of any thrown value, naming its errno when the message does not already. */
export function describeError(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  const errno = errnoOf(err);
  return errno === undefined || message.includes(errno) ? message : `${errno}: ${message}`;
}

/** A named refusal for a system error: `code` is the reason, the errno and its message are the detail. */
export function refusalFromErrno(code: string, err: unknown, context?: string): Refusal {
  const detail = describeError(err);
  return new Refusal(code, context === undefined ? detail : `${context}: ${detail}`, { cause: err });
}

/** The refusal itself, or any other error wrapped as a refusal named `code` (for a run that cannot be retried). */
export function asRefusal(err: unknown, code: string): Refusal {
  return isRefusal(err) ? err : refusalFromErrno(code, err);
}

export type Classified =
  | { terminal: true; code: string; message: string }
  | { terminal: false; errno: string | undefined; message: string };

/** What the reconcilers do with an error: a Refusal is terminal with its code; anything else is retried. */
export function classifyError(err: unknown): Classified {
  if (isRefusal(err)) return { terminal: true, code: err.code, message: err.message };
  return { terminal: false, errno: errnoOf(err), message: describeError(err) };
}
