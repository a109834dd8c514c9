// The isolation observation's target is the kernel's report in the sandbox frame (uname as the workload
// sees it), never the request's: kernelTarget maps uname machine names to kubernetes.io/arch values, and
// buildObservation marks an observation whose machine has no known name incomplete (the request's target
// then only fills the field of a record that authorizes nothing), with a note naming what the kernel said.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { SandboxObservation } from '../../native/index.js';
import { buildObservation, type ObservationInputs } from '../../node-agent/isolation/world-observation.js';
import { kernelTarget } from '../../node-agent/isolation/world-request.js';

test('kernelTarget: each machine name the contract knows, and nothing else', () => {
  const cases: [string, string, string | undefined][] = [
    ['Linux', 'x86_64', 'amd64'],
    ['Linux', 'aarch64', 'arm64'],
    ['Linux', 'i686', '386'],
    ['Linux', 'i386', '386'],
    ['Linux', 'armv7l', 'arm'],
    ['Linux', 'ppc64le', 'ppc64le'],
    ['Linux', 's390x', 's390x'],
    ['Linux', 'riscv64', 'riscv64'],
    ['Linux', 'sparc64', undefined],
    ['Linux', 'amd64', undefined],
    ['Darwin', 'x86_64', undefined],
  ];
  for (const [sysname, machine, arch] of cases) assert.deepEqual(kernelTarget({ sysname, machine }), arch ? { os: 'linux', arch } : undefined, `${sysname} ${machine}`);
});

const frame = (machine: string): SandboxObservation => ({
  uid: { real: 1000, effective: 1000, saved: 1000, fs: 1000 },
  gid: { real: 1000, effective: 1000, saved: 1000, fs: 1000 },
  groups: [], noNewPrivs: 1, seccomp: 0, capInh: 0n, capPrm: 0n, capEff: 0n, capBnd: 0n, capAmb: 0n,
  uidMap: [], gidMap: [], setgroups: 'deny',
  ns: { user: 'user:[1]', mnt: 'mnt:[2]', pid: 'pid:[3]', net: 'net:[4]', ipc: 'ipc:[5]', uts: 'uts:[6]', cgroup: 'cgroup:[7]' },
  kernel: { sysname: 'Linux', machine },
  status: {},
  environ: [],
  paths: {},
});

const inputs = (machine: string): ObservationInputs => ({
  frameProblems: [],
  frame: frame(machine),
  agentNs: { user: 'user:[9]', mnt: 'mnt:[9]', pid: 'pid:[9]', net: 'net:[9]', ipc: 'ipc:[9]', uts: 'uts:[9]', cgroup: 'cgroup:[9]' },
  cgroup: { cpuMillis: 1000, memoryBytes: 2 ** 30, pids: 64 },
  facts: { mounts: [], interfaces: ['lo'] },
  rootPaths: [],
  credentialPaths: [],
  network: 'None',
  proxyInWorldNetns: false,
  wallTimeArmed: true,
  outputLimitArmed: true,
});

const IDS = { requestIdentity: 'sha256:r', policyIdentity: 'sha256:p', subject: 'sha256:s', requestTarget: { os: 'linux' as const, arch: 'amd64' as const }, executionId: 'w', backendVersion: 't' };

test('buildObservation: the target is measured; an unknown machine leaves the observation incomplete, with a note', () => {
  const i686 = buildObservation(inputs('i686'), IDS, true);
  assert.deepEqual(i686.observation.target, { os: 'linux', arch: '386' }, 'not the requested amd64');
  assert.equal(i686.observation.complete, true);
  const sparc = buildObservation(inputs('sparc64'), IDS, true);
  assert.equal(sparc.observation.complete, false);
  assert.ok(sparc.notes.some((n) => /the kernel reports Linux sparc64/.test(n)), JSON.stringify(sparc.notes));
});
