// The controller's informers (one per kind it reads) and the lookups reconcilers need from them.
import type { KubernetesObject } from '@kubernetes/client-node';
import type { KubeAccess } from '../kube/kube-access.js';
import type { Check, Collapse, Policy, Root, World } from '../crds/index.js';
import { Informer, type InformedObject } from '../kube/informer.js';
import { InformerIndex } from '../kube/informer-index.js';
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

/** When a heartbeat Lease runs out (renewTime + leaseDurationSeconds, in ms); NaN without a renewTime. */
export function leaseExpiry(l: LeaseObj): number {
  const renew = l.spec?.renewTime ? new Date(l.spec.renewTime).getTime() : NaN;
  return renew + (l.spec?.leaseDurationSeconds ?? 0) * 1000;
}

/** True while a heartbeat Lease's expiry lies ahead of `now`. */
export function leaseLive(l: LeaseObj, now: Date): boolean {
  const end = leaseExpiry(l);
  return Number.isFinite(end) && end > now.getTime();
}

export class Caches {
  readonly roots: Informer<Root>;
  readonly policies: Informer<Policy>;
  readonly worlds: Informer<World>;
  readonly checks: Informer<Check>;
  readonly collapses: Informer<Collapse>;
  readonly leases: Informer<LeaseObj>;
  /** Indexes kept by the informers' events, so a fan-out or a lookup never scans a whole cache. */
  private readonly checksByWorld: InformerIndex<Check>;
  private readonly collapsesByWorld: InformerIndex<Collapse>;
  private readonly worldsByRoot: InformerIndex<World>;
  private readonly worldsByNode: InformerIndex<World>;
  private readonly rootsByNode: InformerIndex<Root>;
  private readonly policiesByRoot: InformerIndex<Policy>;

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
    const byWorld = (o: Check | Collapse): string[] => [`${o.metadata.namespace ?? ''}/${o.spec.worldRef}`];
    this.checksByWorld = new InformerIndex(this.checks, byWorld);
    this.collapsesByWorld = new InformerIndex(this.collapses, byWorld);
    this.worldsByRoot = new InformerIndex(this.worlds, (w) => w.spec.roots);
    this.worldsByNode = new InformerIndex(this.worlds, (w) => (w.status?.nodeName ? [w.status.nodeName] : []));
    this.rootsByNode = new InformerIndex(this.roots, (r) => [r.spec.nodeName]);
    this.policiesByRoot = new InformerIndex(this.policies, (p) => p.spec.roots);
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
    return this.worldsByRoot.keys(root);
  }

  /** Keys of Worlds bound to the node (status.nodeName). */
  worldsOnNode(node: string): string[] {
    return this.worldsByNode.keys(node);
  }

  /** Roots on the node (the only ones a Root's overlap is decided among). */
  rootsOnNode(node: string): Root[] {
    return this.present(this.roots, this.rootsByNode.keys(node));
  }

  /** Policies naming any of the Roots (the only ones that can govern them or rival each other over them). */
  policiesNaming(roots: readonly string[]): Policy[] {
    return this.present(this.policies, this.policiesByRoot.keysOfAny(roots));
  }

  /** Keys of the Checks that reference the World. */
  checksOf(namespace: string, world: string): string[] {
    return this.checksByWorld.keys(`${namespace}/${world}`);
  }

  /** Keys of the Collapses that reference the World. */
  collapsesOf(namespace: string, world: string): string[] {
    return this.collapsesByWorld.keys(`${namespace}/${world}`);
  }

  private present<T extends InformedObject>(informer: Informer<T>, keys: readonly string[]): T[] {
    const out: T[] = [];
    for (const k of keys) {
      const o = informer.get(k);
      if (o) out.push(o);
    }
    return out;
  }
}
