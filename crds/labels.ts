// Names the controller and the node-agent agree on outside the schema: labels and the finalizer.

/** Finalizer on a bound World; the node-agent of the World's node removes it after cleaning up there. */
export const NODE_CLEANUP_FINALIZER = 'worldline.dev/node-cleanup';

/** Label on bound Worlds (and their Checks and Collapses) and on node-agent heartbeat Leases: the node. */
export const NODE_LABEL = 'worldline.dev/node';

/** Label on node-agent heartbeat Leases (value `node-agent`). */
export const COMPONENT_LABEL = 'worldline.dev/component';

/** The name of a node-agent's heartbeat Lease (in the worldline namespace). */
export function heartbeatLeaseName(nodeName: string): string {
  return `worldline-node-${nodeName}`.slice(0, 253);
}

/** Annotation on a node-agent's heartbeat Lease: where its view server listens (HOST:PORT), for the controller. */
export const VIEW_ADDRESS_ANNOTATION = 'worldline.dev/view-address';
