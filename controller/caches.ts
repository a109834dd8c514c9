// The controller's informers (one per kind it reads) and the lookups reconcilers need from them.
import type { KubernetesObject } from '@kubernetes/client-node';
import type { KubeAccess } from '../kube/kube-access.js';
import type { Check, Collapse, Policy, Root, World } from '../crds/index.js';
import { Informer, type InformedObject, type ObjectCache } from '../kube/informer.js';
import { kindParsers } from '../kube/kind-parsers.js';
import type { ObjectParser } from '../kube/object-schema.js';
import type { Logger } from '../kube/logger.js';
import type { ResourceRef } from '../kube/resource-ref.js';
import type { Clock } from '../kube/clock.js';
import { COMPONENT_LABEL, NODE_LABEL } from './reasons.js';
import { refs } from './api-refs.js';

export const LEASE_REF: ResourceRef = { group: 'coordination.k8s.io', version: 'v1', plural: 'leases', kind: 'Lease', namespaced: true };

export interface LeaseObj extends KubernetesObject {
  spec?: { holderIdentity?: string; leaseDurationSeconds?: number; renewTime?: string | Date };
}

/** True while a heartbeat Lease's renewTime + leaseDurationSeconds lies ahead of `now`. */
export function leaseLive(l: LeaseObj, now: Date): boolean {
  const renew = l.spec?.renewTime ? new Date(l.spec.renewTime).getTime() : NaN;
  const dur = (l.spec?.leaseDurationSeconds ?? 0) * 1000;
  return Number.isFinite(renew) && renew + dur > now.getTime();
}

export class Caches {
  readonly roots: Informer<Root>;
  readonly policies: Informer<Policy>;
  readonly worlds: Informer<World>;
  readonly checks: Informer<Check>;
  readonly collapses: Informer<Collapse>;
  readonly leases: Informer<LeaseObj>;

  constructor(kc: KubeAccess, namespace: string, logger: Logger, clock?: Clock) {
    const mk = <T extends InformedObject>(resource: ResourceRef, extra: { namespace?: string; labelSelector?: string; parse?: ObjectParser<T> } = {}): Informer<T> =>
      new Informer<T>({ kubeConfig: kc, resource, logger: logger.child({ informer: resource.kind }), stripManagedFields: true, ...(clock ? { clock } : {}), ...extra });
    // The worldline kinds are parsed at the edge: the caches hold only objects their schema accepts.
    this.roots = mk(refs.Root, { parse: kindParsers.Root });
    this.policies = mk(refs.Policy, { parse: kindParsers.Policy });
    this.worlds = mk(refs.World, { parse: kindParsers.World });
    this.checks = mk(refs.Check, { parse: kindParsers.Check });
    this.collapses = mk(refs.Collapse, { parse: kindParsers.Collapse });
    this.leases = mk<LeaseObj>(LEASE_REF, { namespace, labelSelector: `${COMPONENT_LABEL}=node-agent` });
  }

  all(): { start(): Promise<void>; stop(): void }[] {
    return [this.roots, this.policies, this.worlds, this.checks, this.collapses, this.leases];
  }

  async start(): Promise<void> {
    await Promise.all(this.all().map((i) => i.start()));
  }

  stop(): void {
    for (const i of this.all()) i.stop();
  }

  /** True when a node-agent holds a live heartbeat Lease for the node. */
  nodeAgentPresent(nodeName: string, now: Date): boolean {
    return this.leases.list().some((l) => l.metadata?.labels?.[NODE_LABEL] === nodeName && leaseLive(l, now));
  }

  /** Keys of Worlds in any namespace that name the Root. */
  worldsUsingRoot(root: string): string[] {
    return this.worlds
      .list()
      .filter((w) => w.spec.roots.includes(root))
      .map((w) => `${w.metadata.namespace ?? ''}/${w.metadata.name ?? ''}`);
  }

  /** Keys of Checks or Collapses that reference the World. */
  dependentsOf(informer: ObjectCache<Check | Collapse>, namespace: string, world: string): string[] {
    return informer
      .list()
      .filter((o) => o.metadata.namespace === namespace && o.spec.worldRef === world)
      .map((o) => `${namespace}/${o.metadata.name ?? ''}`);
  }
}
