// The private evaluator's pure pins: the maps of a run's principals, each role's frame, and the boundary
// over a whole run. Each check is shown to catch the one deviation it names, starting from frames that pass.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { principalMap, principalMapProblems, ROLE_ID, ROLE_PATHS, type Role } from '../../core/private-evaluator/principals.js';
import { boundaryProblems, rolePinProblems, type RoleFrame, type RolePins } from '../../core/private-evaluator/role-pins.js';

const BASE = 5_000_000;
const map = principalMap(BASE);
const agentNs = { user: 'user:[1]', mnt: 'mnt:[2]', pid: 'pid:[3]', net: 'net:[4]', ipc: 'ipc:[5]', uts: 'uts:[6]', cgroup: 'cgroup:[7]' };
const pins: RolePins = { uidMap: map, gidMap: map, usernsId: 'user:[100]', agentNs };

function frame(role: Role, n: number): RoleFrame {
  const id = ROLE_ID[role];
  const q = { real: id, effective: id, saved: id, fs: id };
  const present = (owner: Role): string => (owner === role ? 'present' : 'absent');
  return {
    uid: q, gid: q, groups: [], noNewPrivs: 1, capInh: 0n, capPrm: 0n, capEff: 0n, capBnd: 0n, capAmb: 0n,
    uidMap: map, gidMap: map,
    ns: { user: 'user:[100]', mnt: `mnt:[${200 + n}]`, pid: `pid:[${300 + n}]`, net: `net:[${400 + n}]`, ipc: `ipc:[${500 + n}]`, uts: `uts:[${600 + n}]`, cgroup: `cgroup:[${700 + n}]` },
    paths: { [ROLE_PATHS.report]: present('examiner'), [ROLE_PATHS.examinerBroker]: present('examiner'), [ROLE_PATHS.workerBroker]: present('worker') },
  };
}

test('principal maps: exactly three ids onto three host ids, never host root or the agent\'s', () => {
  assert.deepEqual(map, [{ inside: 0, outside: BASE, count: 3 }]);
  assert.deepEqual(principalMapProblems('uid_map', map, [0]), []);
  assert.deepEqual(principalMapProblems('uid_map', principalMap(0), []), ['uid_map maps the examiner onto host root']);
  assert.deepEqual(principalMapProblems('gid_map', map, [BASE + 1]), [`gid_map maps the worker onto the node-agent's own id ${BASE + 1}`]);
  assert.deepEqual(principalMapProblems('uid_map', [{ inside: 0, outside: BASE, count: 4 }], []), ['uid_map maps 4 ids, expected exactly 3 (one per role)']);
  assert.deepEqual(principalMapProblems('uid_map', [{ inside: 0, outside: BASE, count: 2 }], []), ['uid_map maps 2 ids, expected exactly 3 (one per role)', "uid_map does not map the candidate's id 2"]);
  const shared = [{ inside: 0, outside: BASE, count: 2 }, { inside: 2, outside: BASE + 1, count: 1 }];
  assert.deepEqual(principalMapProblems('uid_map', shared, []), [`uid_map maps the worker and the candidate onto the same host id ${BASE + 1}`]);
});

test('role pins: a good frame passes for its own role only', () => {
  for (const role of ['examiner', 'worker', 'candidate'] as const) assert.deepEqual(rolePinProblems(role, frame(role, 0), pins), [], role);
  assert.ok(rolePinProblems('candidate', frame('worker', 0), pins).length > 0, 'a worker frame is not a candidate');
  assert.ok(rolePinProblems('worker', frame('examiner', 0), pins).length > 0, 'an examiner frame is not a worker');
});

test('role pins: each deviation is named', () => {
  const bad = (patch: Partial<RoleFrame>, role: Role = 'worker') => rolePinProblems(role, { ...frame(role, 0), ...patch }, pins);
  assert.deepEqual(bad({ uid: { real: 1, effective: 1, saved: 0, fs: 1 } }), ['worker: uid.saved is 0, expected 1']);
  assert.deepEqual(bad({ gid: { real: 1, effective: 1, saved: 1, fs: 2 } }), ['worker: gid.fs is 2, expected 1']);
  assert.deepEqual(bad({ groups: [0] }), ['worker: supplementary groups present: 0']);
  assert.deepEqual(bad({ noNewPrivs: 0 }), ['worker: NoNewPrivs is 0, expected 1']);
  for (const cap of ['capInh', 'capPrm', 'capEff', 'capBnd', 'capAmb'] as const) assert.equal(bad({ [cap]: 1n }).length, 1, cap);
  assert.deepEqual(bad({ uidMap: [{ inside: 0, outside: BASE, count: 65536 }] }), [`worker: uid_map is 0:${BASE}:65536, expected 0:${BASE}:3`]);
  assert.deepEqual(bad({ gidMap: [] }), [`worker: gid_map is (none), expected 0:${BASE}:3`]);
  assert.deepEqual(bad({ ns: { ...frame('worker', 0).ns, user: 'user:[101]' } }), ['worker: user namespace is user:[101], expected the run\'s user:[100]']);
  assert.deepEqual(bad({ ns: { ...frame('worker', 0).ns, net: 'net:[4]' } }), ['worker: net namespace is the node-agent\'s own (net:[4])']);
  assert.deepEqual(bad({ paths: { ...frame('worker', 0).paths, [ROLE_PATHS.report]: 'present' } }), ['worker: /run/worldline-report is present, expected absent (it is the examiner\'s alone)']);
  assert.deepEqual(bad({ paths: { ...frame('worker', 0).paths, [ROLE_PATHS.report]: 'E13' } }), ['worker: /run/worldline-report is E13, expected absent (it is the examiner\'s alone)'], 'unknown is not absent');
  assert.deepEqual(bad({ paths: { ...frame('examiner', 0).paths, [ROLE_PATHS.examinerBroker]: 'absent' } }, 'examiner'), ['examiner: /run/worldline-examiner-broker.sock is absent, expected present']);
  const unprobed = { ...frame('candidate', 0).paths };
  delete unprobed[ROLE_PATHS.workerBroker];
  assert.deepEqual(bad({ paths: unprobed }, 'candidate'), ['candidate: /run/worldline-worker-broker.sock was not probed']);
});

test('boundary: one examiner, the run\'s maps, PID and mount namespaces apart from the examiner\'s, no candidate with a worker\'s ids', () => {
  const good = [{ role: 'examiner' as const, frame: frame('examiner', 0) }, { role: 'worker' as const, frame: frame('worker', 1) }, { role: 'candidate' as const, frame: frame('candidate', 2) }];
  assert.deepEqual(boundaryProblems(good, pins), []);
  assert.deepEqual(boundaryProblems(good.slice(1), pins), ['0 examiner observations, expected exactly 1']);
  assert.deepEqual(boundaryProblems([...good, { role: 'examiner', frame: frame('examiner', 3) }], pins), ['2 examiner observations, expected exactly 1']);
  const samePid = { ...frame('candidate', 2), ns: { ...frame('candidate', 2).ns, pid: 'pid:[300]' } };
  assert.deepEqual(boundaryProblems([good[0]!, good[1]!, { role: 'candidate', frame: samePid }], pins), ['candidate #2: pid namespace is the examiner\'s (pid:[300])']);
  const sameMnt = { ...frame('worker', 1), ns: { ...frame('worker', 1).ns, mnt: 'mnt:[200]' } };
  assert.deepEqual(boundaryProblems([good[0]!, { role: 'worker', frame: sameMnt }, good[2]!], pins), ['worker #1: mnt namespace is the examiner\'s (mnt:[200])']);
  // A candidate frame with a worker's id fails its own pins and the cross-role check.
  const asWorker = { ...frame('candidate', 2), uid: { real: 1, effective: 1, saved: 1, fs: 1 } };
  const problems = boundaryProblems([good[0]!, good[1]!, { role: 'candidate', frame: asWorker }], pins);
  assert.ok(problems.includes('candidate #2: shares a worker\'s uid'), problems.join('; '));
  assert.ok(problems.includes('candidate: uid.real is 1, expected 2'), problems.join('; '));
});
