// A private-evaluator role's separate-outputs and read-only-inputs (node-agent/isolation/world-observation.ts):
// measured against the binds the node-agent planned for the role, not its Roots. Each output must be
// mounted at its path, writable, the very directory prepared for the role (by device and inode, as the
// role's own root shows it) and no other live role's output; each input mounted read-only and the very file
// staged for it. Every way to miss is named.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { MountFact } from '../../node-agent/store/mount-table.js';
import { measuredControls, roleInputProblems, roleOutputProblems, type ObservationInputs, type RoleMounts } from '../../node-agent/isolation/world-observation.js';

const mount = (mountPoint: string, ro: boolean, fsType = 'ext4'): MountFact => ({ mountId: 1, mountPoint, options: [ro ? 'ro' : 'rw', 'nosuid'], fsType, superOptions: ['rw'] });
const SYSTEM = [mount('/', true, 'tmpfs'), mount('/usr', true), mount('/etc', true)];

const PLAN: RoleMounts = {
  outputs: [{ path: '/work/input', identity: '254:100' }],
  inputs: [{ path: '/run/worldline-verifiers', identity: '254:7' }, { path: '/run/worldline-stdin', identity: '254:8' }],
  othersOutputs: new Set(['254:50']),
};
const MOUNTS = [...SYSTEM, mount('/work/input', false), mount('/run/worldline-verifiers', true), mount('/run/worldline-stdin', true)];
const SEEN = { '/work/input': '254:100', '/run/worldline-verifiers': '254:7', '/run/worldline-stdin': '254:8' };
const byPoint = (mounts: MountFact[]) => new Map(mounts.map((m) => [m.mountPoint, m]));

test('a role whose binds are as planned has no problem', () => {
  assert.deepEqual(roleOutputProblems(PLAN, byPoint(MOUNTS), SEEN), []);
  assert.deepEqual(roleInputProblems(PLAN, byPoint(MOUNTS), SEEN), []);
});

test('each way an output misses is named', () => {
  const cases: [string, RoleMounts, MountFact[], Record<string, string>, string][] = [
    ['no output', { ...PLAN, outputs: [] }, MOUNTS, SEEN, 'the role has no output of its own'],
    ['not mounted', PLAN, MOUNTS.filter((m) => m.mountPoint !== '/work/input'), SEEN, 'nothing is mounted at /work/input'],
    ['not identified', PLAN, MOUNTS, { ...SEEN, '/work/input': undefined as unknown as string }, 'what is mounted at /work/input could not be identified'],
    ['another directory', PLAN, MOUNTS, { ...SEEN, '/work/input': '254:101' }, '/work/input is not the directory the node-agent prepared for it (254:101, expected 254:100)'],
    ['read-only', PLAN, MOUNTS.map((m) => (m.mountPoint === '/work/input' ? mount('/work/input', true) : m)), SEEN, '/work/input is mounted read-only'],
    ['shared', { ...PLAN, othersOutputs: new Set(['254:100']) }, MOUNTS, SEEN, "/work/input is another role's output"],
    [
      'twice',
      { ...PLAN, outputs: [...PLAN.outputs, { path: '/work/case', identity: '254:100' }] },
      [...MOUNTS, mount('/work/case', false)],
      { ...SEEN, '/work/case': '254:100' },
      '/work/case is mounted at a second path of the same role',
    ],
  ];
  for (const [what, plan, mounts, seen, problem] of cases) assert.deepEqual(roleOutputProblems(plan, byPoint(mounts), seen), [problem], what);
});

test('each way an input misses is named', () => {
  const writable = MOUNTS.map((m) => (m.mountPoint === '/run/worldline-stdin' ? mount('/run/worldline-stdin', false) : m));
  assert.deepEqual(roleInputProblems(PLAN, byPoint(writable), SEEN), ['/run/worldline-stdin is mounted writable']);
  assert.deepEqual(roleInputProblems(PLAN, byPoint(MOUNTS), { ...SEEN, '/run/worldline-verifiers': '254:9' }), ['/run/worldline-verifiers is not the directory the node-agent prepared for it (254:9, expected 254:7)']);
  assert.deepEqual(roleInputProblems(PLAN, byPoint(MOUNTS.filter((m) => m.mountPoint !== '/run/worldline-verifiers')), SEEN), ['nothing is mounted at /run/worldline-verifiers']);
});

const inputs = (mounts: MountFact[], identities: Record<string, string>, roleMounts?: RoleMounts): ObservationInputs => ({
  frameProblems: [],
  frame: { ns: { net: 'net:[4]', pid: 'pid:[3]' }, environ: [] } as unknown as ObservationInputs['frame'],
  agentNs: { user: 'user:[9]', mnt: 'mnt:[9]', pid: 'pid:[9]', net: 'net:[9]', ipc: 'ipc:[9]', uts: 'uts:[9]', cgroup: 'cgroup:[9]' },
  cgroup: { cpuMillis: 1000, memoryBytes: 2 ** 30, pids: 64 },
  facts: { mounts: [...mounts, mount('/dev', false, 'tmpfs')], interfaces: ['lo'], identities },
  rootPaths: ['/work/input'],
  ...(roleMounts ? { roleMounts } : {}),
  credentialPaths: [],
  network: 'None',
  proxyInWorldNetns: false,
  wallTimeArmed: true,
  outputLimitArmed: true,
});

test("with a role's plan, the two controls follow its binds, not Roots", () => {
  const role = measuredControls(inputs(MOUNTS, SEEN, PLAN));
  assert.ok(role.controls.includes('separate-outputs') && role.controls.includes('read-only-inputs'), role.notes.join('; '));
  // The same mounts judged as a World's Roots: /work/input is no overlay, so separate-outputs is missing.
  const asWorld = measuredControls(inputs(MOUNTS, SEEN));
  assert.ok(!asWorld.controls.includes('separate-outputs'));
  const shared = measuredControls(inputs(MOUNTS, SEEN, { ...PLAN, othersOutputs: new Set(['254:100']) }));
  assert.ok(!shared.controls.includes('separate-outputs'));
  assert.ok(shared.notes.includes("separate-outputs: /work/input is another role's output"), shared.notes.join('; '));
  const writableInput = measuredControls(inputs(MOUNTS.map((m) => (m.mountPoint === '/run/worldline-verifiers' ? mount(m.mountPoint, false) : m)), SEEN, PLAN));
  assert.ok(!writableInput.controls.includes('read-only-inputs'));
  assert.ok(writableInput.notes.includes('read-only-inputs: /run/worldline-verifiers is mounted writable'), writableInput.notes.join('; '));
});
