// The Grafana dashboard and the alerts against real data: a real stack (kube-apiserver + etcd, controller,
// node-agent as root) scraped by a real Prometheus (Debian's) runs a scripted sequence — admissions, every
// admission refusal the node-agent gives (RESOURCE_LIMIT_EXCEEDED, RESOURCES_UNAVAILABLE,
// RESOURCE_POLICY_INVALID, RESOURCE_STATE_UNKNOWN), a passing and a failing Check, a committed and a denied
// Collapse, a receipt ledger that fails verification at an agent start — and then every PromQL expression
// of charts/worldline/files/dashboard.json, its template variables substituted as Grafana would, must parse
// and return data through Prometheus's HTTP API; every alert expression must parse and every metric an
// alert reads must exist. The page scripts/dashboard/render.ts draws from the same queries is rendered
// too; with WORLDLINE_DASHBOARD_PNG=path it is also screenshot there (docs/images/dashboard.png).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { once } from 'node:events';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { parse } from 'yaml';
import { loadDashboard, substitute, type TimeRange } from '../../scripts/dashboard/dashboard-queries.js';
import { queryInstant } from '../../scripts/dashboard/prometheus-api.js';
import { renderDashboardPage, type RenderedPage } from '../../scripts/dashboard/render.js';
import { collapseManifest, waitCollapse } from '../support/collapses.js';
import { startPrometheus, type Prometheus } from '../support/prometheus.js';
import { startStack, type Stack } from '../support/stack.js';
import { kc, waitFor } from '../support/wait.js';
import { applyRoot, describeRun, ownedDir, ownedFile, runWorld, shWorld, worldManifest } from '../support/worlds.js';

const PROMETHEUS = '/usr/bin/prometheus';
const REPO = resolve(import.meta.dirname, '..', '..', '..');
const run = promisify(execFile);

const POLICY = {
  apiVersion: 'worldline.dev/v1alpha1',
  kind: 'Policy',
  metadata: { name: 'dash-policy' },
  spec: {
    roots: ['proj'],
    checks: [{ name: 'verify', command: ['/bin/sh', 'checks/verify.sh'], verifiers: ['checks/**'], timeout: '1m' }],
    isolation: { agent: { minimumLevel: 'os-sandboxed', controls: ['network-denied'] }, check: { minimumLevel: 'os-sandboxed', controls: ['network-denied'] } },
  },
};

async function freePort(): Promise<number> {
  const srv = createServer();
  srv.listen(0, '127.0.0.1');
  await once(srv, 'listening');
  const port = (srv.address() as { port: number }).port;
  await new Promise((r) => srv.close(r));
  return port;
}

/** The agent's flags: one reservation at a time (worlds and checks), a 256Mi per-world memory limit, a fixed metrics port. */
function agentArgs(port: number, extra: string[] = []): string[] {
  return ['--metrics-bind', `127.0.0.1:${port}`, '--node-worlds', '1', '--node-memory', '1Gi', '--node-cpu', '64', '--world-memory', '256Mi', '--world-default-memory', '64Mi', '--world-default-cpu', '100m', ...extra];
}

describe('the dashboard and the alerts against a real Prometheus scraping a real stack', () => {
  let s: Stack;
  let prom: Prometheus;
  let port: number;
  let range: TimeRange;
  let page: RenderedPage;
  const ledgerSeen: number[] = [];

  const finishedCheck = (name: string): Promise<Record<string, any>> =>
    s.waitFor(`Check ${name} finished`, async () => {
      const c = await s.get('check', name, 'default');
      return ['Passed', 'Failed', 'Refused'].includes(c?.status?.phase) ? c : undefined;
    }, 60_000);
  const admissionOutcome = (name: string, outcome: string): Promise<Record<string, any>> =>
    s.waitFor(`World ${name} answered ${outcome}`, async () => {
      const w = await s.get('world', name, 'default');
      return w?.status?.admission?.outcome === outcome ? w : undefined;
    }, 30_000);
  /** Waits until Prometheus has scraped a sample for which `promql` holds (before an agent restart drops the counters). */
  const scraped = (promql: string): Promise<unknown> => waitFor(`Prometheus to scrape ${promql}`, async () => (await prom.query(promql)).length > 0);
  const scrapedOutcome = (outcome: string): Promise<unknown> => scraped(`worldline_admission_decisions_total{outcome="${outcome}"} > 0`);
  /** Waits until Prometheus has scraped the agent's receipt-ledger gauge at `value`. */
  const ledgerGauge = async (value: number): Promise<void> => {
    await waitFor(`Prometheus to scrape worldline_receipt_ledger_verified ${value}`, async () => {
      const r = await prom.query(`worldline_receipt_ledger_verified{job="node-agent"} == ${value}`);
      return r.length === 1;
    });
    ledgerSeen.push(value);
  };

  before(async () => {
    // A real Prometheus is what this test is about: missing, it fails saying so (.ci/run installs it).
    assert.ok(existsSync(PROMETHEUS), `${PROMETHEUS} is not installed: apt-get install prometheus`);
    port = await freePort();
    s = await startStack({ nodeName: 'dash-node', agentArgs: agentArgs(port) });
    prom = await startPrometheus([
      { job: 'node-agent', address: `127.0.0.1:${port}` },
      { job: 'controller', address: new URL(s.controller.metricsUrl).host },
    ]);
    await prom.waitTargetsUp();
    const start = Math.floor(Date.now() / 1000);
    // A sample of the (pre-created, zero) refusal series inside the range, before the first refusal:
    // increase() over the range needs it, or a refusal whose first in-range sample is already 1 counts 0.
    await scraped(`timestamp(worldline_admission_decisions_total{job="node-agent",stage="agent",outcome="RESOURCE_LIMIT_EXCEEDED"} == 0) >= ${start}`);

    const proj = join(s.scratch, 'proj');
    ownedDir(proj);
    ownedDir(join(proj, 'checks'));
    ownedFile(join(proj, 'checks', 'verify.sh'), 'grep -q ok README.md\n');
    ownedFile(join(proj, 'README.md'), 'not yet\n');
    const root = await applyRoot(s, 'proj', proj);
    assert.equal(root.status.phase, 'Ready', JSON.stringify(root.status));
    await s.apply(JSON.stringify(POLICY));
    await ledgerGauge(1);

    // RESOURCE_LIMIT_EXCEEDED: more memory than one world may have.
    const big = await runWorld(s, 'too-big', shWorld(['proj'], 'echo RAN', { resources: { memory: '512Mi' } }));
    assert.equal(big.status.reason, 'RESOURCE_LIMIT_EXCEEDED', describeRun(big));
    await scrapedOutcome('RESOURCE_LIMIT_EXCEEDED');

    // ADMITTED, then RESOURCES_UNAVAILABLE while the one reservation is held; the release admits the waiter.
    await s.apply(worldManifest('holder', shWorld(['proj'], 'sleep 297.5', { resources: { wallTime: '5m' } })));
    await s.waitWorld('holder', ['Running']);
    await s.apply(worldManifest('good', shWorld(['proj'], 'echo ok > README.md')));
    await admissionOutcome('good', 'RESOURCES_UNAVAILABLE');
    await scrapedOutcome('RESOURCES_UNAVAILABLE');
    await kc(s.cp, ['delete', 'world', 'holder', '-n', 'default', '--wait=false']);
    const good = await s.waitWorld('good', ['Captured']);
    assert.equal(good.status.phase, 'Captured', JSON.stringify(good.status));
    const pass = await finishedCheck('good-verify');
    assert.equal(pass.status.verdict, 'PASS', JSON.stringify(pass.status));

    // A failing Check, then one committed and one denied Collapse.
    const bad = await runWorld(s, 'bad', shWorld(['proj'], 'echo bad > README.md'));
    assert.equal(bad.status.phase, 'Captured', describeRun(bad));
    const fail = await finishedCheck('bad-verify');
    assert.equal(fail.status.verdict, 'FAIL', JSON.stringify(fail.status));
    await s.apply(collapseManifest('bad-col', 'bad'));
    const denied = await waitCollapse(s, 'bad-col');
    assert.equal(denied.status.phase, 'Denied', JSON.stringify(denied.status));
    assert.equal(denied.status.reason, 'CHECK_NOT_PASSED', JSON.stringify(denied.status));
    await s.apply(collapseManifest('good-col', 'good'));
    assert.equal((await waitCollapse(s, 'good-col')).status.phase, 'Committed');
    for (const verdict of ['PASS', 'FAIL']) await scraped(`worldline_check_verdicts_total{verdict="${verdict}"} > 0`);
    for (const state of ['COMMITTED', 'DENIED']) await scraped(`sum(worldline_collapses_total{state="${state}"}) > 0`);

    // RESOURCE_POLICY_INVALID: a malformed ceiling refuses every World by name.
    await s.restartAgent({ agentArgs: agentArgs(port, ['--node-memory', 'lots']), signal: 'SIGTERM' });
    const invalid = await runWorld(s, 'bad-policy', shWorld(['proj'], 'echo RAN'));
    assert.equal(invalid.status.reason, 'RESOURCE_POLICY_INVALID', describeRun(invalid));
    await scrapedOutcome('RESOURCE_POLICY_INVALID');

    // RESOURCE_STATE_UNKNOWN: the node cannot be measured (an empty proc directory), so the World waits.
    const emptyProc = mkdtempSync(join(s.scratch, 'empty-proc-'));
    await s.restartAgent({ agentArgs: agentArgs(port, ['--observe-proc-dir', emptyProc]), signal: 'SIGTERM' });
    await s.apply(worldManifest('blind', shWorld(['proj'], 'echo seen')));
    await admissionOutcome('blind', 'RESOURCE_STATE_UNKNOWN');
    await scrapedOutcome('RESOURCE_STATE_UNKNOWN');

    // A ledger that fails verification at start: the agent keeps running Worlds (blind is admitted now),
    // serves no Collapse, and says so in worldline_receipt_ledger_verified. Restored, it verifies again.
    const ledger = join(s.storeDir, 'receipts', 'ledger.jsonl');
    const saved = join(s.scratch, 'ledger.saved');
    await s.restartAgent({
      agentArgs: agentArgs(port),
      signal: 'SIGTERM',
      between: () => {
        copyFileSync(ledger, saved);
        // The last line's signature is no longer hex: the line the agent checks first at open.
        const lines = readFileSync(ledger, 'utf8').trimEnd().split('\n');
        lines[lines.length - 1] = lines[lines.length - 1]!.replace(/"signature":"[0-9a-f]/, '"signature":"x');
        writeFileSync(ledger, `${lines.join('\n')}\n`);
      },
    });
    await s.agent.waitForLog((l) => /receipt ledger failed verification/.test(String(l.msg)) && l.code === 'LEDGER_CORRUPT');
    await ledgerGauge(0);
    const blind = await s.waitWorld('blind', ['Captured']);
    assert.equal(blind.status.phase, 'Captured', JSON.stringify(blind.status));
    await s.restartAgent({ agentArgs: agentArgs(port), signal: 'SIGTERM', between: () => copyFileSync(saved, ledger) });
    await ledgerGauge(1);
    await finishedCheck('blind-verify');

    // Let Prometheus scrape the last state (several 1 s scrapes) before the range ends.
    await new Promise((r) => setTimeout(r, 4000));
    range = { start, end: Math.floor(Date.now() / 1000), scrapeSeconds: 1, stepSeconds: 2 };
    page = await renderDashboardPage(prom.url, range, 'rendered by scripts/dashboard/render.ts from the test run of test/integration/dashboard-queries.test.ts');
  });

  after(async () => {
    await prom?.stop();
    await s?.stop();
  });

  test('every PromQL expression of the dashboard parses and returns data over the run', async () => {
    const dash = loadDashboard();
    assert.deepEqual(dash.variables, ['datasource'], 'the dashboard has a datasource template variable');
    const targets = dash.panels.flatMap((p) => p.targets.map((t) => ({ p, t })));
    assert.ok(targets.length >= 20, `only ${targets.length} queries`);
    for (const { p, t } of targets) {
      // Parsed by Prometheus (a parse error throws naming the expression) at the end of the range...
      const expr = substitute(t.expr, range);
      const now = await queryInstant(prom.url, expr, range.end);
      // ...and, as drawn, with at least one series holding at least one number.
      const drawn = page.panels.find((r) => r.panel.id === p.id)?.series.filter((x) => x.refId === t.refId) ?? [];
      assert.ok(drawn.length > 0, `panel "${p.title}" query ${t.refId} returned no series: ${expr}`);
      assert.ok(drawn.some((x) => x.points.some(([, v]) => Number.isFinite(v))), `panel "${p.title}" query ${t.refId} returned no number: ${expr}`);
      if (t.instant) assert.ok(now.length > 0, `panel "${p.title}" query ${t.refId} is empty at the end: ${expr}`);
    }
  });

  test('the first row shows admissions by outcome and every refusal reason; checks and collapses show both answers', () => {
    const named = (title: string): Map<string, number> => {
      const r = page.panels.find((x) => x.panel.title === title);
      assert.ok(r, `no panel "${title}"`);
      return new Map(r.series.map((x) => [x.name, x.last]));
    };
    const first = page.panels.filter((p) => p.panel.gridPos.y <= 1).map((p) => p.panel.title);
    assert.deepEqual(first.slice(0, 2), ['Admission decisions by outcome', 'Refusals by reason']);
    const refusals = named('Refusals in range');
    for (const reason of ['RESOURCES_UNAVAILABLE', 'RESOURCE_STATE_UNKNOWN', 'RESOURCE_POLICY_INVALID', 'RESOURCE_LIMIT_EXCEEDED']) {
      assert.ok((refusals.get(reason) ?? 0) > 0, `refusal ${reason} not on the dashboard: ${JSON.stringify([...refusals])}`);
    }
    assert.equal(refusals.has('ADMITTED'), false);
    assert.ok(page.panels.find((x) => x.panel.title === 'Admission decisions by outcome')!.series.some((x) => x.name === 'ADMITTED' && x.points.some(([, v]) => v > 0)));
    const isolation = page.panels.find((x) => x.panel.title === 'Isolation decisions by outcome')!.series;
    for (const stage of ['agent', 'check']) assert.ok(isolation.some((x) => x.name === `${stage} reported-sufficient` && x.points.some(([, v]) => v > 0)), `no ${stage} isolation decision drawn`);
    const checks = named('Checks in range');
    assert.ok((checks.get('PASS none') ?? 0) > 0 && (checks.get('FAIL none') ?? 0) > 0, JSON.stringify([...checks]));
    const collapses = named('Collapses in range');
    assert.ok((collapses.get('COMMITTED none') ?? 0) > 0, JSON.stringify([...collapses]));
    assert.ok((collapses.get('DENIED CHECK_NOT_PASSED') ?? 0) > 0, JSON.stringify([...collapses]));
  });

  test('every alert expression parses in Prometheus and every metric it reads is scraped', async () => {
    const rules = (parse(readFileSync(join(REPO, 'charts', 'worldline', 'files', 'alerts.yaml'), 'utf8')) as { groups: { rules: { alert: string; expr: string }[] }[] }).groups.flatMap((g) => g.rules);
    for (const r of rules) {
      await queryInstant(prom.url, r.expr, range.end);
      for (const name of new Set(r.expr.match(/\bworldline_[a-z_]+/g) ?? [])) {
        // Over the whole run: a series an agent creates on first use is gone from a restarted agent.
        const found = await queryInstant(prom.url, `count(last_over_time(${name}[${range.end - range.start}s]))`, range.end);
        assert.ok(found.length === 1 && Number(found[0]!.value[1]) > 0, `${r.alert} reads ${name}, which Prometheus has not scraped`);
      }
    }
    // The ledger that failed verification was seen by Prometheus (the alert's condition), then cleared.
    assert.deepEqual(ledgerSeen, [1, 0, 1]);
    const live = await queryInstant(prom.url, 'worldline_node_agents{state="live"}', range.end);
    assert.equal(live[0]?.value[1], '1', 'the controller counts one live node-agent heartbeat');
  });

  test('the rendered page draws every panel (and is screenshot when WORLDLINE_DASHBOARD_PNG is set)', async () => {
    const panels = loadDashboard().panels.filter((p) => p.type !== 'row');
    assert.equal(page.panels.length, panels.length);
    assert.doesNotMatch(page.html, /No data/);
    const dir = mkdtempSync(join(s.scratch, 'page-'));
    const html = join(dir, 'dashboard.html');
    writeFileSync(html, page.html);
    const png = process.env['WORLDLINE_DASHBOARD_PNG'];
    if (png) {
      await run('bash', [join(REPO, 'scripts', 'dashboard', 'screenshot.sh'), html, resolve(png), `${page.width},${page.height}`]);
      assert.ok(readFileSync(resolve(png)).subarray(1, 4).toString() === 'PNG');
    }
  });
});
