// The Kubernetes Condition shape, ObjectMeta, a kind's resource schema and the CRD definition descriptor.
import { z } from 'zod';
import { API_VERSION } from './api-group.js';
import { listType, uniqueBy } from './cel.js';
import { CONDITION_STATUSES } from './outcomes.js';
import { timestamp } from './scalars.js';

// ---- Conditions ----------------------------------------------------------------------------------------------

const CONDITION_TYPE_PATTERN =
  '^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$';
const CONDITION_REASON_PATTERN = '^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$';

/** A standard Kubernetes condition (metav1.Condition). */
export const ConditionSchema = z
  .object({
    type: z.string().min(1).max(316).regex(new RegExp(CONDITION_TYPE_PATTERN)).describe('Type of the condition in CamelCase (e.g. Ready, Admitted). Each type is owned by exactly one field manager.'),
    status: z.enum(CONDITION_STATUSES).describe('Whether the condition holds: True, False or Unknown.'),
    observedGeneration: z.int().min(0).optional().describe('metadata.generation of the object the condition was computed from.'),
    lastTransitionTime: timestamp('When the condition last changed status.'),
    reason: z.string().min(1).max(1024).regex(new RegExp(CONDITION_REASON_PATTERN)).describe('CamelCase, machine-readable reason for the last transition.'),
    message: z.string().max(32768).describe('Human-readable details about the last transition; may be empty.'),
  })
  .describe('One observation of the state of the object, following the Kubernetes API conventions.');
export type Condition = z.infer<typeof ConditionSchema>;

/** Conditions list: an SSA map keyed by `type`, so the controller and the node-agent each own their own types. */
export function conditions(description: string) {
  return listType(z.array(ConditionSchema).max(32), 'map', ['type'])
    .refine((v) => uniqueBy(v, (c) => c.type), { message: 'status.conditions types must be unique' })
    .describe(description);
}

export function observedGeneration() {
  return z.int().min(0).describe('metadata.generation of the spec this status was last computed from.');
}

// ---- ObjectMeta / resources ------------------------------------------------------------------------------------

/** The subset of metav1.ObjectMeta worldline reads; unknown fields pass through. */
export const ObjectMetaSchema = z
  .looseObject({
    name: z.string().max(253).optional().describe('Object name.'),
    generateName: z.string().max(253).optional().describe('Prefix for a server-generated name.'),
    namespace: z.string().max(63).optional().describe('Namespace (namespaced kinds only).'),
    uid: z.string().optional().describe('Server-assigned unique id.'),
    resourceVersion: z.string().optional().describe('Opaque version for optimistic concurrency.'),
    generation: z.int().optional().describe('Sequence number of the desired state (spec).'),
    creationTimestamp: z.string().optional().describe('Creation time (RFC 3339).'),
    deletionTimestamp: z.string().optional().describe('Deletion time, when deletion was requested.'),
    labels: z.record(z.string(), z.string()).optional().describe('Labels.'),
    annotations: z.record(z.string(), z.string()).optional().describe('Annotations.'),
    finalizers: z.array(z.string()).optional().describe('Finalizers.'),
    ownerReferences: z.array(z.looseObject({})).optional().describe('Owner references.'),
  })
  .describe('Standard Kubernetes object metadata.');
export type ObjectMeta = z.infer<typeof ObjectMetaSchema>;

/** Builds the zod schema of a full object (apiVersion, kind, metadata, spec, status). */
export function resourceSchema<K extends string, S extends z.ZodType, T extends z.ZodType>(kind: K, spec: S, status: T) {
  return z.object({
    apiVersion: z.literal(API_VERSION),
    kind: z.literal(kind),
    metadata: ObjectMetaSchema,
    spec,
    status: status.optional(),
  });
}

// ---- CRD definition descriptor ---------------------------------------------------------------------------------

export interface PrinterColumn {
  name: string;
  type: 'string' | 'integer' | 'number' | 'boolean' | 'date';
  jsonPath: string;
  description: string;
  /** 0 = shown by `kubectl get`; 1 = only with `-o wide`. */
  priority?: 0 | 1;
  format?: string;
}

/** Everything needed to render one CustomResourceDefinition. */
export interface CrdDefinition {
  kind: string;
  listKind: string;
  plural: string;
  singular: string;
  scope: 'Cluster' | 'Namespaced';
  shortNames: string[];
  categories: string[];
  /** Top-level description of the kind (shown by `kubectl explain <kind>`). */
  description: string;
  spec: z.ZodType;
  status: z.ZodType;
  printerColumns: PrinterColumn[];
  selectableFields: { jsonPath: string }[];
}

/** Age column every kind ends with. */
export const AGE_COLUMN: PrinterColumn = {
  name: 'AGE',
  type: 'date',
  jsonPath: '.metadata.creationTimestamp',
  description: 'Time since the object was created.',
};
