// The chart's Prometheus alerts (charts/worldline/files/alerts.yaml): Debian's promtool checks the rule file
// and runs its unit tests (alerts.test.yaml); every alert the issue names exists, each is tested both firing
// and silent, no rule selects on `job`, and every worldline metric a rule reads is one the processes register.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { Registry } from 'prom-client';
import { parse } from 'yaml';
import { registerNodeAgentMetrics } from '../../controller/node-agent-metrics.js';
import { createReconcileMetrics } from '../../kube/metrics.js';
import { createAgentMetrics } from '../../node-agent/metrics.js';

const run = promisify(execFile);
const FILES = resolve(import.meta.dirname, '..', '..', '..', 'charts', 'worldline', 'files');
const PROMTOOL = '/usr/bin/promtool';

interface Rule {
  alert?: string;
  expr: string;
}
interface RuleTest {
  alert_rule_test?: { alertname: string; exp_alerts?: unknown[] }[];
}

const rules = (): Rule[] => (parse(readFileSync(resolve(FILES, 'alerts.yaml'), 'utf8')) as { groups: { rules: Rule[] }[] }).groups.flatMap((g) => g.rules);

function requirePromtool(): void {
  // promtool ships in Debian's prometheus package (.ci/run installs it); missing, this fails saying so.
  assert.ok(existsSync(PROMTOOL), `${PROMTOOL} is not installed: apt-get install prometheus`);
}

test('promtool check rules accepts alerts.yaml', async () => {
  requirePromtool();
  const r = await run(PROMTOOL, ['check', 'rules', 'alerts.yaml'], { cwd: FILES });
  assert.match(r.stdout, new RegExp(`SUCCESS: ${rules().length} rules found`));
});

test('promtool test rules passes alerts.test.yaml', async () => {
  requirePromtool();
  const r = await run(PROMTOOL, ['test', 'rules', 'alerts.test.yaml'], { cwd: FILES }).catch((e: { stdout?: string; stderr?: string }) => {
    assert.fail(`promtool test rules failed:\n${e.stdout ?? ''}${e.stderr ?? ''}`);
  });
  assert.match(r.stdout, /SUCCESS/);
});

test('the issue\'s alerts exist: admission refusal rate, collapse failures, ledger verification, node-agent down, a World stuck', () => {
  const names = rules().map((r) => r.alert);
  for (const a of ['WorldlineAdmissionRefusalRateHigh', 'WorldlineCollapseFailures', 'WorldlineReceiptLedgerVerificationFailed', 'WorldlineNodeAgentDown', 'WorldlineWorldStuck']) {
    assert.ok(names.includes(a), `${a} is missing from alerts.yaml`);
  }
});

test('every alert is unit-tested both firing and silent', () => {
  const tests = (parse(readFileSync(resolve(FILES, 'alerts.test.yaml'), 'utf8')) as { tests: RuleTest[] }).tests;
  const evals = tests.flatMap((t) => t.alert_rule_test ?? []);
  for (const { alert } of rules()) {
    if (alert === undefined) continue;
    const mine = evals.filter((e) => e.alertname === alert);
    assert.ok(mine.some((e) => (e.exp_alerts ?? []).length > 0), `${alert} is never tested firing`);
    assert.ok(mine.some((e) => (e.exp_alerts ?? []).length === 0), `${alert} is never tested silent`);
  }
});

test('no rule selects on job (a ServiceMonitor names jobs after its Services)', () => {
  for (const r of rules()) assert.doesNotMatch(r.expr, /\bjob\s*=/, `${r.alert ?? '?'} selects on job`);
});

test('every worldline metric a rule reads is registered by the node-agent or the controller', async () => {
  const registry = new Registry();
  createAgentMetrics(registry);
  createReconcileMetrics(registry);
  registerNodeAgentMetrics(registry, { synced: () => true, leases: () => [] }, { now: () => new Date() });
  const known = new Set((await registry.getMetricsAsJSON()).map((m) => m.name));
  for (const r of rules()) {
    for (const name of r.expr.match(/\bworldline_[a-z_]+/g) ?? []) {
      assert.ok(known.has(name.replace(/_(bucket|sum|count)$/, '')), `${r.alert ?? '?'} reads ${name}, which no process registers`);
    }
  }
});
