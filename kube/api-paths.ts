// REST paths for a ResourceRef: the collection, one object, and its status subresource.
import type { ResourceRef } from './resource-ref.js';

const seg = encodeURIComponent;

function groupPrefix(ref: ResourceRef): string {
  return ref.group === '' ? `/api/${seg(ref.version)}` : `/apis/${seg(ref.group)}/${seg(ref.version)}`;
}

/** Collection path; for a namespaced resource without namespace, the all-namespaces collection. */
export function collectionPath(ref: ResourceRef, namespace?: string): string {
  if (ref.namespaced && namespace) return `${groupPrefix(ref)}/namespaces/${seg(namespace)}/${seg(ref.plural)}`;
  return `${groupPrefix(ref)}/${seg(ref.plural)}`;
}

export function objectPath(ref: ResourceRef, name: string, namespace?: string): string {
  if (ref.namespaced && !namespace) throw new Error(`${ref.kind} ${name}: namespace required for a namespaced resource`);
  if (!name) throw new Error(`${ref.kind}: object name required`);
  return `${collectionPath(ref, ref.namespaced ? namespace : undefined)}/${seg(name)}`;
}

export function statusPath(ref: ResourceRef, name: string, namespace?: string): string {
  return `${objectPath(ref, name, namespace)}/status`;
}
