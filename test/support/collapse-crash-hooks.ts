// Fault injection for tests of collapse, preloaded into a node-agent started by a test
// (`node --import` of this file, which startNodeAgent adds when the environment asks for it):
//   WORLDLINE_TEST_COLLAPSE_HOOK=<step>:<action>[,<step>:<action>...]
// action `kill` ends the agent with SIGKILL when the step is reached (a crash at that point); `pause`
// writes <store>/test-hooks/<step>.paused and waits until a test removes it (to act between two steps).
// Steps: COLLAPSE_OBSERVED_STEPS. None of this is in the agent: it registers an observer through
// node-agent/collapses/step-hooks.ts, which does nothing unless something registered one.
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { COLLAPSE_OBSERVED_STEPS, registerCollapseStepHooks, type CollapseStepHooks } from '../../node-agent/collapses/step-hooks.js';

export const TEST_HOOK_ENV = 'WORLDLINE_TEST_COLLAPSE_HOOK';

export function collapseTestHooks(storeDir: string, spec: string): CollapseStepHooks {
  const actions = new Map<string, string>();
  for (const part of spec.split(',')) {
    const [step, action] = part.split(':');
    if (!step || !(COLLAPSE_OBSERVED_STEPS as readonly string[]).includes(step) || (action !== 'kill' && action !== 'pause')) {
      throw new Error(`${TEST_HOOK_ENV}: "${part}" is not <step>:kill|pause with a step of ${COLLAPSE_OBSERVED_STEPS.join(', ')}`);
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

// As a preload: register for this process when the environment asks for it.
const spec = process.env[TEST_HOOK_ENV];
const storeAt = process.argv.indexOf('--store');
if (spec && storeAt > 0 && process.argv[storeAt + 1]) registerCollapseStepHooks(collapseTestHooks(process.argv[storeAt + 1]!, spec));
