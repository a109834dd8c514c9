// The receipt format (worldline.receipt/v1): what one collapse transaction ended as, why, on which
// evidence, and which generations it moved — written as canonical JSON so that its hash is its id.
//
//   id = 'sha256:' + hex(SHA-256(canonicalJson(body)))
//
// Receipts form a chain: each body names its predecessor's id in `previous` (null for the first) and
// carries a sequence number starting at 1. A receipt is evidence that the node-agent recorded this
// outcome; `doesNotClaim` lists, in the receipt itself, what it is not evidence of.
import { z } from 'zod';
import { digestOf } from '../digest.js';

export const RECEIPT_FORMAT = 'worldline.receipt/v1';

/** What a receipt is not evidence of. Written into every receipt so a reader cannot miss it. */
export const RECEIPT_DOES_NOT_CLAIM: readonly string[] = [
  'that the checks are right or sufficient: only that the named checks ran and passed over the named bytes',
  'that the verdict is independent of the candidate: an examiner that trusts candidate output hands it the verdict',
  'that the signing key is secret: anyone holding it, including any root process on the node, can sign',
  'that the ledger is complete or unrewritten: a key holder can rebuild it; only a copy they cannot write shows a rewrite',
  'that the node, its kernel or the node-agent are genuine or unmodified',
  'which person or account asked for the collapse',
  'that nothing happened between measurements: a write made and undone between two captures is not seen',
];

const digest = z.string().regex(/^sha256:[0-9a-f]{64}$/, 'expected sha256:<64 lowercase hex>');
const text = z.string().min(1).max(4096);
const generation = z.number().int().nonnegative();
const reasonCode = z.string().regex(/^[A-Z][A-Z0-9_]*$/, 'expected an UPPER_SNAKE reason code');

const rootChange = z.strictObject({
  root: text,
  fromGeneration: generation,
  toGeneration: generation.nullable(),
  beforeDigest: text,
  afterDigest: text.nullable(),
});

/** A rebased candidate (Collapse spec.rebase): what the agent produced, what it was applied to, and the bytes that were checked and committed. */
const rebase = z.strictObject({
  from: digest,
  candidate: digest,
  onto: z.array(z.strictObject({ root: text, generation, digest })).min(1),
});

export const receiptBodySchema = z
  .strictObject({
    format: z.literal(RECEIPT_FORMAT),
    sequence: z.number().int().min(1),
    previous: digest.nullable(),
    transaction: z.strictObject({ id: text, state: z.enum(['COMMITTED', 'DENIED']) }),
    world: z.strictObject({ namespace: text, name: text, uid: text }),
    mode: z.enum(['Candidate', 'CheckpointReturn']),
    decision: z.strictObject({ authorized: z.boolean(), reasons: z.array(reasonCode) }),
    evidence: z.strictObject({
      requirementHash: text.nullable(),
      subject: text.nullable(),
      verifierIdentity: text.nullable(),
      executedVerifierIdentity: text.nullable(),
    }),
    roots: z.array(rootChange),
    // Present only for a rebased candidate; evidence.subject is then rebase.candidate.
    rebase: rebase.optional(),
    // Stryker disable next-line ObjectLiteral: equivalent; zod's datetime refuses offsets by default, `offset: false` says so explicitly.
    issuedAt: z.iso.datetime({ offset: false }),
    doesNotClaim: z.array(text).min(1),
  })
  .superRefine((b, ctx) => {
    const issue = (message: string, path: (string | number)[]): void => ctx.addIssue({ code: 'custom', message, path });
    const committed = b.transaction.state === 'COMMITTED';
    if (committed !== b.decision.authorized) issue('COMMITTED exactly when the decision authorized', ['decision', 'authorized']);
    if (b.decision.authorized !== (b.decision.reasons.length === 0)) issue('an authorized decision has no reasons; a refusal has at least one', ['decision', 'reasons']);
    if (committed && b.roots.length === 0) issue('a committed transaction moved at least one root', ['roots']);
    b.roots.forEach((r, i) => {
      if (committed && (r.toGeneration === null || r.afterDigest === null)) issue('a committed root names its new generation and digest', ['roots', i]);
      if (!committed && (r.toGeneration !== null || r.afterDigest !== null)) issue('a denied transaction moved nothing', ['roots', i]);
    });
    if (b.rebase && b.mode !== 'Candidate') issue('only a Candidate collapse is rebased', ['rebase']);
    if (b.rebase && b.evidence.subject !== null && b.evidence.subject !== b.rebase.candidate) issue('a rebased collapse is judged on the rebased candidate', ['evidence', 'subject']);
    if (committed && b.mode === 'Candidate') {
      const e = b.evidence;
      if (e.requirementHash === null || e.subject === null || e.verifierIdentity === null || e.executedVerifierIdentity === null) {
        issue('a committed candidate names the evidence it was authorized on', ['evidence']);
      }
    }
  });

export type ReceiptBody = z.infer<typeof receiptBodySchema>;

/** What the caller supplies; the chain position, the format and the disclaimers are filled in. */
export type ReceiptContent = Omit<ReceiptBody, 'format' | 'sequence' | 'previous' | 'doesNotClaim'>;

export function buildReceiptBody(content: ReceiptContent, sequence: number, previous: string | null): ReceiptBody {
  const body: ReceiptBody = {
    format: RECEIPT_FORMAT,
    sequence,
    previous,
    transaction: content.transaction,
    world: content.world,
    mode: content.mode,
    decision: content.decision,
    evidence: content.evidence,
    roots: content.roots,
    ...(content.rebase ? { rebase: content.rebase } : {}),
    issuedAt: content.issuedAt,
    doesNotClaim: [...RECEIPT_DOES_NOT_CLAIM],
  };
  return receiptBodySchema.parse(body); // refuse to build what a verifier would refuse to read
}

/** The id of a receipt body: sha256 of its canonical JSON. */
export function receiptId(body: ReceiptBody): string {
  return digestOf(body);
}

/** Check an untrusted body's shape; the first problem as text, or the typed body. */
export function parseReceiptBody(value: unknown): { ok: true; body: ReceiptBody } | { ok: false; message: string } {
  const r = receiptBodySchema.safeParse(value);
  if (r.success) return { ok: true, body: r.data };
  const first = r.error.issues[0];
  const where = first && first.path.length > 0 ? first.path.join('.') : '(body)';
  // Stryker: '' for 'invalid' survives as equivalent; a failed zod parse always has a first issue.
  return { ok: false, message: `${where}: ${first?.message ?? 'invalid'}` };
}
