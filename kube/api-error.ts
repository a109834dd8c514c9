// Typed errors from the apiserver: the HTTP status code plus the metav1.Status reason.

export interface KubeStatus {
  kind?: string;
  status?: string;
  message?: string;
  reason?: string;
  code?: number;
  details?: Record<string, unknown>;
}

export class ApiError extends Error {
  override readonly name = 'ApiError';
  constructor(
    readonly statusCode: number,
    /** metav1.Status reason, e.g. NotFound, Conflict, AlreadyExists, Expired, Gone; '' when absent. */
    readonly reason: string,
    message: string,
    readonly status?: KubeStatus,
  ) {
    super(message);
  }

  static fromStatus(statusCode: number, body: unknown, fallback: string): ApiError {
    const st = isStatus(body) ? body : undefined;
    return new ApiError(st?.code ?? statusCode, st?.reason ?? '', st?.message ?? fallback, st);
  }
}

export function isStatus(v: unknown): v is KubeStatus {
  return typeof v === 'object' && v !== null && (v as { kind?: unknown }).kind === 'Status';
}

export const isNotFound = (e: unknown): boolean => e instanceof ApiError && e.statusCode === 404;
export const isConflict = (e: unknown): boolean => e instanceof ApiError && e.statusCode === 409;
export const isAlreadyExists = (e: unknown): boolean => e instanceof ApiError && e.statusCode === 409 && e.reason === 'AlreadyExists';
/** 410: the resourceVersion (or continue token) is too old; relist. */
export const isGone = (e: unknown): boolean =>
  e instanceof ApiError && (e.statusCode === 410 || e.reason === 'Expired' || e.reason === 'Gone');
