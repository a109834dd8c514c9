// One edge parser per worldline kind, from the kind's zod schema in crds/: informers built with these hand
// their handlers and reconcilers the inferred types (Root, Policy, World, Check, Collapse) and nothing else.
import { CheckSchema, CollapseSchema, PolicySchema, RootSchema, WorldSchema } from '../crds/index.js';
import { schemaParser } from './object-schema.js';

export const kindParsers = {
  Root: schemaParser('Root', RootSchema),
  Policy: schemaParser('Policy', PolicySchema),
  World: schemaParser('World', WorldSchema),
  Check: schemaParser('Check', CheckSchema),
  Collapse: schemaParser('Collapse', CollapseSchema),
} as const;
