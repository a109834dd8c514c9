// Root: a host directory on one node, adopted into that node's store. Its live state (PRIME) is an
// immutable, content-addressed generation; worlds fork from it and collapses advance it.
import { z } from 'zod';
import {
  AGE_COLUMN,
  absolutePath,
  cel,
  celChecked,
  conditions,
  digest,
  message,
  objectName,
  observedGeneration,
  outcomeCode,
  resourceSchema,
  type CrdDefinition,
} from './common.js';
import { ROOT_PHASES } from './outcomes.js';

/** What deleting a Root does to its adopted directory (spec.onDelete). */
export const ROOT_ON_DELETE = ['Release', 'KeepAdopted'] as const;

export const RootSpecSchema = z
  .object({
    nodeName: cel(
      objectName('Name of the Kubernetes node whose node-agent adopts and serves this Root. Immutable.'),
      { rule: 'self == oldSelf', message: 'spec.nodeName is immutable' },
    ),
    path: cel(
      celChecked(
        absolutePath(
          'spec.path',
          'Absolute host directory adopted into the node store. After adoption the directory is replaced by a link ' +
            'that routes through the store, and worlds see the Root at this same path. Must be normalized ' +
            "(no '.', '..' or empty segments, no trailing '/') and cannot be '/'. Immutable.",
        ),
        { rule: "self != '/'", message: "spec.path must not be the filesystem root '/'" },
        (v) => v !== '/',
      ),
      { rule: 'self == oldSelf', message: 'spec.path is immutable' },
    ),
    onDelete: z
      .enum(ROOT_ON_DELETE)
      .default('Release')
      .describe(
        'What deleting this Root does to its directory. Release (the default): the Worlds forking it are ended ' +
          '(ROOT_RELEASING), no Collapse commits into it, then its current PRIME generation goes back to spec.path ' +
          'as a plain directory with its owners and modes; older generations and receipts stay in the node store as ' +
          'history. KeepAdopted: the directory stays in the node store and spec.path stays a link to it. The ' +
          'node-agent holds the Root with the finalizer worldline.dev/root-release until it is done. May be changed ' +
          'until deletion; once a release has begun it is finished whatever this field says.',
      ),
  })
  .describe('Which host directory on which node is managed as this Root.');

export const RootStatusSchema = z
  .object({
    phase: z
      .enum(ROOT_PHASES)
      .optional()
      .describe('Adopting while the node-agent imports the directory; Ready once PRIME exists and the live link is intact; Broken when the live mapping or store is damaged (see reason); Releasing once the Root is deleted, while its Worlds end and its directory goes back to spec.path (ROOT_RELEASING, then ROOT_RELEASED).'),
    generation: z.int().min(0).optional().describe('Number of the PRIME generation: 1 after adoption, incremented by every committed collapse.'),
    digest: digest('Content digest (sha256:<64 hex>) of the PRIME generation manifest.').optional(),
    shortDigest: z.string().max(24).optional().describe('First 12 hex digits of digest, for the DIGEST printer column.'),
    nodeName: z.string().max(253).optional().describe('Copy of spec.nodeName written by the node-agent that serves this Root.'),
    reason: outcomeCode('UPPER_SNAKE outcome code for the current phase (e.g. LIVE_MAPPING_BROKEN, EXTERNAL_SYMLINK, STORE_LOCKED).').optional(),
    message: message('Human-readable explanation of the current phase.').optional(),
    observedGeneration: observedGeneration().optional(),
    conditions: conditions('Conditions (Accepted, Adopted, PrimeConsistent, OwnerEditsPublished, Ready); each type is owned by one field manager. PrimeConsistent=False (FOREIGN_WRITE) marks a Root whose PRIME was changed outside any collapse; collapses of it are refused until its bytes match the recorded generation again. OwnerEditsPublished=False names an edit the directory\'s owner made through its host path that cannot be published (OWNER_EDIT_UNPUBLISHABLE, or the failure\'s code); it is shown once that happened, and True once every edit is published again.').optional(),
  })
  .describe('Observed state of the Root, written by the node-agent of spec.nodeName.');

export const RootSchema = resourceSchema('Root', RootSpecSchema, RootStatusSchema);

export type RootSpec = z.infer<typeof RootSpecSchema>;
export type RootSpecInput = z.input<typeof RootSpecSchema>;
export type RootStatus = z.infer<typeof RootStatusSchema>;
export type Root = z.infer<typeof RootSchema>;

export const rootDefinition: CrdDefinition = {
  kind: 'Root',
  listKind: 'RootList',
  plural: 'roots',
  singular: 'root',
  scope: 'Cluster',
  shortNames: ['wlroot'],
  categories: ['worldline'],
  description:
    'Root is a host directory on one node adopted into that node\'s worldline store. Its current content (PRIME) is an immutable generation that Worlds fork from and Collapses advance.',
  spec: RootSpecSchema,
  status: RootStatusSchema,
  printerColumns: [
    { name: 'NODE', type: 'string', jsonPath: '.spec.nodeName', description: 'Node that serves the Root.' },
    { name: 'PATH', type: 'string', jsonPath: '.spec.path', description: 'Adopted host directory.' },
    { name: 'PHASE', type: 'string', jsonPath: '.status.phase', description: 'Adopting, Ready, Broken or Releasing.' },
    { name: 'GENERATION', type: 'integer', jsonPath: '.status.generation', description: 'PRIME generation number.' },
    { name: 'DIGEST', type: 'string', jsonPath: '.status.shortDigest', description: 'Short digest of PRIME.' },
    { name: 'REASON', type: 'string', jsonPath: '.status.reason', description: 'Outcome code of the current phase.', priority: 1 },
    AGE_COLUMN,
  ],
  selectableFields: [{ jsonPath: '.spec.nodeName' }],
};
