// The structural schemas the API server validates with: the openAPIV3Schema of each generated CRD in
// crds/*.worldline.dev.yaml (rendered from the zod schemas in crds/*.ts), and a walker that finds the schema
// of any field path, so mutations can be chosen from what the schema actually says about that field.
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import YAML from 'yaml';

export interface SchemaNode {
  type?: string;
  properties?: Record<string, SchemaNode>;
  items?: SchemaNode;
  required?: string[];
  enum?: unknown[];
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  pattern?: string;
  'x-kubernetes-int-or-string'?: boolean;
  'x-kubernetes-preserve-unknown-fields'?: boolean;
  'x-kubernetes-validations'?: { rule: string; message?: string }[];
}

export const FUZZ_KINDS = ['Root', 'Policy', 'World', 'Check', 'Collapse'] as const;
export type FuzzKind = (typeof FUZZ_KINDS)[number];

export const PLURAL: Record<FuzzKind, string> = { Root: 'roots', Policy: 'policies', World: 'worlds', Check: 'checks', Collapse: 'collapses' };
export const NAMESPACED: Record<FuzzKind, boolean> = { Root: false, Policy: false, World: true, Check: true, Collapse: true };

/** The openAPIV3Schema of each kind, read from the generated CRD files. */
export function loadSchemas(repoRoot = resolve(import.meta.dirname, '..', '..', '..')): Record<FuzzKind, SchemaNode> {
  const out = {} as Record<FuzzKind, SchemaNode>;
  for (const kind of FUZZ_KINDS) {
    const crd = YAML.parse(readFileSync(join(repoRoot, 'crds', `${PLURAL[kind]}.worldline.dev.yaml`), 'utf8')) as { spec: { versions: { schema: { openAPIV3Schema: SchemaNode } }[] } };
    const schema = crd.spec.versions[0]?.schema.openAPIV3Schema;
    if (!schema?.properties?.['spec']) throw new Error(`crds/${PLURAL[kind]}.worldline.dev.yaml: no spec schema`);
    out[kind] = schema;
  }
  return out;
}

/** The schema of the field at `segments` below `root`, or undefined when the schema does not describe it. */
export function schemaAt(root: SchemaNode, segments: readonly (string | number)[]): SchemaNode | undefined {
  let node: SchemaNode | undefined = root;
  for (const seg of segments) {
    if (node === undefined) return undefined;
    node = typeof seg === 'number' ? node.items : node.properties?.[seg];
  }
  return node;
}

/** The path as the API server prints it: `spec.agent.command[0]`. */
export function fieldPath(segments: readonly (string | number)[]): string {
  return segments.map((s, i) => (typeof s === 'number' ? `[${s}]` : i === 0 ? s : `.${s}`)).join('');
}
