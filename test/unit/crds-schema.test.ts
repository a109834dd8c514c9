// Structural properties of the generated CRDs, the API vocabulary, and agreement between the zod
// schemas and the examples/fixtures.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { parseAllDocuments } from 'yaml';
import type { z } from 'zod';
import {
  API_VERSION,
  CheckSchema,
  CollapseSchema,
  DESIGN_OUTCOMES,
  ISOLATION_CONTROLS,
  ISOLATION_DECISIONS,
  ISOLATION_LEVELS,
  OUTCOME_CODE_PATTERN,
  PolicySchema,
  RootSchema,
  WorldSchema,
  WorldSpecSchema,
  definitions,
  levelAtLeast,
  parseDuration,
  parseQuantity,
  resources,
} from '../../crds/index.js';
import { repoRoot } from '../../crds/generate.js';
import { renderCrd, type JsonSchema } from '../../crds/render.js';

const root = repoRoot();

const kindSchemas: Record<string, z.ZodType> = {
  Root: RootSchema,
  Policy: PolicySchema,
  World: WorldSchema,
  Check: CheckSchema,
  Collapse: CollapseSchema,
};

type Visit = (node: JsonSchema, path: string, isProperty: boolean) => void;

function walk(node: JsonSchema, path: string, visit: Visit, isProperty = false): void {
  visit(node, path, isProperty);
  const props = node.properties as Record<string, JsonSchema> | undefined;
  if (props) for (const [k, v] of Object.entries(props)) walk(v, `${path}.${k}`, visit, true);
  if (node.items) walk(node.items as JsonSchema, `${path}[]`, visit);
  if (node.additionalProperties && typeof node.additionalProperties === 'object') {
    walk(node.additionalProperties as JsonSchema, `${path}.*`, visit);
  }
}

function schemaOf(kind: string): JsonSchema {
  const def = definitions.find((d) => d.kind === kind);
  assert.ok(def, kind);
  return renderCrd(def).spec.versions[0]!.schema.openAPIV3Schema;
}

void test('the five kinds have the fixed names, scopes, short names and category', () => {
  const expected = {
    Root: ['roots', 'Cluster', 'wlroot'],
    Policy: ['policies', 'Cluster', 'wlpol'],
    World: ['worlds', 'Namespaced', 'wl'],
    Check: ['checks', 'Namespaced', 'wlcheck'],
    Collapse: ['collapses', 'Namespaced', 'wlcol'],
  } as const;
  assert.deepEqual(definitions.map((d) => d.kind), Object.keys(expected));
  for (const def of definitions) {
    const [plural, scope, short] = expected[def.kind as keyof typeof expected];
    const crd = renderCrd(def);
    assert.equal(crd.metadata.name, `${plural}.worldline.dev`);
    assert.equal(crd.spec.group, 'worldline.dev');
    assert.equal(crd.spec.scope, scope);
    assert.deepEqual(crd.spec.names.shortNames, [short]);
    assert.deepEqual(crd.spec.names.categories, ['worldline']);
    const v = crd.spec.versions[0]!;
    assert.equal(v.name, 'v1alpha1');
    assert.ok(v.served && v.storage);
    assert.deepEqual(v.subresources, { status: {} });
    assert.equal(resources[def.kind as keyof typeof resources].plural, plural);
    assert.equal(resources[def.kind as keyof typeof resources].namespaced, scope === 'Namespaced');
  }
});

void test('printer columns and selectable fields', () => {
  const shown = (kind: string) => {
    const def = definitions.find((d) => d.kind === kind)!;
    return def.printerColumns.filter((c) => (c.priority ?? 0) === 0).map((c) => c.name);
  };
  assert.deepEqual(shown('World'), ['PHASE', 'NODE', 'CANDIDATE', 'CHECKS', 'AGE']);
  assert.deepEqual(shown('Root'), ['NODE', 'PATH', 'PHASE', 'GENERATION', 'DIGEST', 'AGE']);
  assert.deepEqual(shown('Check'), ['WORLD', 'CHECK', 'PHASE', 'VERDICT', 'AGE']);
  assert.deepEqual(shown('Collapse'), ['WORLD', 'MODE', 'PHASE', 'RECEIPT', 'AGE']);
  assert.ok(shown('Policy').includes('AGE'));
  const selectable = Object.fromEntries(definitions.map((d) => [d.kind, d.selectableFields.map((f) => f.jsonPath)]));
  assert.deepEqual(selectable, {
    Root: ['.spec.nodeName'],
    Policy: [],
    World: ['.status.nodeName'],
    Check: ['.status.nodeName'],
    Collapse: ['.status.nodeName'],
  });
  // Every column and selectable field points at a field that exists in the schema.
  for (const def of definitions) {
    const schema = schemaOf(def.kind);
    const paths = [...def.printerColumns.map((c) => c.jsonPath), ...def.selectableFields.map((f) => f.jsonPath)];
    for (const p of paths) {
      if (p.startsWith('.metadata.')) continue;
      let node: JsonSchema | undefined = schema;
      for (const seg of p.replace(/\[\?.*$/, '').split('.').slice(1)) {
        node = (node?.properties as Record<string, JsonSchema> | undefined)?.[seg];
      }
      assert.ok(node, `${def.kind}: column path ${p} is not in the schema`);
    }
  }
});

void test('schemas are structural: typed nodes, descriptions everywhere, no refs or closed objects', () => {
  for (const def of definitions) {
    const schema = schemaOf(def.kind);
    assert.deepEqual((schema.properties as Record<string, JsonSchema>).metadata, { type: 'object' });
    walk(schema, def.kind, (node, path, isProperty) => {
      if (path === `${def.kind}.metadata`) return;
      for (const k of ['$ref', 'oneOf', 'allOf', 'not', '$schema', 'const', 'propertyNames']) assert.ok(!(k in node), `${path} has ${k}`);
      assert.notEqual(node.additionalProperties, false, `${path}: additionalProperties false`);
      if (node['x-kubernetes-int-or-string'] === true) {
        assert.deepEqual(node.anyOf, [{ type: 'integer' }, { type: 'string' }], path);
        assert.ok(!('type' in node), path);
      } else {
        assert.ok(!('anyOf' in node), `${path}: anyOf`);
        assert.equal(typeof node.type, 'string', `${path}: no type`);
      }
      if (isProperty) assert.ok(typeof node.description === 'string' && node.description.length > 0, `${path}: no description`);
      if (node['x-kubernetes-preserve-unknown-fields'] === true) {
        assert.equal(path, 'World.status.isolation.observation', `${path}: unexpected preserve-unknown-fields`);
      }
      if (node.type === 'array') {
        const lt = node['x-kubernetes-list-type'];
        assert.ok(lt === 'atomic' || lt === 'set' || lt === 'map', `${path}: no x-kubernetes-list-type`);
        const items = node.items as JsonSchema;
        if (lt === 'set') assert.notEqual(items.type, 'object', `${path}: set of objects`);
        if (lt === 'map') {
          const keys = node['x-kubernetes-list-map-keys'] as string[];
          assert.ok(keys.length > 0, path);
          for (const k of keys) assert.ok((items.required as string[]).includes(k), `${path}: map key ${k} not required`);
        }
      }
    });
  }
});

void test('conditions are SSA maps keyed by type on every kind', () => {
  for (const def of definitions) {
    const status = (schemaOf(def.kind).properties as Record<string, JsonSchema>).status!;
    const conds = (status.properties as Record<string, JsonSchema>).conditions!;
    assert.equal(conds['x-kubernetes-list-type'], 'map', def.kind);
    assert.deepEqual(conds['x-kubernetes-list-map-keys'], ['type'], def.kind);
    const item = conds.items as JsonSchema;
    assert.deepEqual(
      Object.keys(item.properties as object).sort(),
      ['lastTransitionTime', 'message', 'observedGeneration', 'reason', 'status', 'type'],
    );
    assert.deepEqual((item.properties as Record<string, JsonSchema>).status!.enum, ['True', 'False', 'Unknown']);
  }
});

void test('status carries nodeName on World, Check and Collapse', () => {
  for (const kind of ['World', 'Check', 'Collapse']) {
    const status = (schemaOf(kind).properties as Record<string, JsonSchema>).status!;
    assert.ok((status.properties as Record<string, JsonSchema>).nodeName, kind);
  }
});

void test('CEL rules are bounded: strings and lists under a rule have maxLength/maxItems', () => {
  let rules = 0;
  for (const def of definitions) {
    walk(schemaOf(def.kind), def.kind, (node, path) => {
      const v = node['x-kubernetes-validations'] as { rule: string; message: string }[] | undefined;
      if (!v) return;
      rules += v.length;
      for (const r of v) assert.ok(r.message.length > 0 && r.rule.length > 0, path);
      walk(node, path, (inner, ip) => {
        if (inner.type === 'string' && !inner.enum && !inner.format) assert.ok(typeof inner.maxLength === 'number', `${ip}: unbounded string under CEL`);
        if (inner['x-kubernetes-int-or-string'] === true) assert.ok(typeof inner.maxLength === 'number', `${ip}: unbounded int-or-string under CEL`);
        if (inner.type === 'array') assert.ok(typeof inner.maxItems === 'number', `${ip}: unbounded list under CEL`);
      });
    });
  }
  assert.ok(rules >= 20, `only ${rules} CEL rules`);
});

void test('immutability rules exist where the API promises them', () => {
  const rulesAt = (kind: string, path: string[]) => {
    let node: JsonSchema = schemaOf(kind);
    for (const p of path) node = (node.properties as Record<string, JsonSchema>)[p]!;
    return ((node['x-kubernetes-validations'] as { rule: string }[] | undefined) ?? []).map((r) => r.rule);
  };
  assert.ok(rulesAt('Root', ['spec', 'nodeName']).includes('self == oldSelf'));
  assert.ok(rulesAt('Root', ['spec', 'path']).includes('self == oldSelf'));
  assert.ok(rulesAt('World', ['spec', 'roots']).includes('self == oldSelf'));
  // A Check's or Collapse's spec is immutable field by field, except spec.worldUID, which is set once: every
  // other field of the spec (a new one too) must be compared in the rule.
  for (const kind of ['Check', 'Collapse']) {
    const rules = rulesAt(kind, ['spec']);
    const spec = (schemaOf(kind).properties as Record<string, JsonSchema>).spec!;
    const fields = Object.keys((spec.properties as Record<string, JsonSchema> | undefined) ?? {}).filter((f) => f !== 'worldUID');
    assert.ok(fields.length >= 2, `${kind}: spec fields ${fields.join(', ')}`);
    assert.ok(rules.some((r) => fields.every((f) => r.includes(`self.${f} == oldSelf.${f}`))), `${kind}: a rule compares ${fields.join(', ')}: ${rules.join(' | ')}`);
    assert.ok(rules.includes('!has(oldSelf.worldUID) || (has(self.worldUID) && self.worldUID == oldSelf.worldUID)'), `${kind}: worldUID is set once`);
  }
});

void test('vocabulary: DESIGN outcomes, isolation levels and controls, decisions', () => {
  assert.equal(DESIGN_OUTCOMES.length, 20);
  for (const o of DESIGN_OUTCOMES) assert.match(o, new RegExp(OUTCOME_CODE_PATTERN));
  assert.deepEqual([...ISOLATION_LEVELS], ['host-yolo', 'process-limited', 'os-sandboxed', 'vm-isolated']);
  assert.ok(levelAtLeast('vm-isolated', 'os-sandboxed') && !levelAtLeast('process-limited', 'os-sandboxed'));
  assert.equal(ISOLATION_CONTROLS.length, 11);
  assert.deepEqual([...ISOLATION_DECISIONS], ['reported-sufficient', 'rejected', 'unsupported']);
  assert.equal(API_VERSION, 'worldline.dev/v1alpha1');
});

function docs(file: string): unknown[] {
  return parseAllDocuments(readFileSync(file, 'utf8')).map((d) => d.toJS() as unknown);
}

void test('zod accepts every example and fills documented defaults', () => {
  const dir = join(root, 'examples');
  const files = readdirSync(dir).filter((f) => f.endsWith('.yaml'));
  assert.ok(files.length >= 5);
  for (const f of files) {
    for (const doc of docs(join(dir, f))) {
      const kind = (doc as { kind: string }).kind;
      const schema = kindSchemas[kind];
      assert.ok(schema, `${f}: unknown kind ${kind}`);
      const r = schema.safeParse(doc);
      assert.ok(r.success, `${f}: ${r.success ? '' : r.error.message}`);
    }
  }
  const world = WorldSpecSchema.parse({ roots: ['a'], agent: { command: ['x'], env: [{ name: 'A' }] } });
  assert.equal(world.agent.env?.[0]?.value, '');
});

void test('zod rejects every single-document invalid fixture', () => {
  const dir = join(root, 'test/fixtures/invalid');
  const files = readdirSync(dir).filter((f) => f.endsWith('.yaml'));
  assert.ok(files.length >= 18, `only ${files.length} fixtures`);
  for (const f of files) {
    const text = readFileSync(join(dir, f), 'utf8');
    assert.match(text, /^# expect: \S/, `${f}: first line must be '# expect: ...'`);
    const all = docs(join(dir, f));
    assert.ok(all.length === 1 || all.length === 2, f);
    if (all.length === 2) {
      // Update fixtures: both documents are individually valid; only the transition is refused.
      for (const d of all) assert.ok(kindSchemas[(d as { kind: string }).kind]!.safeParse(d).success, `${f}: documents must be valid`);
      continue;
    }
    const doc = all[0] as { kind: string };
    assert.equal(kindSchemas[doc.kind]!.safeParse(doc).success, false, `${f}: zod accepted an invalid manifest`);
  }
});

void test('zod and the allowlist rule agree on ports (property)', () => {
  const world = (allow: string[]) => ({ roots: ['r'], agent: { command: ['x'] }, network: { policy: 'Allowlist', allow } });
  fc.assert(
    fc.property(fc.integer({ min: 0, max: 99999 }), (port) => {
      const ok = WorldSpecSchema.safeParse(world([`example.com:${port}`])).success;
      assert.equal(ok, port >= 1 && port <= 65535);
    }),
  );
});

void test('duration and quantity parsing', () => {
  assert.equal(parseDuration('1h30m'), 5400);
  assert.equal(parseDuration('1.5s'), 1.5);
  assert.equal(parseDuration('10'), undefined);
  assert.equal(parseQuantity('512Mi'), 512 * 2 ** 20);
  assert.equal(parseQuantity('500m'), 0.5);
  assert.equal(parseQuantity(3), 3);
  assert.equal(parseQuantity('lots'), undefined);
  fc.assert(
    fc.property(fc.integer({ min: 1, max: 100000 }), fc.constantFrom('ns', 'us', 'ms', 's', 'm', 'h'), (n, u) => {
      assert.ok((parseDuration(`${n}${u}`) ?? 0) > 0);
    }),
  );
});
