// Where a World's isolation observation takes its bindings from (issue 13, item 7): each from the record
// that really produced it, not from the launch plan the decision is evaluated against. The request is
// built again from the World as the API server holds it at the gate (an edit of spec.isolation since the
// plan shows as REQUEST_MISMATCH; a World gone or replaced cannot be bound at all), and the subject from
// the generations actually mounted as the World's lower layers: each lower mount's root (device and
// inode, as the kernel reports them) is looked up among the store's generation payloads of its Root
// (SUBJECT_MISMATCH when that is not the base the plan says). A producer that cannot answer — a lower
// layer that is no generation the store knows, a World that cannot be read — leaves the observation
// incomplete (ENFORCEMENT_INCOMPLETE).
import type { BaseEntry, World } from '../../crds/index.js';
import type { IsolationRequest } from '../../core/isolation/records.js';
import { objectPath } from '../../kube/api-paths.js';
import { httpClientFor } from '../../kube/http.js';
import type { KubeAccess } from '../../kube/kube-access.js';
import { kindParsers } from '../../kube/kind-parsers.js';
import { statSync } from 'node:fs';
import type { Store } from '../store/open-store.js';
import { generationByPayload } from '../store/store-records.js';
import { refs } from '../api-refs.js';
import { agentRequestRecord, baseSubject } from './world-request.js';

export interface ObservationProducers {
  /** The request as the API server holds the World now; throws when it cannot be read. */
  request(): Promise<IsolationRequest>;
  /** The subject as the World's mounted lower layers show it; throws when one is no known generation. */
  subject(): string;
}

export interface WorldProducerInputs {
  kubeConfig: KubeAccess;
  store: Store;
  world: { namespace: string; name: string; uid: string };
  /** The network the World runs with (its own, or its Policy's default) and the base it forked. */
  network: 'None' | 'Allowlist' | 'Shared';
  base: BaseEntry[];
  /** Each Root's name, store key and the path where its generation is mounted as the lower layer. */
  lowers: { root: string; rootKey: string; path: string }[];
}

export function worldProducers(i: WorldProducerInputs): ObservationProducers {
  return {
    async request() {
      const raw = await httpClientFor(i.kubeConfig).request<unknown>({ method: 'GET', path: objectPath(refs.World, i.world.name, i.world.namespace) });
      const parsed = kindParsers.World(raw);
      if (!parsed.ok) throw new Error(`World ${i.world.namespace}/${i.world.name} as the API server holds it does not parse: ${parsed.refusal.message}`);
      const w: World = parsed.value;
      if (w.metadata.uid !== i.world.uid) throw new Error(`World ${i.world.namespace}/${i.world.name} is now another object (uid ${w.metadata.uid ?? 'none'}, not ${i.world.uid})`);
      return agentRequestRecord({ ...w.spec.isolation, roots: w.spec.roots, network: i.network, base: i.base });
    },
    subject() {
      const base = i.lowers.map((l): BaseEntry => {
        const st = statSync(l.path, { bigint: true });
        const g = generationByPayload(i.store.db, l.rootKey, String(st.dev), String(st.ino));
        if (!g) throw new Error(`the lower layer of Root ${l.root} (${l.path}: device ${st.dev}, inode ${st.ino}) is no generation of it the store knows`);
        return { root: l.root, generation: g.number, digest: g.digest };
      });
      return baseSubject(base);
    },
  };
}
