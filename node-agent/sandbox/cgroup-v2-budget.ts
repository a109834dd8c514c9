// The cgroup v2 budget a leaf must hold before anything runs in it (issue 13, item 9), judged from the
// exact text of its control files as two bounded reads found them (cgroup-v2-preflight.ts does the
// reading). The expected values come from the caller's admitted limits, never from the leaf: the CPU
// quota and period exactly, no CPU burst, the memory limit, no swap, the pids limit, whole-group OOM
// kill; an empty, unfrozen domain leaf with the cpu, memory and pids controllers and none enabled below
// it. A file missing, a value that does not parse, an unlimited setting, a value other than expected and
// any difference between the two reads each refuse by name. Pure: texts in, a verdict out.

export const V2_BUDGET_FILES = [
  'cpu.max',
  'cpu.max.burst',
  'memory.max',
  'memory.swap.max',
  'pids.max',
  'memory.oom.group',
  'cgroup.procs',
  'cgroup.events',
  'cgroup.type',
  'cgroup.controllers',
  'cgroup.subtree_control',
] as const;
export type V2BudgetFile = (typeof V2_BUDGET_FILES)[number];
/** The files every cgroup v2 directory has, whatever its controllers. */
const STATE_FILES: readonly V2BudgetFile[] = ['cgroup.procs', 'cgroup.events', 'cgroup.type', 'cgroup.controllers', 'cgroup.subtree_control'];

/** Each file's exact text as read, or null when it does not exist. */
export type LeafTexts = Readonly<Record<V2BudgetFile, string | null>>;

export interface V2Budget {
  cpuQuotaMicros: number;
  cpuPeriodMicros: number;
  memoryBytes: number;
  pids: number;
}

export type V2BudgetCode =
  | 'CGROUP_V2_FILE_MISSING'
  | 'CGROUP_V2_VALUE_MALFORMED'
  | 'CGROUP_V2_UNLIMITED'
  | 'CGROUP_V2_BUDGET_MISMATCH'
  | 'CGROUP_V2_DRIFT'
  | 'CGROUP_V2_NOT_EMPTY'
  | 'CGROUP_V2_FROZEN'
  | 'CGROUP_V2_NOT_DOMAIN'
  | 'CGROUP_V2_CONTROLLERS_MISSING'
  | 'CGROUP_V2_SUBTREE_ENABLED';

export type V2Verdict = { ok: true } | { ok: false; code: V2BudgetCode; message: string };

const REQUIRED_CONTROLLERS = ['cpu', 'memory', 'pids'];
const UINT = /^(0|[1-9][0-9]{0,18})$/;

/** The one line a control file holds, without its newline; null when the text is not exactly that. */
function oneLine(text: string): string | null {
  return /^[^\n]*\n$/.test(text) ? text.slice(0, -1) : null;
}

/** Judges a leaf from two reads of its files against the expected budget. */
export function judgeV2Leaf(first: LeafTexts, second: LeafTexts, want: V2Budget): V2Verdict {
  const fail = (code: V2BudgetCode, message: string): V2Verdict => ({ ok: false, code, message });
  // The leaf's own files exist on every cgroup v2 directory; the budget's exist only where their
  // controller is enabled, so a missing controller is named before a missing file.
  const present = (f: V2BudgetFile): boolean => first[f] !== null && second[f] !== null;
  for (const f of STATE_FILES) if (!present(f)) return fail('CGROUP_V2_FILE_MISSING', `${f} is missing: this is not a cgroup v2 directory`);
  for (const f of V2_BUDGET_FILES) {
    if (first[f] !== second[f]) return fail('CGROUP_V2_DRIFT', `${f} changed between two reads (${JSON.stringify(first[f])}, then ${JSON.stringify(second[f])})`);
  }
  const t = (f: V2BudgetFile): string => first[f] ?? '';
  const line = (f: V2BudgetFile): string => {
    const l = oneLine(t(f));
    if (l === null) throw new Malformed(f, t(f));
    return l;
  };
  // A list file (controllers) reads as nothing at all when empty, else as one line.
  const list = (f: V2BudgetFile): string[] => (t(f) === '' ? [] : line(f).split(' ').filter((c) => c !== ''));
  const uintOrMax = (f: V2BudgetFile, v: string): number | 'max' => {
    if (v === 'max') return 'max';
    if (!UINT.test(v) || !Number.isSafeInteger(Number(v))) throw new Malformed(f, t(f));
    return Number(v);
  };
  try {
    // Membership and state first: they say whether this is a leaf to run in at all.
    if (line('cgroup.type') !== 'domain') return fail('CGROUP_V2_NOT_DOMAIN', `cgroup.type is ${JSON.stringify(line('cgroup.type'))}, not domain`);
    if (t('cgroup.procs') !== '') return fail('CGROUP_V2_NOT_EMPTY', `the leaf holds processes (cgroup.procs: ${t('cgroup.procs').trim().split('\n').slice(0, 5).join(', ')})`);
    const events = new Map<string, string>();
    for (const l of t('cgroup.events').split('\n').filter((x) => x !== '')) {
      const m = /^([a-z_]+) (0|1)$/.exec(l);
      if (!m) throw new Malformed('cgroup.events', t('cgroup.events'));
      events.set(m[1]!, m[2]!);
    }
    if (!events.has('populated') || !events.has('frozen')) throw new Malformed('cgroup.events', t('cgroup.events'));
    if (events.get('populated') !== '0') return fail('CGROUP_V2_NOT_EMPTY', 'cgroup.events says populated 1: a process lives in the leaf or below it');
    if (events.get('frozen') !== '0') return fail('CGROUP_V2_FROZEN', 'cgroup.events says frozen 1');
    const controllers = list('cgroup.controllers');
    const missing = REQUIRED_CONTROLLERS.filter((c) => !controllers.includes(c));
    if (missing.length > 0) return fail('CGROUP_V2_CONTROLLERS_MISSING', `the leaf lacks the ${missing.join(', ')} controller(s) (it has: ${controllers.join(' ') || 'none'})`);
    const subtree = list('cgroup.subtree_control');
    if (subtree.length > 0) return fail('CGROUP_V2_SUBTREE_ENABLED', `cgroup.subtree_control enables ${subtree.join(' ')}: the leaf must delegate nothing below it`);
    for (const f of V2_BUDGET_FILES) if (!present(f)) return fail('CGROUP_V2_FILE_MISSING', `${f} is missing from the leaf`);

    const cpu = line('cpu.max').split(' ');
    if (cpu.length !== 2) throw new Malformed('cpu.max', t('cpu.max'));
    const quota = uintOrMax('cpu.max', cpu[0]!);
    const period = uintOrMax('cpu.max', cpu[1]!);
    if (period === 'max') throw new Malformed('cpu.max', t('cpu.max'));
    if (quota === 'max') return fail('CGROUP_V2_UNLIMITED', 'cpu.max has no quota (max)');
    if (quota !== want.cpuQuotaMicros || period !== want.cpuPeriodMicros) return fail('CGROUP_V2_BUDGET_MISMATCH', `cpu.max is ${quota} ${period}, expected ${want.cpuQuotaMicros} ${want.cpuPeriodMicros}`);
    const burst = uintOrMax('cpu.max.burst', line('cpu.max.burst'));
    if (burst !== 0) return fail('CGROUP_V2_BUDGET_MISMATCH', `cpu.max.burst is ${burst}, expected 0`);
    const memory = uintOrMax('memory.max', line('memory.max'));
    if (memory === 'max') return fail('CGROUP_V2_UNLIMITED', 'memory.max is max');
    if (memory !== want.memoryBytes) return fail('CGROUP_V2_BUDGET_MISMATCH', `memory.max is ${memory}, expected ${want.memoryBytes}`);
    const swap = uintOrMax('memory.swap.max', line('memory.swap.max'));
    if (swap === 'max') return fail('CGROUP_V2_UNLIMITED', 'memory.swap.max is max');
    if (swap !== 0) return fail('CGROUP_V2_BUDGET_MISMATCH', `memory.swap.max is ${swap}, expected 0`);
    const pids = uintOrMax('pids.max', line('pids.max'));
    if (pids === 'max') return fail('CGROUP_V2_UNLIMITED', 'pids.max is max');
    if (pids !== want.pids) return fail('CGROUP_V2_BUDGET_MISMATCH', `pids.max is ${pids}, expected ${want.pids}`);
    const oom = line('memory.oom.group');
    if (oom !== '0' && oom !== '1') throw new Malformed('memory.oom.group', t('memory.oom.group'));
    if (oom !== '1') return fail('CGROUP_V2_BUDGET_MISMATCH', 'memory.oom.group is 0: an OOM kill must take the whole group');
  } catch (e) {
    if (e instanceof Malformed) return fail('CGROUP_V2_VALUE_MALFORMED', e.message);
    throw e;
  }
  return { ok: true };
}

class Malformed extends Error {
  constructor(file: string, text: string) {
    super(`${file} holds ${JSON.stringify(text.length > 80 ? `${text.slice(0, 80)}…` : text)}, which is not a value of its form`);
  }
}
