// Benchmark: what a private-evaluator run costs on the node, next to `cp -a` of the same tree in the same
// run. For a candidate tree of N files: freezing it (freezeTree: the copy with change detection and its
// manifest), an examiner run that starts no candidate (principals, the examiner's root filesystem, its
// spawn, the report collected), and the examiner starting candidate sessions one after another, timed by
// the examiner around each `run` of /bin/true (a session mounts an overlay view of the frozen tree, so it does not grow with the tree).
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { nsIds } from '../../native/index.js';
import { freezeTree } from '../../node-agent/private-evaluator/freeze-tree.js';
import { runExaminer, VERIFIERS_PATH } from '../../node-agent/private-evaluator/run-examiner.js';
import { detectCgroups } from '../../node-agent/sandbox/cgroup.js';
import { supervisorCgroupProcs } from '../../node-agent/sandbox/supervisor-cgroup.js';
import { median, settle, timeSync } from './stats.js';
import { generateTree } from './tree-fixtures.js';

export interface PrivateBenchRow {
  files: number;
  rounds: number;
  cpMs: number;
  freezeMs: number;
  examinerOnlyMs: number;
  sessionMs: number;
}

const HOST_BASE = 3_700_000;
const SESSIONS = 5;
const EXAMINE = `
import sys, time
sys.path.insert(0, '${VERIFIERS_PATH}')
from worldline_broker import Broker
times = []
if sys.argv[1] == 'sessions':
    with Broker() as b:
        for _ in range(${SESSIONS}):
            t = time.monotonic()
            b.run(['/bin/true'], '/work/input', 60000)
            times.append((time.monotonic() - t) * 1000)
print('session-ms', ' '.join('%.2f' % x for x in times))
with open('/run/worldline-report/report', 'w') as f:
    f.write('<testsuite tests="1" failures="0"/>')
`;

export async function benchPrivate(scratch: string, sizes: readonly number[], rounds: (files: number) => number): Promise<PrivateBenchRow[]> {
  const base = join(scratch, `private-bench-${process.pid}`);
  mkdirSync(base, { recursive: true });
  const layout = detectCgroups();
  const verifiers = join(base, 'verifiers');
  mkdirSync(verifiers, { mode: 0o755 });
  writeFileSync(join(verifiers, 'examine.py'), EXAMINE, { mode: 0o644 });
  copyFileSync(resolve(import.meta.dirname, '..', '..', '..', 'examples', 'greeter', 'checks', 'worldline_broker.py'), join(verifiers, 'worldline_broker.py'));
  let n = 0;
  const run = async (frozen: ReturnType<typeof freezeTree>, mode: 'none' | 'sessions'): Promise<{ ms: number; sessions: number[] }> => {
    const k = ++n;
    const t0 = performance.now();
    const r = await runExaminer({
      dir: join(base, `run-${k}`), hostBase: HOST_BASE, agentNs: nsIds('self'),
      inputs: [{ frozen, path: '/work/input' }], verifiers: [{ dir: verifiers, path: VERIFIERS_PATH }],
      argv: ['/usr/bin/python3', '-I', `${VERIFIERS_PATH}/examine.py`, mode], env: ['PATH=/usr/bin:/bin', 'LANG=C.UTF-8'], cwd: '/',
      binding: { run: `bench-${process.pid}-${k}`, check: 'bench', candidate: frozen.sourceDigest, verifier: `sha256:${'d'.repeat(64)}` },
      reportFormat: 'junit', cgroups: layout, limits: { cpuMillis: 2000, memoryBytes: 1024 * 1024 * 1024, pids: 256 },
      supervisorCgroupProcs: supervisorCgroupProcs(layout), wallTimeMs: 600_000, outputLimitBytes: 1 << 20,
    });
    const ms = performance.now() - t0;
    if (r.record.boundary.problems.length > 0 || r.record.report.state !== 'collected') throw new Error(`the bench run failed: ${JSON.stringify(r.record)}`);
    const line = readFileSync(r.outputFile, 'utf8').split('\n').find((l) => l.startsWith('session-ms')) ?? 'session-ms';
    rmSync(join(base, `run-${k}`), { recursive: true, force: true });
    return { ms, sessions: line.split(' ').slice(1).filter(Boolean).map(Number) };
  };
  const rows: PrivateBenchRow[] = [];
  try {
    for (const files of sizes) {
      const src = join(base, `tree-${files}`);
      generateTree(src, files, { uid: 1000, gid: 1000 });
      const cp: number[] = [];
      const freeze: number[] = [];
      const only: number[] = [];
      const sessions: number[] = [];
      await run(freezeTree(src, join(base, `warm-${files}`), HOST_BASE), 'none'); // first spawn of the process, not measured
      for (let r = 0; r < rounds(files); r++) {
        settle();
        cp.push(timeSync(() => {
          const p = spawnSync('cp', ['-a', src, join(base, `cp-${files}-${r}`)]);
          if (p.status !== 0) throw new Error(`cp -a failed: ${String(p.stderr)}`);
        }));
        settle();
        let frozen!: ReturnType<typeof freezeTree>;
        freeze.push(timeSync(() => (frozen = freezeTree(src, join(base, `frozen-${files}-${r}`), HOST_BASE))));
        only.push((await run(frozen, 'none')).ms);
        sessions.push(...(await run(frozen, 'sessions')).sessions);
        rmSync(join(base, `cp-${files}-${r}`), { recursive: true, force: true });
        rmSync(join(base, `frozen-${files}-${r}`), { recursive: true, force: true });
      }
      rows.push({ files, rounds: rounds(files), cpMs: median(cp), freezeMs: median(freeze), examinerOnlyMs: median(only), sessionMs: median(sessions) });
    }
  } finally {
    rmSync(base, { recursive: true, force: true });
  }
  return rows;
}
