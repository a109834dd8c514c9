// Isolation waivers (issue 13, item 6): the only way a World whose isolation decision is not
// reported-sufficient may still run. A waiver is an in-toto statement signed by an issuer the trust policy
// names; it is about one World (namespace and name: the subject is the canonical bytes of that reference,
// so its digest, size and media type all bind it), names the exact controls it waives and the half-open
// interval it is valid in, and carries a grant id that the node spends once, at launch.
// A waiver covers a decision only when every reason the decision gives is a missing control, and every
// missing control is one the waiver names: a wrong target, an incomplete observation, a level below the
// minimum or an unconfigured stage is never waived.
// Pure: schemas, the subject's bytes and the coverage rule; the signature and the spending are elsewhere.
import { z } from 'zod';
import { canonicalJson } from '../canonical-json.js';
import { DIGEST_PREFIX, sha256Hex } from '../digest.js';
import type { IsolationDecision } from '../isolation/records.js';
import { canonicalControls, ISOLATION_CONTROLS, type IsolationControl } from '../isolation/vocabulary.js';
import type { Subject } from './statement.js';

export const WORLD_REF_MEDIA_TYPE = 'application/vnd.worldline.world-ref+json';
const WORLD_REF_FORMAT = 'worldline.world-ref/v1';

/** The longest a waiver may be valid: it is an exception for one run, not a standing permission. */
export const MAX_WAIVER_SECONDS = 7 * 24 * 3600;

const dnsLabel = z.string().regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/).max(63);
const objectName = z.string().regex(/^[a-z0-9]([-.a-z0-9]*[a-z0-9])?$/).max(253);
const instant = z.iso.datetime({ offset: true });

export const WorldRefSchema = z.strictObject({ namespace: dnsLabel, name: objectName });
export type WorldRef = z.infer<typeof WorldRefSchema>;

export const IsolationWaiverSchema = z
  .strictObject({
    /** Spent once: the node records its digest durably before the World runs. */
    grantId: z.string().regex(/^[A-Za-z0-9._-]{8,128}$/, 'a grant id is 8 to 128 characters of A-Z a-z 0-9 . _ -'),
    world: WorldRefSchema,
    /** The node it may be spent on (any node when absent). */
    node: objectName.optional(),
    stage: z.literal('agent'),
    waivedControls: z
      .array(z.enum(ISOLATION_CONTROLS))
      .min(1)
      .max(ISOLATION_CONTROLS.length)
      .refine((v) => canonicalControls(v).join() === v.join(), 'waivedControls must be unique and in canonical order'),
    notBefore: instant,
    notAfter: instant,
    /** Why the exception was made (shown on the World; never read for a decision). */
    reason: z.string().min(1).max(1024),
  })
  .superRefine((w, ctx) => {
    const span = Date.parse(w.notAfter) - Date.parse(w.notBefore);
    if (!(span > 0)) ctx.addIssue({ code: 'custom', path: ['notAfter'], message: 'notAfter must be after notBefore' });
    if (span > MAX_WAIVER_SECONDS * 1000) ctx.addIssue({ code: 'custom', path: ['notAfter'], message: `a waiver is valid for at most ${MAX_WAIVER_SECONDS} s` });
  });
export type IsolationWaiver = z.infer<typeof IsolationWaiverSchema>;

/** The exact bytes a waiver's subject digests: the canonical reference to its World. */
export function worldRefBytes(ref: WorldRef): Buffer {
  return Buffer.from(canonicalJson({ format: WORLD_REF_FORMAT, namespace: ref.namespace, name: ref.name }));
}

/** The statement subject of a waiver for `ref`. */
export function worldRefSubject(ref: WorldRef): Subject {
  const bytes = worldRefBytes(ref);
  return { name: `worlds/${ref.namespace}/${ref.name}`, digest: DIGEST_PREFIX + sha256Hex(bytes), size: bytes.length, mediaType: WORLD_REF_MEDIA_TYPE };
}

export type WaiverCoverage = { ok: true; waived: IsolationControl[] } | { ok: false; message: string };

/** Whether `waiver` lets a World with `decision` run, and which of its controls it waives doing so. */
export function waiverCovers(decision: Pick<IsolationDecision, 'outcome' | 'reasons' | 'missingControls'>, waiver: Pick<IsolationWaiver, 'waivedControls'>): WaiverCoverage {
  if (decision.outcome === 'reported-sufficient') return { ok: false, message: 'the decision is reported-sufficient: there is nothing to waive' };
  const other = decision.reasons.filter((r) => r !== 'CONTROLS_MISSING');
  if (other.length > 0) return { ok: false, message: `a waiver waives missing controls only; the decision also says ${other.join(', ')}` };
  const waived = new Set<string>(waiver.waivedControls);
  const notWaived = decision.missingControls.filter((c) => !waived.has(c));
  if (notWaived.length > 0) return { ok: false, message: `missing control(s) ${notWaived.join(', ')} not named by the waiver (it waives ${waiver.waivedControls.join(', ')})` };
  return { ok: true, waived: canonicalControls(decision.missingControls) };
}
