// Pure rendering of the zod API definitions into apiextensions.k8s.io/v1 CustomResourceDefinitions.
// zod's JSON Schema output is post-processed into a Kubernetes *structural* schema: every node typed,
// no $ref/anyOf/oneOf (except the sanctioned int-or-string form), no `additionalProperties: false`,
// metadata left to the API server, unknown fields preserved only where a schema asks for it.
import { z } from 'zod';
import { stringify } from 'yaml';
import { API_VERSION, GROUP, VERSION } from './api-group.js';
import type { CrdDefinition } from './common.js';

/** A JSON (Schema) value as produced by zod and consumed by the API server. */
export type JsonSchema = { [key: string]: unknown };

export interface CustomResourceDefinition {
  apiVersion: 'apiextensions.k8s.io/v1';
  kind: 'CustomResourceDefinition';
  metadata: { name: string; labels: Record<string, string> };
  spec: {
    group: string;
    names: { kind: string; listKind: string; plural: string; singular: string; shortNames: string[]; categories: string[] };
    scope: 'Cluster' | 'Namespaced';
    versions: Array<{
      name: string;
      served: boolean;
      storage: boolean;
      subresources: { status: Record<string, never> };
      additionalPrinterColumns: CrdDefinition['printerColumns'];
      selectableFields?: { jsonPath: string }[];
      schema: { openAPIV3Schema: JsonSchema };
    }>;
  };
}

const KEY_ORDER = [
  'description',
  'type',
  'format',
  'enum',
  'default',
  'pattern',
  'minLength',
  'maxLength',
  'minimum',
  'maximum',
  'minItems',
  'maxItems',
  'items',
  'properties',
  'required',
  'additionalProperties',
  'anyOf',
  'x-kubernetes-int-or-string',
  'x-kubernetes-preserve-unknown-fields',
  'x-kubernetes-list-type',
  'x-kubernetes-list-map-keys',
  'x-kubernetes-validations',
];

const DROPPED_KEYS = new Set(['$schema', '$id', 'id', 'title', 'propertyNames', 'examples']);
const SAFE = Number.MAX_SAFE_INTEGER;

function ordered(node: JsonSchema): JsonSchema {
  const keys = Object.keys(node).sort((a, b) => {
    const ia = KEY_ORDER.indexOf(a);
    const ib = KEY_ORDER.indexOf(b);
    if (ia !== -1 || ib !== -1) return (ia === -1 ? KEY_ORDER.length : ia) - (ib === -1 ? KEY_ORDER.length : ib);
    return a < b ? -1 : a > b ? 1 : 0;
  });
  const out: JsonSchema = {};
  for (const k of keys) out[k] = node[k];
  return out;
}

function isObject(v: unknown): v is JsonSchema {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Converts one zod-produced JSON Schema node (recursively) into a structural OpenAPI v3 node. */
export function toStructural(input: JsonSchema, path = '<root>'): JsonSchema {
  const node: JsonSchema = {};
  for (const [k, v] of Object.entries(input)) if (!DROPPED_KEYS.has(k)) node[k] = v;

  for (const forbidden of ['$ref', 'oneOf', 'allOf', 'not', '$defs', 'definitions']) {
    if (forbidden in node) throw new Error(`${path}: '${forbidden}' cannot appear in a structural schema`);
  }

  if (node['x-kubernetes-int-or-string'] === true) {
    const out: JsonSchema = {};
    for (const k of ['description', 'pattern', 'maxLength', 'x-kubernetes-validations']) if (k in node) out[k] = node[k];
    out['x-kubernetes-int-or-string'] = true;
    out.anyOf = [{ type: 'integer' }, { type: 'string' }];
    return ordered(out);
  }
  if ('anyOf' in node) throw new Error(`${path}: anyOf is only allowed for x-kubernetes-int-or-string`);

  if ('const' in node) {
    node.enum = [node.const];
    delete node.const;
  }
  if (node.type === 'integer') {
    if (node.minimum === -SAFE) delete node.minimum;
    if (node.maximum === SAFE) delete node.maximum;
  }
  if (node.format === 'date-time') delete node.pattern;

  const preserve = node['x-kubernetes-preserve-unknown-fields'] === true;
  if (node.type === 'object') {
    if (node.additionalProperties === false) delete node.additionalProperties;
    if (preserve) {
      if (isObject(node.additionalProperties) && Object.keys(node.additionalProperties).length === 0) delete node.additionalProperties;
      if (isObject(node.properties) && Object.keys(node.properties).length === 0) delete node.properties;
    }
    if (isObject(node.properties)) {
      const props: JsonSchema = {};
      for (const [name, child] of Object.entries(node.properties)) {
        if (!isObject(child)) throw new Error(`${path}.${name}: not a schema`);
        props[name] = toStructural(child, `${path}.${name}`);
      }
      node.properties = props;
    }
    if (isObject(node.additionalProperties)) {
      if (Object.keys(node.additionalProperties).length === 0) {
        throw new Error(`${path}: open-ended object; mark it x-kubernetes-preserve-unknown-fields or give it a value schema`);
      }
      node.additionalProperties = toStructural(node.additionalProperties, `${path}.*`);
    }
    if (Array.isArray(node.required) && node.required.length === 0) delete node.required;
  } else if (node.type === 'array') {
    if (!isObject(node.items)) throw new Error(`${path}: array without a single items schema`);
    node.items = toStructural(node.items, `${path}[]`);
  } else if (typeof node.type !== 'string') {
    throw new Error(`${path}: every node of a structural schema needs a type`);
  }
  return ordered(node);
}

/** The structural schema of one zod schema (input shape: defaulted fields are optional). */
export function structuralSchema(schema: z.ZodType, path = '<root>'): JsonSchema {
  const json = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'throw' }) as JsonSchema;
  return toStructural(json, path);
}

/** The openAPIV3Schema of a whole object of the given kind. */
export function openApiSchema(def: CrdDefinition): JsonSchema {
  return ordered({
    description: def.description,
    type: 'object',
    properties: {
      apiVersion: {
        description: `APIVersion of this representation of the object: ${API_VERSION}.`,
        type: 'string',
      },
      kind: { description: `Kind of the object: ${def.kind}.`, type: 'string' },
      metadata: { type: 'object' },
      spec: structuralSchema(def.spec, 'spec'),
      status: structuralSchema(def.status, 'status'),
    },
    required: ['spec'],
  });
}

/** Renders one CustomResourceDefinition object. */
export function renderCrd(def: CrdDefinition): CustomResourceDefinition {
  const version: CustomResourceDefinition['spec']['versions'][number] = {
    name: VERSION,
    served: true,
    storage: true,
    subresources: { status: {} },
    additionalPrinterColumns: def.printerColumns.map((c) => ({ ...c })),
    schema: { openAPIV3Schema: openApiSchema(def) },
  };
  if (def.selectableFields.length > 0) version.selectableFields = def.selectableFields.map((f) => ({ ...f }));
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: {
      name: `${def.plural}.${GROUP}`,
      labels: { 'app.kubernetes.io/name': 'worldline', 'app.kubernetes.io/part-of': 'worldline' },
    },
    spec: {
      group: GROUP,
      names: {
        kind: def.kind,
        listKind: def.listKind,
        plural: def.plural,
        singular: def.singular,
        shortNames: [...def.shortNames],
        categories: [...def.categories],
      },
      scope: def.scope,
      versions: [version],
    },
  };
}

export const GENERATED_HEADER = '# generated by crds/generate.ts — do not edit\n';

/** The YAML file content for one CRD. */
export function renderCrdYaml(def: CrdDefinition): string {
  return GENERATED_HEADER + stringify(renderCrd(def), { lineWidth: 0 });
}

/** A plain JSON Schema (draft 2020-12) of a kind's spec, for editors and docs. */
export function specJsonSchema(def: CrdDefinition): JsonSchema {
  const json = z.toJSONSchema(def.spec, { io: 'input', unrepresentable: 'throw' }) as JsonSchema;
  return {
    $schema: json.$schema,
    $id: `https://${GROUP}/schemas/${VERSION}/${def.kind.toLowerCase()}.schema.json`,
    title: `${def.kind} spec (${API_VERSION})`,
    ...Object.fromEntries(Object.entries(json).filter(([k]) => k !== '$schema')),
  };
}

export function renderSpecJsonSchema(def: CrdDefinition): string {
  return JSON.stringify(specJsonSchema(def), null, 2) + '\n';
}
