// Polling helpers for integration tests: read objects through kubectl and wait for a predicate.
import { setTimeout as sleep } from 'node:timers/promises';

export interface Kubectl {
  kubectl(args: string[], opts?: { input?: string }): Promise<{ code: number; stdout: string; stderr: string }>;
}

export async function kc(cp: Kubectl, args: string[], input?: string): Promise<string> {
  const r = await cp.kubectl(args, input === undefined ? undefined : { input });
  if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')} failed (${r.code}): ${r.stderr}`);
  return r.stdout;
}

export async function getJson<T = Record<string, any>>(cp: Kubectl, args: string[]): Promise<T | undefined> {
  const r = await cp.kubectl([...args, '-o', 'json']);
  if (r.code !== 0) {
    if (/NotFound|not found/.test(r.stderr)) return undefined;
    throw new Error(`kubectl ${args.join(' ')} failed: ${r.stderr}`);
  }
  return JSON.parse(r.stdout) as T;
}

/** Polls `fn` until it returns a truthy value; throws with the last value seen after `timeoutMs`. */
export async function waitFor<T>(what: string, fn: () => Promise<T | undefined | false | null>, timeoutMs = 30_000, everyMs = 200): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const v = await fn();
      if (v) return v;
      last = v;
    } catch (err) {
      last = err;
    }
    await sleep(everyMs);
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}; last: ${last instanceof Error ? last.message : JSON.stringify(last)}`);
}

export function condition(obj: Record<string, any> | undefined, type: string): { status: string; reason: string; message: string; lastTransitionTime: string; observedGeneration?: number } | undefined {
  return (obj?.status?.conditions as any[] | undefined)?.find((c) => c.type === type);
}
