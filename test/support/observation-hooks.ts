// Fault injection for the sandbox observation gate, preloaded into a node-agent started by a test
// (`node --import` of this file, which startNodeAgent adds when the environment asks for it):
//   WORLDLINE_TEST_OBSERVATION_CORRUPT=<field>
// changes that one field of every frame the sandbox reports, after it arrives and before the agent checks
// it, so the real gate in node-agent/sandbox/supervise.ts sees a wrong frame. Fields: OBSERVATION_FIELDS.
// None of this is in the agent: it registers through node-agent/sandbox/observation-hooks.ts, which passes
// every frame unchanged unless something registered an observer.
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { SandboxObservation } from '../../native/index.js';
import { registerObservationHooks, type ObservationHooks } from '../../node-agent/sandbox/observation-hooks.js';

export const OBSERVATION_CORRUPT_ENV = 'WORLDLINE_TEST_OBSERVATION_CORRUPT';

/** Each corruptible field and how it is made wrong (one field each: the gate must name that one). */
const CORRUPT: Record<string, (o: SandboxObservation) => SandboxObservation> = {
  'uid.effective': (o) => ({ ...o, uid: { ...o.uid, effective: 0 } }),
  capEff: (o) => ({ ...o, capEff: 1n << 21n }),
  noNewPrivs: (o) => ({ ...o, noNewPrivs: 0 }),
  environ: (o) => ({ ...o, environ: [...o.environ, 'INJECTED_BY_TEST=1'] }),
  'ns.mnt': (o) => ({ ...o, ns: { ...o.ns, mnt: 'mnt:[bogus]' } }),
};
export const OBSERVATION_FIELDS = Object.keys(CORRUPT);

export function observationTestHooks(field: string): ObservationHooks {
  const corrupt = CORRUPT[field];
  if (!corrupt) throw new Error(`${OBSERVATION_CORRUPT_ENV}: "${field}" is not one of ${OBSERVATION_FIELDS.join(', ')}`);
  return { received: corrupt };
}

/**
 * WORLDLINE_TEST_GATE_PAUSE=1: at every isolation gate, write <store>/test-hooks/gate-<run id>.paused and
 * wait until a test removes it (to change what the observation is bound to between plan and gate).
 */
export const GATE_PAUSE_ENV = 'WORLDLINE_TEST_GATE_PAUSE';

function pauseAtGate(storeDir: string): (runId: string) => Promise<void> {
  return async (runId) => {
    const dir = join(storeDir, 'test-hooks');
    mkdirSync(dir, { recursive: true });
    const flag = join(dir, `gate-${runId}.paused`);
    writeFileSync(flag, String(process.pid));
    while (existsSync(flag)) await new Promise((r) => setTimeout(r, 50));
  };
}

// As a preload: register for this process when the environment asks for it.
const field = process.env[OBSERVATION_CORRUPT_ENV];
const storeAt = process.argv.indexOf('--store');
const store = storeAt > 0 ? process.argv[storeAt + 1] : undefined;
const pause = process.env[GATE_PAUSE_ENV] === '1' && store ? pauseAtGate(store) : undefined;
if (field || pause) registerObservationHooks({ ...(field ? observationTestHooks(field) : { received: (o) => o }), ...(pause ? { beforeGate: pause } : {}) });
