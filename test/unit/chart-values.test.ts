// charts/worldline without helm: the chart's appVersion is the worldline version (the default image tag),
// every default in values.yaml is declared by values.schema.json (which refuses unknown keys), the default
// commands name the compiled entry points, and the node-agent's defaults are the documented ones.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { repoRoot } from '../../crds/generate.js';

const root = repoRoot();
const chartDir = join(root, 'charts', 'worldline');
const values = parse(readFileSync(join(chartDir, 'values.yaml'), 'utf8')) as Record<string, unknown>;
const schema = JSON.parse(readFileSync(join(chartDir, 'values.schema.json'), 'utf8')) as Schema;

interface Schema {
  type?: string | string[];
  properties?: Record<string, Schema>;
  additionalProperties?: boolean | Schema;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Paths of values.yaml that the schema does not declare (objects with closed properties only). */
function undeclared(v: Record<string, unknown>, s: Schema, path: string): string[] {
  const out: string[] = [];
  for (const [k, child] of Object.entries(v)) {
    const p = path ? `${path}.${k}` : k;
    const cs = s.properties?.[k] ?? (isObject(s.additionalProperties) ? s.additionalProperties : undefined);
    if (!cs) {
      if (s.additionalProperties === false) out.push(p);
      continue;
    }
    if (isObject(child) && cs.properties) out.push(...undeclared(child, cs, p));
  }
  return out;
}

/** Object schemas that leave additionalProperties open (a typo in a key would pass). */
function openObjects(s: Schema, path: string): string[] {
  const out: string[] = [];
  if (s.properties) {
    if (s.additionalProperties !== false) out.push(path || '(root)');
    for (const [k, c] of Object.entries(s.properties)) out.push(...openObjects(c, path ? `${path}.${k}` : k));
  }
  return out;
}

void test("the chart's appVersion is the worldline version, and the default image tag follows it", () => {
  const chart = parse(readFileSync(join(chartDir, 'Chart.yaml'), 'utf8')) as { appVersion: string; name: string };
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string };
  assert.equal(chart.name, 'worldline');
  assert.equal(chart.appVersion, pkg.version);
  assert.deepEqual(values.image, { repository: 'worldline.local/worldline', tag: '', pullPolicy: 'IfNotPresent' });
});

void test('values.schema.json declares every default and closes every object', () => {
  assert.deepEqual(undeclared(values, schema, ''), []);
  assert.deepEqual(openObjects(schema, ''), []);
});

void test('the default commands name the compiled entry points of both processes', () => {
  for (const part of ['controller', 'nodeAgent'] as const) {
    const cmd = (values[part] as { command: string[] }).command;
    assert.equal(cmd[0], 'node');
    const entry = cmd[1] ?? '';
    assert.match(entry, /^dist\/(controller|node-agent)\/main\.js$/);
    assert.ok(existsSync(join(root, entry)), `${part}.command names ${entry}, which the build does not produce`);
  }
});

void test("the node-agent's defaults: privileged, the node's PID namespace and cgroups, store at /var/lib/worldline shared with the node", () => {
  const agent = values.nodeAgent as { privileged: boolean; hostPID: boolean; cgroupHostPath: string; store: { hostPath: string; mountPropagation: string }; rootsMountPropagation: string };
  assert.equal(agent.privileged, true);
  assert.equal(agent.hostPID, true);
  assert.equal(agent.cgroupHostPath, '/sys/fs/cgroup');
  assert.deepEqual(agent.store, { hostPath: '/var/lib/worldline', mountPropagation: 'Bidirectional' });
  assert.equal(agent.rootsMountPropagation, 'HostToContainer');
});
