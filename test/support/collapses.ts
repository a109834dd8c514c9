// Helpers for integration tests of Collapses on a startStack() stack: the manifest, and waiting for a
// final phase with an explanation (the Collapse's status and the agent's warnings) when it never comes.
import type { Stack } from './stack.js';

export function collapseManifest(name: string, worldRef: string, mode: 'Candidate' | 'CheckpointReturn' = 'Candidate', namespace = 'default'): string {
  return JSON.stringify({ apiVersion: 'worldline.dev/v1alpha1', kind: 'Collapse', metadata: { name, namespace }, spec: { worldRef, mode } });
}

/** Waits until the Collapse is Committed or Denied and returns it. */
export async function waitCollapse(s: Stack, name: string, timeoutMs = 60_000, namespace = 'default'): Promise<Record<string, any>> {
  try {
    return await s.waitFor(`Collapse ${name} Committed or Denied`, async () => {
      const c = await s.get('collapse', name, namespace);
      return c?.status?.phase === 'Committed' || c?.status?.phase === 'Denied' ? c : undefined;
    }, timeoutMs);
  } catch (e) {
    const c = await s.get('collapse', name, namespace);
    const logs = s.agent.logs.filter((r) => r.level === 'warn' || r.level === 'error' || String(r.msg).includes('collapse'));
    throw new Error(`${(e as Error).message}\n${JSON.stringify(c?.status)}\n${logs.map((r) => JSON.stringify(r)).join('\n')}`);
  }
}
