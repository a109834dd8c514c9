// The cgroup v2 preflight run by another user, for test/kernel/cgroup-v2-preflight.test.ts (spawned with
// a uid and gid of its own): argv is the mount point and the leaf; it prints the refusal code, or OK.
import { inspectV2Leaf, V2PreflightError } from '../../node-agent/sandbox/cgroup-v2-preflight.js';

const [mountPoint, leaf] = process.argv.slice(2);
try {
  inspectV2Leaf({ mountPoint: mountPoint ?? '', leaf: leaf ?? '', want: { cpuQuotaMicros: 50_000, cpuPeriodMicros: 100_000, memoryBytes: 1 << 29, pids: 256 } });
  process.stdout.write('OK\n');
} catch (e) {
  process.stdout.write(`${e instanceof V2PreflightError ? e.code : 'ERROR'} ${(e as Error).message}\n`);
}
