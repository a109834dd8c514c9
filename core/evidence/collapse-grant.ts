// The collapse grant as a statement (issue 13, items 4 and 5): what the controller signs once it has
// verified a Collapse's whole evidence graph. It names the one transaction it authorizes (the Collapse,
// the node-agent's transaction id, the World, the node, the mode, the candidate) and every statement of
// the graph it verified, by role and digest, and it is valid for a short half-open interval. The subject
// is the transaction reference itself, so a grant cannot be re-pointed at another transaction. A closed
// schema: an unknown field is refused. Pure.
import { z } from 'zod';
import { canonicalJson } from '../canonical-json.js';
import { DIGEST_PREFIX, sha256Hex } from '../digest.js';
import type { Subject } from './statement.js';

export const TRANSACTION_REF_MEDIA_TYPE = 'application/vnd.worldline.collapse-transaction+json';

/** How long a grant may wait for its commit boundary. */
export const COLLAPSE_GRANT_VALID_MS = 5 * 60_000;

const digest = z.string().regex(/^sha256:[0-9a-f]{64}$/);
const uid = z.string().min(1).max(128);
const instant = z.iso.datetime({ offset: true });

/** What one statement of the graph was, for the grant: its role, the object that showed it, its digest. */
export const GRAPH_ROLES = ['isolation-observation', 'isolation-decision', 'isolation-waiver', 'check-execution'] as const;
export type GraphRole = (typeof GRAPH_ROLES)[number];

export const GraphNodeSchema = z.strictObject({
  role: z.enum(GRAPH_ROLES),
  /** For a check execution: the check's name in the Policy. */
  check: z.string().min(1).max(253).optional(),
  /** The SHA-256 of the envelope bytes as the object showed them. */
  digest,
  /** Issuer labels of the distinct trusted keys that signed it. */
  signers: z.array(z.string().min(1).max(253)).min(1).max(8),
});
export type GraphNode = z.infer<typeof GraphNodeSchema>;

export const TransactionRefSchema = z.strictObject({
  collapse: z.strictObject({ namespace: z.string().min(1).max(63), name: z.string().min(1).max(253), uid }),
  transaction: uid,
});
export type TransactionRef = z.infer<typeof TransactionRefSchema>;

export const CollapseGrantSchema = z.strictObject({
  grantId: z.string().regex(/^[A-Za-z0-9._-]{8,128}$/),
  about: TransactionRefSchema,
  world: z.strictObject({ namespace: z.string().min(1).max(63), name: z.string().min(1).max(253), uid }),
  node: z.string().min(1).max(253),
  mode: z.enum(['Candidate', 'CheckpointReturn']),
  /** The candidate promoted (a rebased one when the Collapse rebased); null for CheckpointReturn. */
  candidate: digest.nullable(),
  /** The roster the controller required, from the governing Policy (not from the producer). */
  roster: z.array(z.string().min(1).max(253)).max(64),
  evidence: z.array(GraphNodeSchema).max(128),
  notBefore: instant,
  notAfter: instant,
});
export type CollapseGrantPredicate = z.infer<typeof CollapseGrantSchema>;

export function transactionRefBytes(ref: TransactionRef): Buffer {
  return Buffer.from(canonicalJson({ format: 'worldline.collapse-transaction/v1', ...ref }));
}

/** The subject of a grant: the canonical reference of the transaction it authorizes. */
export function transactionRefSubject(ref: TransactionRef): Subject {
  const bytes = transactionRefBytes(ref);
  return { name: `collapses/${ref.collapse.namespace}/${ref.collapse.name}/${ref.transaction}`, digest: DIGEST_PREFIX + sha256Hex(bytes), size: bytes.length, mediaType: TRANSACTION_REF_MEDIA_TYPE };
}
