// Single-use collapse authorizations (issue 13, item 5). When the decision kernel authorizes a Collapse,
// the authorization becomes a grant: the transaction's id, the exact bytes of what was authorized (the
// Collapse, the World, the mode, every Root's generation and digest before) and a short validity. At the
// commit boundary, once the decision holds again on the boundary's own hashes, the grant is spent in the
// node's grant store — validity and revocation checked first, then one IMMEDIATE transaction, then the
// validity again at a fresh clock reading — and only then does the exchange happen. A grant is never
// spent twice (a replay of the transaction, or other bytes under its id, is refused); one spent before a
// crash stays spent, and a rolled-back transaction needs a new authorization. This grant is the node's
// own; a grant issued by the controller after verifying the evidence graph (item 4) is not built.
import { canonicalJson } from '../../core/canonical-json.js';
import type { GrantStore, GrantToSpend } from './grant-store.js';

/** How long an authorization may wait for its commit boundary. */
export const COLLAPSE_GRANT_TTL_MS = 10 * 60_000;

export interface CollapseAuthorization {
  transactionId: string;
  collapse: { namespace: string; name: string; uid: string };
  worldUid: string;
  mode: string;
  roots: readonly { name: string; generation: number; digest: string }[];
}

export interface CollapseGrant {
  id: string;
  bytes: Buffer;
  notBefore: Date;
  notAfter: Date;
}

export function mintCollapseGrant(a: CollapseAuthorization, now: Date): CollapseGrant {
  const notAfter = new Date(now.getTime() + COLLAPSE_GRANT_TTL_MS);
  const doc = {
    format: 'worldline.collapse-grant/v1',
    grantId: a.transactionId,
    collapse: a.collapse,
    world: { uid: a.worldUid },
    mode: a.mode,
    roots: [...a.roots].map((r) => ({ root: r.name, generation: r.generation, digest: r.digest })).sort((x, y) => (x.root < y.root ? -1 : 1)),
    notBefore: now.toISOString(),
    notAfter: notAfter.toISOString(),
  };
  return { id: a.transactionId, bytes: Buffer.from(canonicalJson(doc)), notBefore: now, notAfter };
}

/** Spends the grant for the exchange the boundary measured (PRIME and staged digests per Root); throws GrantError. */
export function spendCollapseGrant(store: GrantStore, g: CollapseGrant, boundary: { prime: ReadonlyMap<string, string | undefined>; staged: ReadonlyMap<string, string | undefined> }, o: { now: () => Date; revoked: (id: string) => boolean }): Date {
  const roots = [...boundary.prime.keys()].sort().map((root) => ({ root, prime: boundary.prime.get(root) ?? null, staged: boundary.staged.get(root) ?? null }));
  const spend: GrantToSpend = { id: g.id, bytes: g.bytes, request: canonicalJson({ format: 'worldline.collapse-exchange/v1', grantId: g.id, roots }), notBefore: g.notBefore, notAfter: g.notAfter };
  return store.spend(spend, o);
}
