// A child for test/kernel/cgroup-dynmods.test.ts, started in a cgroup namespace of its own (unshare
// --cgroup), as the chart's node-agent runs in its pod: it calls favorDynmods with the node's cgroup
// namespace named by argv[2] (a /proc/<pid>/ns/cgroup path), or with none ("own"), and prints the outcome
// with the cgroup namespace it ran in.
import { readlinkSync } from 'node:fs';
import { favorDynmods, realDynmodsIo } from '../../node-agent/sandbox/cgroup-dynmods.js';

const ns = process.argv[2];
if (ns === undefined) throw new Error('usage: dynmods-child.js own|<cgroup namespace path>');
const outcome = favorDynmods({ ...realDynmodsIo, hostCgroupNs: () => (ns === 'own' ? undefined : ns) });
process.stdout.write(JSON.stringify({ outcome, cgroupNs: readlinkSync('/proc/self/ns/cgroup') }) + '\n');
