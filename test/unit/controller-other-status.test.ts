import { test } from 'node:test';
import assert from 'node:assert/strict';
import { computeDependentStatus } from '../../controller/dependent-status.js';
import { computePolicyStatus, checkWarnings, namesRelativeFile } from '../../controller/policy-status.js';
import { computeRootStatus, pathsOverlap } from '../../controller/root-status.js';
import { parseConfig } from '../../controller/config.js';

const now = new Date('2026-11-30T10:00:00Z');

test('a Check naming a missing World says WorldNotFound; a present one copies the node', () => {
  const missing = computeDependentStatus('Check', { metadata: { name: 'c', namespace: 'ns', generation: 1 }, spec: { worldRef: 'w' } }, undefined, now);
  assert.equal(missing.conditions[0]?.reason, 'WorldNotFound');
  assert.equal(missing.conditions[0]?.status, 'False');
  assert.match(missing.conditions[0]?.message ?? '', /"w".*"ns"/);
  const found = computeDependentStatus('Collapse', { metadata: { name: 'c', namespace: 'ns' }, spec: { worldRef: 'w' } }, { metadata: { name: 'w', uid: 'u' }, status: { nodeName: 'n1' } }, now);
  assert.equal(found.conditions[0]?.reason, 'WorldFound');
  assert.equal(found.nodeName, 'n1');
  const dying = computeDependentStatus('Collapse', { metadata: { name: 'c', namespace: 'ns' }, spec: { worldRef: 'w' } }, { metadata: { name: 'w', deletionTimestamp: now.toISOString() } }, now);
  assert.equal(dying.conditions[0]?.reason, 'WorldTerminating');
});

test('overlapping Root paths on one node: the older Root keeps the path', () => {
  assert.equal(pathsOverlap('/a/b', '/a/b/'), true);
  assert.equal(pathsOverlap('/a/b', '/a/bc'), false);
  assert.equal(pathsOverlap('/a', '/a/b/c'), true);
  const older = { metadata: { name: 'old', creationTimestamp: '2026-01-01T00:00:00Z' }, spec: { nodeName: 'n', path: '/srv/repo' } };
  const newer = { metadata: { name: 'new', creationTimestamp: '2026-02-01T00:00:00Z' }, spec: { nodeName: 'n', path: '/srv/repo/sub' } };
  const other = { metadata: { name: 'elsewhere', creationTimestamp: '2025-01-01T00:00:00Z' }, spec: { nodeName: 'm', path: '/srv/repo' } };
  const all = [older, newer, other];
  assert.equal(computeRootStatus(older, all, now).conditions[0]?.status, 'True');
  const refused = computeRootStatus(newer, all, now).conditions[0];
  assert.equal(refused?.status, 'False');
  assert.equal(refused?.reason, 'RootPathConflict');
  assert.match(refused?.message ?? '', /"old"/);
});

test('Policy: private checks after legacy ones, with verifiers; warnings for checks binding no file', () => {
  const base = { metadata: { name: 'p', generation: 2 }, spec: { roots: ['r'] } };
  const ok = computePolicyStatus({ ...base, spec: { roots: ['r'], checks: [{ name: 'a', command: ['sh', 'checks/a.sh'], profile: 'legacy' }, { name: 'b', command: ['/usr/bin/python3', '-I', '/run/worldline-verifiers/r/v.py'], profile: 'private-evaluator-v1', verifiers: ['v.py'] }] } }, [], () => true, now);
  assert.equal(ok.conditions[0]?.status, 'True');
  assert.deepEqual(ok.warnings, []);
  const order = computePolicyStatus({ ...base, spec: { roots: ['r'], checks: [{ name: 'b', command: ['x'], profile: 'private-evaluator-v1', verifiers: ['v'] }, { name: 'a', command: ['make', 'test'], profile: 'legacy' }] } }, [], () => true, now);
  assert.equal(order.conditions[0]?.reason, 'CheckProfileOrderInvalid');
  const noVer = computePolicyStatus({ ...base, spec: { roots: ['r'], checks: [{ name: 'b', command: ['x'], profile: 'private-evaluator-v1' }] } }, [], () => true, now);
  assert.equal(noVer.conditions[0]?.reason, 'PrivateCheckWithoutVerifiers');
  const formats = (reportFormat: 'junit' | 'gnatprove' | 'worldline-benchmark-v1') =>
    computePolicyStatus({ ...base, spec: { roots: ['r'], checks: [{ name: 'b', command: ['/usr/bin/python3', '/run/worldline-verifiers/r/x.py'], profile: 'private-evaluator-v1', verifiers: ['v'], reportFormat }] } }, [], () => true, now).conditions[0];
  assert.equal(formats('junit')?.status, 'True');
  assert.equal(formats('worldline-benchmark-v1')?.status, 'True');
  const gnat = formats('gnatprove');
  assert.deepEqual([gnat?.status, gnat?.reason], ['False', 'ReportFormatUnsupported'], 'a format no node-agent reads is refused on the Policy, not only when its reports are');
  assert.match(gnat?.message ?? '', /reportFormat gnatprove.*read: junit, worldline-benchmark-v1/);
  const examiner = (command: string[]) =>
    computePolicyStatus({ ...base, spec: { roots: ['r'], checks: [{ name: 'b', command, profile: 'private-evaluator-v1', verifiers: ['v'], reportFormat: 'junit' }] } }, [], () => true, now).conditions[0];
  assert.equal(examiner(['/usr/bin/python3', '-I', '-B', '/run/worldline-verifiers/r/checks/e.py', '-c', 'x'])?.status, 'True', "the script's own arguments are free");
  for (const [command, why] of [
    [['python3', '/run/worldline-verifiers/r/e.py'], /must be \/usr\/bin\/python3/],
    [['/usr/bin/python3', '-c', 'print(1)', '/run/worldline-verifiers/r/e.py'], /option "-c" is not allowed/],
    [['/usr/bin/python3', '-m', 'pytest'], /option "-m" is not allowed/],
    [['/usr/bin/python3', '-I'], /no script/],
    [['/usr/bin/python3', 'examine.py'], /not a file under \/run\/worldline-verifiers/],
    [['/usr/bin/python3', '/run/worldline-verifiers/r/../../../work/input/e.py'], /not a file under/],
    [['/usr/bin/python3', '/run/worldline-verifiers/e.py'], /not a file under \/run\/worldline-verifiers\/<root>/],
  ] as [string[], RegExp][]) {
    const c = examiner(command);
    assert.deepEqual([c?.status, c?.reason], ['False', 'PrivateExaminerInvalid'], command.join(' '));
    assert.match(c?.message ?? '', why, command.join(' '));
  }
  const missingRoot = computePolicyStatus(base, [], () => false, now);
  assert.equal(missingRoot.conditions[0]?.reason, 'PolicyRootNotFound');
  assert.deepEqual(checkWarnings([{ name: 'm', command: ['make', 'test'], profile: 'legacy' }]).length, 1);
  assert.equal(namesRelativeFile('-m'), false);
  assert.equal(namesRelativeFile('tests/run.sh'), true);
  assert.equal(namesRelativeFile('/usr/bin/x'), false);
});

test('Policy: a second Policy governing the same Root is refused', () => {
  const a = { metadata: { name: 'a', creationTimestamp: '2026-01-01T00:00:00Z' }, spec: { roots: ['r'], checks: [] } };
  const b = { metadata: { name: 'b', creationTimestamp: '2026-01-02T00:00:00Z' }, spec: { roots: ['r', 's'], checks: [] } };
  assert.equal(computePolicyStatus(a, [a, b], () => true, now).conditions[0]?.status, 'True');
  assert.equal(computePolicyStatus(b, [a, b], () => true, now).conditions[0]?.reason, 'PolicyRootConflict');
});

test('controller flags: defaults and clear errors', () => {
  const c = parseConfig([], {});
  assert.equal(c.namespace, 'worldline-system');
  assert.equal(c.metricsPort, 8080);
  assert.equal(c.leaderElect, true);
  assert.throws(() => parseConfig(['--metrics-bind', 'nope'], {}), /HOST:PORT/);
  assert.throws(() => parseConfig(['--leader-elect', 'maybe'], {}), /true or false/);
  assert.throws(() => parseConfig(['--lease-duration', '1'], {}), /lease-duration/);
  assert.throws(() => parseConfig(['--bogus'], {}), /bogus/);
});
