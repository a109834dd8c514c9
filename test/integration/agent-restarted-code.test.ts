// A World whose workload had not started when its node-agent died ends AGENT_RESTARTED, on a real stack
// (kube-apiserver + etcd, controller, node-agent as root). The state a kill -9 between admission and the
// supervisor record leaves is made with the store's own functions while no agent runs: the World is
// admitted (a reservation and an id range held) and recorded running, with no supervisor; part of its
// run is set up (its world directory, its cgroup, a process in that cgroup). The next agent keeps the
// reservation at start, then ends the World: Failed, reason AGENT_RESTARTED, a Warning Event of that
// reason, the process killed, the cgroup and directory removed, the reservation released.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { AdmissionAuthority } from '../../node-agent/admission/admission-authority.js';
import { loadAdmissionPolicy } from '../../node-agent/admission/admission-host.js';
import { observeNode } from '../../node-agent/admission/observe-node.js';
import { detectCgroups, WorldCgroup } from '../../node-agent/sandbox/cgroup.js';
import { reserveRun } from '../../node-agent/sandbox/run-reservation.js';
import { worldPaths } from '../../node-agent/sandbox/run-paths.js';
import { slotHolders } from '../../node-agent/sandbox/id-slots.js';
import { getWorldRecord, getWorldSupervisor, putWorldRecord } from '../../node-agent/store/world-records.js';
import { admittedStatus } from '../../node-agent/worlds/world-status.js';
import { startStack, type Stack } from '../support/stack.js';
import { metricSum } from '../support/metrics-text.js';
import { getJson } from '../support/wait.js';
import { applyRoot, ownedDir, ownedFile, shWorld, worldCgroupExists, worldManifest } from '../support/worlds.js';

// The stack's node-agent takes its id ranges from the defaults (or WORLDLINE_ID_BASE, as config.ts reads it).
const ID_BASE = Number(process.env.WORLDLINE_ID_BASE || 2 ** 30);
const ID_SLOTS = 1024;

interface EventView {
  reason?: string;
  type?: string;
  involvedObject?: { kind?: string; name?: string };
}

describe('a World admitted but not started when its agent died', () => {
  let s: Stack;

  before(async () => {
    s = await startStack({ nodeName: 'restarted-node' });
    const proj = join(s.scratch, 'proj');
    ownedDir(proj);
    ownedFile(join(proj, 'a.txt'), 'alpha\n');
    const root = await applyRoot(s, 'proj', proj);
    assert.equal(root.status.phase, 'Ready', JSON.stringify(root.status));
  });

  after(async () => {
    await s?.stop();
  });

  const reservedWorlds = async (): Promise<number> => metricSum(await s.agent.metrics(), 'worldline_admission_reserved', { resource: 'worlds' });

  test('the next agent ends it AGENT_RESTARTED and removes what was set up, releasing its reservation', async () => {
    const root = await s.get('root', 'proj');
    const name = 'half-started';
    let uid = '';
    let leftoverEnd: Promise<NodeJS.Signals | null> | undefined;

    await s.restartAgent({
      between: async () => {
        // The controller binds the World to the node (the dead agent's lease is still live); no agent launches it.
        await s.apply(worldManifest(name, shWorld(['proj'], 'echo ran')));
        const bound = await s.waitFor(`World ${name} Accepted and bound to ${s.nodeName}`, async () => {
          const w = await s.get('world', name, 'default');
          const accepted = (w?.status?.conditions ?? []).some((c: { type: string; status: string }) => c.type === 'Accepted' && c.status === 'True');
          return accepted && w?.status?.nodeName === s.nodeName ? w : undefined;
        }, 30_000);
        uid = bound.metadata.uid as string;

        // What the agent had done before dying: admission, an id range, the 'running' record, part of the run.
        const db = new Database(join(s.storeDir, 'state.db'), { fileMustExist: true });
        try {
          const load = loadAdmissionPolicy({}, { storeDir: s.storeDir });
          assert.ok(load.ok, JSON.stringify(load));
          const authority = new AdmissionAuthority({ db, ...load.policy, observe: () => observeNode({ storeDir: s.storeDir, runDirs: [join(s.storeDir, 'worlds')] }) });
          const admission = { admit: (holder: string, stage: 'agent' | 'check', resources: object) => authority.admit({ holder, stage, resources }), release: (holder: string) => authority.release(holder), checkResources: () => null };
          const now = new Date();
          const reservation = reserveRun({ admission, db, idBase: ID_BASE, idSlots: ID_SLOTS }, uid, 'agent', {}, now);
          assert.ok(reservation.ok, JSON.stringify(reservation));
          const base = [{ root: 'proj', generation: root!.status.generation as number, digest: root!.status.digest as string }];
          putWorldRecord(db, { uid, namespace: 'default', name, state: 'running', status: admittedStatus(base, bound.metadata.generation as number, now, reservation.message) }, now);
          assert.equal(getWorldSupervisor(db, uid), undefined, 'no supervisor is recorded');
        } finally {
          db.close();
        }
        const paths = worldPaths(join(s.storeDir, 'worlds'), uid);
        mkdirSync(paths.rootfs, { recursive: true });
        writeFileSync(paths.output, 'set up before the agent died\n');
        const cg = WorldCgroup.create(detectCgroups(), 'worldline', `world-${uid}`);
        const child = spawn('sleep', ['600.73'], { stdio: 'ignore' });
        leftoverEnd = new Promise((resolve) => child.once('exit', (_code, signal) => resolve(signal)));
        for (const f of cg.procsFiles()) writeFileSync(f, String(child.pid));
      },
    });

    const w = await s.waitWorld(name, ['Failed', 'Captured', 'Refused'], 'default', 60_000);
    assert.equal(w.status.phase, 'Failed', JSON.stringify(w.status));
    assert.equal(w.status.reason, 'AGENT_RESTARTED', JSON.stringify(w.status));
    assert.match(w.status.message, /restarted before the world's workload started/);
    const kept = s.agent.logs.find((r) => r.msg === 'kept reservations of worlds that outlived the previous agent');
    assert.ok(kept && JSON.stringify(kept).includes(uid), `the new agent did not keep the World's reservation at start: ${JSON.stringify(kept)}`);

    await s.waitFor('a Warning Event AGENT_RESTARTED on the World', async () => {
      const list = (await getJson<{ items: EventView[] }>(s.cp, ['get', 'events', '-n', 'default']))?.items ?? [];
      return list.some((e) => e.involvedObject?.kind === 'World' && e.involvedObject.name === name && e.type === 'Warning' && e.reason === 'AGENT_RESTARTED');
    }, 15_000);

    assert.equal(await leftoverEnd, 'SIGKILL', 'the process left in the world\'s cgroup was killed');
    await s.waitFor('the world\'s cgroup removed', async () => !worldCgroupExists(uid), 15_000);
    const paths = worldPaths(join(s.storeDir, 'worlds'), uid);
    assert.equal(existsSync(paths.dir), false, 'the world directory was removed');
    assert.equal(readFileSync(paths.output, 'utf8'), 'set up before the agent died\n', 'the output log is kept');
    await s.waitFor('no reservation held', async () => (await reservedWorlds()) === 0, 15_000);

    // The store agrees: the World is recorded failed and holds no id range (read while no agent runs).
    await s.restartAgent({
      signal: 'SIGTERM',
      between: () => {
        const db = new Database(join(s.storeDir, 'state.db'), { readonly: true, fileMustExist: true });
        try {
          assert.equal(getWorldRecord(db, uid)?.state, 'failed');
          assert.equal(slotHolders(db).includes(uid), false, 'the id range was released');
        } finally {
          db.close();
        }
      },
    });
  });
});
