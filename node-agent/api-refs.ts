// REST coordinates of the kinds the node-agent reads and writes (from the API definition in crds/).
import type { ResourceRef } from '../kube/resource-ref.js';
import { resources } from '../crds/index.js';

export const refs = {
  ...resources,
  Secret: { group: '', version: 'v1', kind: 'Secret', plural: 'secrets', namespaced: true } as ResourceRef,
} as const;

export const FIELD_MANAGER = 'worldline-node-agent';
export { NODE_CLEANUP_FINALIZER } from '../crds/labels.js';
