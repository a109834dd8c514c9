// REST coordinates of the worldline kinds, taken from the API definition in crds/.
import type { ResourceRef } from '../kube/resource-ref.js';
import { GROUP, VERSION } from '../crds/api-group.js';

const ref = (kind: string, plural: string, namespaced: boolean): ResourceRef => ({ group: GROUP, version: VERSION, kind, plural, namespaced });

export const refs = {
  Root: ref('Root', 'roots', false),
  Policy: ref('Policy', 'policies', false),
  World: ref('World', 'worlds', true),
  Check: ref('Check', 'checks', true),
  Collapse: ref('Collapse', 'collapses', true),
} as const;

export const API_VERSION = `${GROUP}/${VERSION}`;
