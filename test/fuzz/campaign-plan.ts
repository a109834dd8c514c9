// The whole fuzz campaign decided up front from one seed: for every generated object, what is created
// (valid or near-valid, and which field is mutated), whether it is later updated (a valid label change, a
// near-valid spec, or an immutable field changed) and whether it is deleted, and the order of every
// operation across all kinds (each follow-up after its create). Deciding it all before anything runs
// keeps a replay (same WORLDLINE_FUZZ_SEED) identical even though the operations run concurrently.
import { FUZZ_KINDS, NAMESPACED, type FuzzKind, type SchemaNode } from './crd-schema.js';
import { CREATE_MUTATIONS, hasImmutable, mutate, mutateImmutable, type Mutated, type Mutation } from './mutations.js';
import { SeededRandom } from './seeded-random.js';
import { objectOf, validSpec, type NamePools, type Obj } from './valid-objects.js';
import { workloadResources, workloadScript } from './workloads.js';

export interface PlannedObject {
  kind: FuzzKind;
  name: string;
  create: Obj;
  /** Set for a near-valid create: the mutation and the path it touched. */
  createMutation?: { mutation: Mutation; path: string };
  workload: boolean;
  /** Whether the campaign waits on this object's named state while it runs (a sample; all are checked at the end). */
  sampled: boolean;
  update?: { obj: Obj; mutation?: Mutation; path?: string };
  remove: boolean;
}

export interface PlannedOp {
  op: 'create' | 'update' | 'delete';
  index: number;
  key: number;
}

export interface CampaignOptions {
  perKind: number;
  nearValid: number;
  updateFraction: number;
  deleteFraction: number;
  workloadFraction: number;
  sampleFraction: number;
  /** Roots on the agent's node that workload Worlds run on. */
  workloadRoots: string[];
  /** The agent's node and a scratch directory: a few fuzzed Roots land there, under the scratch directory only. */
  agentNode: string;
  liveRootDir: string;
}

export function objectName(kind: FuzzKind, i: number, workload = false): string {
  const prefix: Record<FuzzKind, string> = { Root: 'fzroot', Policy: 'fzpol', World: workload ? 'fzwl' : 'fzworld', Check: 'fzcheck', Collapse: 'fzcol' };
  return `${prefix[kind]}-${i}`;
}

export function planCampaign(seed: number, schemas: Record<FuzzKind, SchemaNode>, pools: NamePools, o: CampaignOptions): { objects: PlannedObject[]; ops: PlannedOp[] } {
  const r = new SeededRandom(seed);
  const objects: PlannedObject[] = [];
  for (const kind of FUZZ_KINDS) {
    for (let i = 0; i < o.perKind; i++) {
      const workload = kind === 'World' && r.chance(o.workloadFraction);
      const name = objectName(kind, i, workload);
      let spec: Record<string, any>;
      if (workload) {
        spec = { roots: [r.pick(o.workloadRoots)], agent: { command: ['/bin/sh', '-c', workloadScript(r)] }, resources: workloadResources(r) };
      } else {
        spec = validSpec(kind, r, pools);
        // A few Roots on the agent's node, always under the campaign's scratch directory (some of them exist).
        if (kind === 'Root' && r.chance(0.003)) spec = { nodeName: o.agentNode, path: `${o.liveRootDir}/${name}` };
      }
      const valid = objectOf(kind, name, spec, NAMESPACED[kind]);
      let create = valid;
      let createMutation: PlannedObject['createMutation'];
      if (!workload && r.chance(o.nearValid)) {
        const m: Mutated = mutate(kind, valid, schemas[kind], r);
        create = m.obj;
        createMutation = { mutation: m.mutation, path: m.path };
      }
      let update: PlannedObject['update'];
      if (!workload && r.chance(o.updateFraction)) {
        const choice = r.pick(['label', 'near-valid', ...(hasImmutable(kind) ? ['immutable'] : [])]);
        if (choice === 'label') {
          const obj = structuredClone(valid);
          obj.metadata.labels = { 'fuzz.worldline.dev/touched': String(r.int(0, 999)) };
          update = { obj };
        } else {
          const m = choice === 'immutable' ? mutateImmutable(kind, valid, r) : mutate(kind, valid, schemas[kind], r, CREATE_MUTATIONS.filter((x) => x !== 'bad-name'));
          update = { obj: m.obj, mutation: m.mutation, path: m.path };
        }
      }
      objects.push({ kind, name: create.metadata.name, create, ...(createMutation ? { createMutation } : {}), workload, sampled: workload || r.chance(o.sampleFraction), ...(update ? { update } : {}), remove: !workload && r.chance(o.deleteFraction) });
    }
  }
  const ops: PlannedOp[] = [];
  objects.forEach((p, index) => {
    const at = r.next();
    ops.push({ op: 'create', index, key: at });
    if (p.update) ops.push({ op: 'update', index, key: at + (1 - at) * r.next() });
    if (p.remove) ops.push({ op: 'delete', index, key: at + (1 - at) * r.next() });
  });
  ops.sort((a, b) => a.key - b.key);
  return { objects, ops };
}
