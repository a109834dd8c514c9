// The controller's informers (one per kind it reads) and the lookups reconcilers need from them.
import type { KubeConfig, KubernetesObject } from '@kubernetes/client-node';
import { Informer } from '../kube/informer.js';
import type { Logger } from '../kube/logger.js';
import type { ResourceRef } from '../kube/resource-ref.js';
import type { Clock } from '../kube/clock.js';
import { COMPONENT_LABEL, NODE_LABEL } from './reasons.js';
import { refs } from './api-refs.js';

export const LEASE_REF: ResourceRef = { group: 'coordination.k8s.io', version: 'v1', plural: 'leases', kind: 'Lease', namespaced: true };

export interface LeaseObj extends KubernetesObject {
  spec?: { holderIdentity?: string; leaseDurationSeconds?: number; renewTime?: string | Date };
}

export class Caches {
  readonly roots: Informer<KubernetesObject>;
  readonly policies: Informer<KubernetesObject>;
  readonly worlds: Informer<KubernetesObject>;
  readonly checks: Informer<KubernetesObject>;
  readonly collapses: Informer<KubernetesObject>;
  readonly leases: Informer<LeaseObj>;

  constructor(kc: KubeConfig, namespace: string, logger: Logger, clock?: Clock) {
    const mk = <T extends KubernetesObject>(resource: ResourceRef, extra: { namespace?: string; labelSelector?: string } = {}): Informer<T> =>
      new Informer<T>({ kubeConfig: kc, resource, logger: logger.child({ informer: resource.kind }), ...(clock ? { clock } : {}), ...extra });
    this.roots = mk(refs.Root);
    this.policies = mk(refs.Policy);
    this.worlds = mk(refs.World);
    this.checks = mk(refs.Check);
    this.collapses = mk(refs.Collapse);
    this.leases = mk<LeaseObj>(LEASE_REF, { namespace, labelSelector: `${COMPONENT_LABEL}=node-agent` });
  }

  all(): Informer<KubernetesObject>[] {
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
    return this.leases.list().some((l) => {
      if (l.metadata?.labels?.[NODE_LABEL] !== nodeName) return false;
      const renew = l.spec?.renewTime ? new Date(l.spec.renewTime).getTime() : NaN;
      const dur = (l.spec?.leaseDurationSeconds ?? 0) * 1000;
      return Number.isFinite(renew) && renew + dur > now.getTime();
    });
  }

  /** Keys of Worlds in any namespace that name the Root. */
  worldsUsingRoot(root: string): string[] {
    return this.worlds
      .list()
      .filter((w) => ((w as { spec?: { roots?: string[] } }).spec?.roots ?? []).includes(root))
      .map((w) => `${w.metadata?.namespace ?? ''}/${w.metadata?.name ?? ''}`);
  }

  /** Keys of Checks or Collapses that reference the World. */
  dependentsOf(informer: Informer<KubernetesObject>, namespace: string, world: string): string[] {
    return informer
      .list()
      .filter((o) => o.metadata?.namespace === namespace && (o as { spec?: { worldRef?: string } }).spec?.worldRef === world)
      .map((o) => `${namespace}/${o.metadata?.name ?? ''}`);
  }
}
