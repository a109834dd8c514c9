// The cgroup v2 budget judge (node-agent/sandbox/cgroup-v2-budget.ts) on generated leaf texts: a leaf
// with exactly the expected budget passes; every other leaf refuses with its own code — a file missing,
// a malformed value, an unlimited setting, a value other than expected, a change between the two reads,
// processes in it, frozen, not a domain, controllers missing, a subtree enabled. These are the parts this
// cgroup v1 host cannot show on a real leaf with cpu, memory and pids (test/kernel/cgroup-v2-preflight.test.ts
// covers the rest on a real cgroup2 mount).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { judgeV2Leaf, type LeafTexts, type V2Budget } from '../../node-agent/sandbox/cgroup-v2-budget.js';
import { v2Budget } from '../../node-agent/sandbox/cgroup.js';

const WANT: V2Budget = { cpuQuotaMicros: 50_000, cpuPeriodMicros: 100_000, memoryBytes: 536_870_912, pids: 256 };
const GOOD: LeafTexts = {
  'cpu.max': '50000 100000\n',
  'cpu.max.burst': '0\n',
  'memory.max': '536870912\n',
  'memory.swap.max': '0\n',
  'pids.max': '256\n',
  'memory.oom.group': '1\n',
  'cgroup.procs': '',
  'cgroup.events': 'populated 0\nfrozen 0\n',
  'cgroup.type': 'domain\n',
  'cgroup.controllers': 'cpuset cpu io memory hugetlb pids rdma misc\n',
  'cgroup.subtree_control': '', // as the kernel reads an empty list: nothing, not even a newline
};
const judge = (over: Partial<LeafTexts>, second: Partial<LeafTexts> = over): ReturnType<typeof judgeV2Leaf> => judgeV2Leaf({ ...GOOD, ...over }, { ...GOOD, ...second }, WANT);
const codeOf = (v: ReturnType<typeof judgeV2Leaf>): string => (v.ok ? 'OK' : v.code);

test('a leaf holding exactly the expected budget, empty, unfrozen, a domain with cpu, memory and pids and nothing delegated passes', () => {
  assert.deepEqual(judge({}), { ok: true });
});

test('the expected budget is derived from the admitted limits (memory as the kernel rounds it to pages), never from the leaf', () => {
  assert.deepEqual(v2Budget({ cpuMillis: 500, memoryBytes: 536_870_912 + 100, pids: 256 }), WANT);
  assert.equal(v2Budget({ cpuMillis: 1, memoryBytes: 4096, pids: 1 }).cpuQuotaMicros, 1000, 'the kernel\'s minimum quota');
});

test('each way a leaf is not the budget refuses by its own name', () => {
  const cases: [string, Partial<LeafTexts>, string, RegExp][] = [
    ['cpu.max missing (no cpu controller file)', { 'cpu.max': null }, 'CGROUP_V2_FILE_MISSING', /cpu\.max is missing/],
    ['cgroup.type missing (not a v2 directory)', { 'cgroup.type': null }, 'CGROUP_V2_FILE_MISSING', /not a cgroup v2 directory/],
    ['cpu.max not a value', { 'cpu.max': 'fifty 100000\n' }, 'CGROUP_V2_VALUE_MALFORMED', /cpu\.max holds/],
    ['cpu.max without its newline', { 'cpu.max': '50000 100000' }, 'CGROUP_V2_VALUE_MALFORMED', /cpu\.max/],
    ['pids.max negative', { 'pids.max': '-1\n' }, 'CGROUP_V2_VALUE_MALFORMED', /pids\.max/],
    ['cgroup.events garbled', { 'cgroup.events': 'populated yes\n' }, 'CGROUP_V2_VALUE_MALFORMED', /cgroup\.events/],
    ['memory.oom.group 2', { 'memory.oom.group': '2\n' }, 'CGROUP_V2_VALUE_MALFORMED', /memory\.oom\.group/],
    ['no CPU quota', { 'cpu.max': 'max 100000\n' }, 'CGROUP_V2_UNLIMITED', /cpu\.max has no quota/],
    ['memory unlimited', { 'memory.max': 'max\n' }, 'CGROUP_V2_UNLIMITED', /memory\.max is max/],
    ['swap unlimited', { 'memory.swap.max': 'max\n' }, 'CGROUP_V2_UNLIMITED', /memory\.swap\.max is max/],
    ['pids unlimited', { 'pids.max': 'max\n' }, 'CGROUP_V2_UNLIMITED', /pids\.max is max/],
    ['another quota', { 'cpu.max': '100000 100000\n' }, 'CGROUP_V2_BUDGET_MISMATCH', /cpu\.max is 100000 100000, expected 50000 100000/],
    ['another period', { 'cpu.max': '50000 50000\n' }, 'CGROUP_V2_BUDGET_MISMATCH', /cpu\.max/],
    ['a CPU burst', { 'cpu.max.burst': '1000\n' }, 'CGROUP_V2_BUDGET_MISMATCH', /cpu\.max\.burst is 1000/],
    ['more memory', { 'memory.max': '1073741824\n' }, 'CGROUP_V2_BUDGET_MISMATCH', /memory\.max is 1073741824/],
    ['some swap', { 'memory.swap.max': '4096\n' }, 'CGROUP_V2_BUDGET_MISMATCH', /memory\.swap\.max is 4096/],
    ['more pids', { 'pids.max': '257\n' }, 'CGROUP_V2_BUDGET_MISMATCH', /pids\.max is 257/],
    ['OOM kills one process only', { 'memory.oom.group': '0\n' }, 'CGROUP_V2_BUDGET_MISMATCH', /whole group/],
    ['a process in it', { 'cgroup.procs': '4242\n', 'cgroup.events': 'populated 1\nfrozen 0\n' }, 'CGROUP_V2_NOT_EMPTY', /4242/],
    ['populated below it', { 'cgroup.events': 'populated 1\nfrozen 0\n' }, 'CGROUP_V2_NOT_EMPTY', /populated 1/],
    ['frozen', { 'cgroup.events': 'populated 0\nfrozen 1\n' }, 'CGROUP_V2_FROZEN', /frozen 1/],
    ['threaded', { 'cgroup.type': 'threaded\n' }, 'CGROUP_V2_NOT_DOMAIN', /threaded/],
    ['a domain invalid', { 'cgroup.type': 'domain invalid\n' }, 'CGROUP_V2_NOT_DOMAIN', /domain invalid/],
    ['no pids controller', { 'cgroup.controllers': 'cpu memory\n' }, 'CGROUP_V2_CONTROLLERS_MISSING', /lacks the pids controller/],
    ['delegates memory below it', { 'cgroup.subtree_control': 'memory\n' }, 'CGROUP_V2_SUBTREE_ENABLED', /enables memory/],
    ['a list without its newline', { 'cgroup.controllers': 'cpu memory pids' }, 'CGROUP_V2_VALUE_MALFORMED', /cgroup\.controllers/],
  ];
  for (const [what, over, code, message] of cases) {
    const v = judge(over);
    assert.equal(codeOf(v), code, what);
    assert.match((v as { message: string }).message, message, what);
  }
});

test('two reads that differ are drift, whichever file changed', () => {
  for (const [file, text] of [['memory.max', '536866816\n'], ['cgroup.procs', '77\n'], ['cgroup.subtree_control', 'pids\n']] as const) {
    const v = judge({}, { [file]: text });
    assert.equal(codeOf(v), 'CGROUP_V2_DRIFT', file);
    assert.match((v as { message: string }).message, new RegExp(file.replace('.', '\\.')));
  }
});
