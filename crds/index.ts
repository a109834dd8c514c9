// The worldline API (worldline.dev/v1alpha1): one barrel for schemas, types, descriptors and the
// resource table the controller and node-agent use to build clients and informers.
import { GROUP, VERSION } from './api-group.js';
import type { CrdDefinition } from './common.js';
import { checkDefinition } from './check.js';
import { collapseDefinition } from './collapse.js';
import { policyDefinition } from './policy.js';
import { rootDefinition } from './root.js';
import { worldDefinition } from './world.js';

export * from './api-group.js';
export * from './outcomes.js';
export * from './isolation-vocabulary.js';
export * from './common.js';
export * from './root.js';
export * from './policy.js';
export * from './world.js';
export * from './check.js';
export * from './collapse.js';

/** Every kind, in dependency order (Root, Policy, World, Check, Collapse). */
export const definitions: readonly CrdDefinition[] = [rootDefinition, policyDefinition, worldDefinition, checkDefinition, collapseDefinition];

export type ResourceKind = 'Root' | 'Policy' | 'World' | 'Check' | 'Collapse';

export interface ResourceInfo {
  kind: ResourceKind;
  plural: string;
  group: typeof GROUP;
  version: typeof VERSION;
  namespaced: boolean;
}

function info(kind: ResourceKind, def: CrdDefinition): ResourceInfo {
  return { kind, plural: def.plural, group: GROUP, version: VERSION, namespaced: def.scope === 'Namespaced' };
}

/** Group/version/plural/scope of every kind, keyed by kind. */
export const resources = {
  Root: info('Root', rootDefinition),
  Policy: info('Policy', policyDefinition),
  World: info('World', worldDefinition),
  Check: info('Check', checkDefinition),
  Collapse: info('Collapse', collapseDefinition),
} as const satisfies Record<ResourceKind, ResourceInfo>;
