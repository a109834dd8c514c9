// Near-valid objects: a valid object with exactly one field changed so the schema should refuse it — a
// value of the wrong type, a number or list size out of range, a string too long or off its pattern, a
// value outside an enum, an unknown field, a required field removed, a bad object name, or (on update)
// an immutable field changed. The field and the change are chosen from what the CRD schema says about
// each field present, so every field the schema constrains is reachable. The result names the mutated
// field's path as the API server prints it; a refusal must name that path.
import { fieldPath, type FuzzKind, type SchemaNode } from './crd-schema.js';
import type { SeededRandom } from './seeded-random.js';
import type { Obj } from './valid-objects.js';

export const CREATE_MUTATIONS = ['wrong-type', 'out-of-range', 'too-long', 'bad-enum', 'bad-pattern', 'unknown-field', 'missing-required', 'bad-name'] as const;
export type Mutation = (typeof CREATE_MUTATIONS)[number] | 'immutable';

export interface Mutated {
  obj: Obj;
  mutation: Mutation;
  /** The mutated field, as the API server prints paths (`spec.agent.command[0]`). */
  path: string;
}

interface Site {
  segs: (string | number)[];
  schema: SchemaNode;
  value: unknown;
}

function sites(schema: SchemaNode, value: unknown, segs: (string | number)[], out: Site[]): Site[] {
  out.push({ segs, schema, value });
  if (Array.isArray(value) && schema.items) value.forEach((v, i) => sites(schema.items!, v, [...segs, i], out));
  else if (value !== null && typeof value === 'object' && schema.properties) {
    for (const [k, v] of Object.entries(value)) if (schema.properties[k]) sites(schema.properties[k], v, [...segs, k], out);
  }
  return out;
}

function applicable(m: Mutation, s: Site): boolean {
  const t = s.schema.type;
  switch (m) {
    case 'wrong-type':
      return t !== undefined || s.schema['x-kubernetes-int-or-string'] === true;
    case 'out-of-range':
      return (t === 'integer' && (s.schema.minimum !== undefined || s.schema.maximum !== undefined)) || (t === 'array' && ((s.schema.minItems ?? 0) > 0 || (s.schema.maxItems !== undefined && s.schema.maxItems <= 4096)));
    case 'too-long':
      return t === 'string' && s.schema.maxLength !== undefined && s.schema.enum === undefined;
    case 'bad-enum':
      return s.schema.enum !== undefined;
    case 'bad-pattern':
      return t === 'string' && s.schema.pattern !== undefined;
    case 'unknown-field':
      return t === 'object' && s.schema.properties !== undefined && s.schema['x-kubernetes-preserve-unknown-fields'] !== true;
    case 'missing-required':
      return t === 'object' && (s.schema.required ?? []).some((k) => (s.value as Record<string, unknown>)[k] !== undefined);
    default:
      return false;
  }
}

function wrongTypeValue(s: Site): unknown {
  if (s.schema['x-kubernetes-int-or-string']) return true;
  switch (s.schema.type) {
    case 'string':
      return 12345;
    case 'integer':
    case 'number':
      return 'seven';
    case 'boolean':
      return 'yes';
    case 'array':
      return { notAList: 1 };
    default:
      return 'not-an-object';
  }
}

function setAt(root: Record<string, any>, segs: (string | number)[], v: unknown, remove = false): void {
  let o: any = root;
  for (const seg of segs.slice(0, -1)) o = o[seg];
  const last = segs.at(-1)!;
  if (remove) delete o[last];
  else o[last] = v;
}

/** One field of `valid` (a fresh copy) changed so the CRD schema should refuse it. */
export function mutate(kind: FuzzKind, valid: Obj, schema: SchemaNode, r: SeededRandom, mutations: readonly Mutation[] = CREATE_MUTATIONS): Mutated {
  const obj = structuredClone(valid);
  const all = sites(schema.properties!['spec']!, obj.spec, ['spec'], []);
  const usable = mutations.filter((m) => m === 'bad-name' || all.some((s) => applicable(m, s)));
  const mutation = r.pick(usable);
  if (mutation === 'bad-name') {
    obj.metadata.name = r.pick(['Upper-Case', 'under_score', '-leading-dash', 'a'.repeat(254), 'dot..dot', 'trailing-']);
    return { obj, mutation, path: 'metadata.name' };
  }
  const s = r.pick(all.filter((x) => applicable(mutation, x)));
  const whole = obj as unknown as Record<string, any>;
  switch (mutation) {
    case 'wrong-type':
      setAt(whole, s.segs, wrongTypeValue(s));
      return { obj, mutation, path: fieldPath(s.segs) };
    case 'out-of-range': {
      if (s.schema.type === 'integer') {
        const low = s.schema.minimum !== undefined && (s.schema.maximum === undefined || r.chance(0.5));
        setAt(whole, s.segs, low ? s.schema.minimum! - r.int(1, 1000) : s.schema.maximum! + r.int(1, 1000));
      } else {
        const arr = s.value as unknown[];
        const tooFew = (s.schema.minItems ?? 0) > 0 && (s.schema.maxItems === undefined || r.chance(0.5));
        setAt(whole, s.segs, tooFew ? [] : Array.from({ length: s.schema.maxItems! + 1 }, (_, i) => structuredClone(arr[i % arr.length] ?? 'x')));
      }
      return { obj, mutation, path: fieldPath(s.segs) };
    }
    case 'too-long':
      setAt(whole, s.segs, 'a'.repeat(s.schema.maxLength! + r.int(1, 64)));
      return { obj, mutation, path: fieldPath(s.segs) };
    case 'bad-enum':
      setAt(whole, s.segs, r.pick(['NotInTheEnum', 'none', '', 'Candidate ']));
      return { obj, mutation, path: fieldPath(s.segs) };
    case 'bad-pattern':
      setAt(whole, s.segs, r.pick(['Has Space', 'UPPER!', '-x-', 'ü', '..']));
      return { obj, mutation, path: fieldPath(s.segs) };
    case 'unknown-field': {
      const key = r.pick(['fuzzUnknown', 'extra', 'Command', 'spec']);
      setAt(whole, [...s.segs, key], r.pick([1, 'x', { a: 1 }, [true]]));
      return { obj, mutation, path: fieldPath([...s.segs, key]) };
    }
    case 'missing-required': {
      const key = r.pick((s.schema.required ?? []).filter((k) => (s.value as Record<string, unknown>)[k] !== undefined));
      setAt(whole, [...s.segs, key], undefined, true);
      return { obj, mutation, path: fieldPath([...s.segs, key]) };
    }
    default:
      throw new Error(`mutation ${mutation} is not a create mutation`);
  }
}

/** The fields each kind declares immutable, with a fresh valid value for each. */
const IMMUTABLE: Record<FuzzKind, (r: SeededRandom, spec: Record<string, any>) => [string, unknown][]> = {
  Root: (r, spec) => [['nodeName', `${String(spec['nodeName'])}-moved`], ['path', `${String(spec['path'])}/moved${r.int(0, 9)}`]],
  Policy: () => [],
  World: (r, spec) => [['roots', [...(spec['roots'] as string[]).slice(1), `moved-${r.int(0, 99)}`]]],
  Check: (r, spec) => [['worldRef', `${String(spec['worldRef'])}-moved`], ['name', `moved-${r.int(0, 99)}`], ['revalidate', spec['revalidate'] !== true]],
  Collapse: (_r, spec) => [['worldRef', `${String(spec['worldRef'])}-moved`], ['mode', spec['mode'] === 'CheckpointReturn' ? 'Candidate' : 'CheckpointReturn']],
};

export function hasImmutable(kind: FuzzKind): boolean {
  return kind !== 'Policy';
}

/** The stored object with one immutable spec field changed to another valid value (for an update). */
export function mutateImmutable(kind: FuzzKind, stored: Obj, r: SeededRandom): Mutated {
  const obj = structuredClone(stored);
  const [field, value] = r.pick(IMMUTABLE[kind](r, obj.spec));
  obj.spec[field] = value;
  return { obj, mutation: 'immutable', path: `spec.${field}` };
}
