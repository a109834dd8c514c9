// The examiner's report directory on the real kernel: made fresh, owner-only, the examiner's, with the
// node-agent's binding marker; bound into the examiner's sandbox at /run/worldline-report; collected
// after the run. Every way the examiner (or anyone) can leave something other than one bounded, singly
// linked regular file of its own, or alter the directory or marker, makes the report UNTRUSTED by name.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { appendFileSync, chownSync, mkdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { bindMount, MNT_DETACH, nsIds, umount2 } from '../../native/index.js';
import { ROLE_PATHS } from '../../core/private-evaluator/principals.js';
import { CheckPrincipals } from '../../node-agent/private-evaluator/check-principals.js';
import { ReportDir, type CollectOptions, type ReportBinding, type ReportCollection } from '../../node-agent/private-evaluator/report-dir.js';
import { detectCgroups, WorldCgroup } from '../../node-agent/sandbox/cgroup.js';
import { supervisorCgroupProcs } from '../../node-agent/sandbox/supervisor-cgroup.js';
import { requireRoot } from '../support/require-root.js';
import { Cleanup, buildRootfs } from './native-fixtures.js';

requireRoot('the private evaluator report directory');
const cleanup = new Cleanup();
after(() => cleanup.run());
const agentNs = nsIds('self');
const layout = detectCgroups();
const HOST_BASE = 3_200_000;
const base = cleanup.tempDir('report');
const rootfs = buildRootfs(base, cleanup);
mkdirSync(join(rootfs, 'run'));
mkdirSync(join(rootfs, ROLE_PATHS.report));
const broker = createServer().listen(join(rootfs, ROLE_PATHS.examinerBroker));
cleanup.add(() => broker.close());
const BINDING: ReportBinding = { run: 'run-1', check: 'unit', candidate: `sha256:${'a'.repeat(64)}`, verifier: `sha256:${'b'.repeat(64)}` };
let cases = 0;

/** Runs `script` as the examiner with a fresh report directory bound in, then collects it. */
async function examine(script: string, opts: CollectOptions & { beforeCollect?: (dir: string) => void } = {}): Promise<ReportCollection> {
  const n = ++cases;
  const report = ReportDir.create(join(base, `report-${n}`), BINDING, HOST_BASE);
  const target = join(rootfs, ROLE_PATHS.report);
  bindMount(report.dir, target, { readonly: false, recursive: false, nosuid: true, nodev: true });
  const principals = CheckPrincipals.open(HOST_BASE, agentNs);
  const cgroup = WorldCgroup.create(layout, 'worldline', `pe-report-${process.pid}-${n}`);
  try {
    cgroup.applyAndVerify({ cpuMillis: 500, memoryBytes: 128 * 1024 * 1024, pids: 64 });
    const running = await principals.start('examiner', {
      rootfs, argv: ['/bin/sh', '-c', script], env: ['PATH=/usr/bin:/bin'], cwd: ROLE_PATHS.report, cgroup,
      outputFile: join(base, `examiner-${n}.log`), supervisorCgroupProcs: supervisorCgroupProcs(layout), outputLimitBytes: 65536, wallTimeMs: 20_000,
    });
    const end = await running.done;
    assert.equal(end.code, 0, `the examiner's script ran: ${script}`);
  } finally {
    umount2(target, MNT_DETACH);
    principals.close();
    cgroup.killAll();
    cgroup.remove();
  }
  opts.beforeCollect?.(report.dir);
  return report.collect(opts);
}

function reasonOf(c: ReportCollection): string {
  return c.state === 'collected' ? 'collected' : c.reason;
}

test('a report the examiner wrote is collected with its bytes, digest and binding', async () => {
  const c = await examine("printf '<testsuite tests=\"1\"/>' > report; id -u");
  assert.equal(c.state, 'collected', JSON.stringify(c));
  if (c.state !== 'collected') return;
  assert.equal(c.bytes.toString(), '<testsuite tests="1"/>');
  assert.equal(c.size, 22);
  assert.equal(c.digest, `sha256:${createHash('sha256').update('<testsuite tests="1"/>').digest('hex')}`);
  assert.deepEqual(c.binding, BINDING);
});

test('no report, a link, a FIFO, a directory, a second link, or too many bytes: each untrusted by name', async () => {
  assert.equal(reasonOf(await examine('true')), 'REPORT_MISSING');
  assert.equal(reasonOf(await examine('ln -s /etc/passwd report')), 'REPORT_NOT_REGULAR');
  assert.equal(reasonOf(await examine('mkfifo report')), 'REPORT_NOT_REGULAR', 'a FIFO is refused without hanging the collector');
  assert.equal(reasonOf(await examine('mkdir report')), 'REPORT_NOT_REGULAR');
  assert.equal(reasonOf(await examine('echo x > a; ln a report')), 'REPORT_MULTIPLY_LINKED');
  assert.equal(reasonOf(await examine('head -c 2000 /dev/zero > report', { maxBytes: 1000 })), 'REPORT_TOO_LARGE');
  assert.equal(reasonOf(await examine('head -c 1000 /dev/zero > report', { maxBytes: 1000 })), 'collected', 'exactly the bound is accepted');
});

test('a replaced marker or an opened-up directory breaks the binding', async () => {
  const forged = JSON.stringify(BINDING);
  assert.equal(reasonOf(await examine(`mv binding.json old; printf '%s\\n' '${forged}' > binding.json; echo ok > report`)), 'REPORT_BINDING_MISMATCH');
  assert.equal(reasonOf(await examine('rm -f binding.json; echo ok > report')), 'REPORT_BINDING_MISMATCH');
  assert.equal(reasonOf(await examine('chmod 0755 .; echo ok > report')), 'REPORT_BINDING_MISMATCH');
  const other = await examine('echo ok > report', { beforeCollect: (dir) => writeFileSync(join(dir, 'binding.json'), '{}\n') });
  assert.equal(reasonOf(other), 'REPORT_BINDING_MISMATCH', 'a marker holding another binding');
});

test('a report that is not the examiner\'s, or that changes while it is read, is untrusted', async () => {
  const foreign = await examine('true', {
    beforeCollect: (dir) => {
      writeFileSync(join(dir, 'report'), 'candidate wrote this');
      chownSync(join(dir, 'report'), HOST_BASE + 2, HOST_BASE + 2);
    },
  });
  assert.equal(reasonOf(foreign), 'REPORT_OWNER_INVALID');
  let dir = '';
  let appended = false;
  const moving = await examine('head -c 300000 /dev/zero > report', {
    beforeCollect: (d) => (dir = d),
    onChunk: () => {
      if (appended) return;
      appended = true;
      appendFileSync(join(dir, 'report'), 'more');
    },
  });
  assert.ok(appended);
  assert.equal(reasonOf(moving), 'REPORT_CHANGED_DURING_READ');
});
