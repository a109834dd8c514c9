// Fault injection for tests of collapse, driven by the agent's environment only:
//   WORLDLINE_TEST_COLLAPSE_HOOK=<step>:<action>[,<step>:<action>...]
// action `kill` ends the agent with SIGKILL when the step is reached (a crash at that point); `pause`
// writes <store>/test-hooks/<step>.paused and waits until a test removes it (to act between two steps).
// Unset — the only state in production — every step is a no-op. Steps: COLLAPSE_TEST_STEPS.
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { COLLAPSE_STEPS } from './collapse-intent.js';

export const COLLAPSE_TEST_STEPS = [
  'after-prepared',
  'after-authorized',
  ...COLLAPSE_STEPS,
  'after-committed-row',
  'after-receipt',
  'after-receipt-row',
] as const;
export type CollapseTestStep = (typeof COLLAPSE_TEST_STEPS)[number];

export const TEST_HOOK_ENV = 'WORLDLINE_TEST_COLLAPSE_HOOK';

export interface CollapseTestHooks {
  at(step: CollapseTestStep): Promise<void>;
}

export function collapseTestHooks(storeDir: string, env: NodeJS.ProcessEnv = process.env): CollapseTestHooks {
  const spec = env[TEST_HOOK_ENV];
  if (!spec) return { at: () => Promise.resolve() };
  const actions = new Map<string, string>();
  for (const part of spec.split(',')) {
    const [step, action] = part.split(':');
    if (!step || !(COLLAPSE_TEST_STEPS as readonly string[]).includes(step) || (action !== 'kill' && action !== 'pause')) {
      throw new Error(`${TEST_HOOK_ENV}: "${part}" is not <step>:kill|pause with a step of ${COLLAPSE_TEST_STEPS.join(', ')}`);
    }
    actions.set(step, action);
  }
  const dir = join(storeDir, 'test-hooks');
  return {
    async at(step) {
      const action = actions.get(step);
      if (action === 'kill') process.kill(process.pid, 'SIGKILL');
      if (action !== 'pause') return;
      mkdirSync(dir, { recursive: true });
      const flag = join(dir, `${step}.paused`);
      writeFileSync(flag, String(process.pid));
      while (existsSync(flag)) await new Promise((r) => setTimeout(r, 50));
    },
  };
}
