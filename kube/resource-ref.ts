// Identifies a resource type (group/version/plural) and an object within it (namespace/name key).

export interface ResourceRef {
  /** '' for the core group. */
  group: string;
  version: string;
  plural: string;
  kind: string;
  namespaced: boolean;
}

/** "group/version", or just "version" for the core group. */
export function apiVersionOf(ref: ResourceRef): string {
  return ref.group === '' ? ref.version : `${ref.group}/${ref.version}`;
}

/** "ns/name" for namespaced objects, "name" for cluster-scoped ones. */
export function objectKey(obj: { metadata?: { namespace?: string; name?: string } }): string {
  const name = obj.metadata?.name ?? '';
  const ns = obj.metadata?.namespace;
  return ns ? `${ns}/${name}` : name;
}

export function splitKey(key: string): { namespace?: string; name: string } {
  const i = key.indexOf('/');
  if (i < 0) return { name: key };
  return { namespace: key.slice(0, i), name: key.slice(i + 1) };
}

export const configMapsRef: ResourceRef = { group: '', version: 'v1', plural: 'configmaps', kind: 'ConfigMap', namespaced: true };
export const leasesRef: ResourceRef = { group: 'coordination.k8s.io', version: 'v1', plural: 'leases', kind: 'Lease', namespaced: true };
export const eventsRef: ResourceRef = { group: 'events.k8s.io', version: 'v1', plural: 'events', kind: 'Event', namespaced: true };
