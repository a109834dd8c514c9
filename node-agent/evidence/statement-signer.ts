// Signing worldline's statements on the node (issue 13, item 1): an in-toto statement about exact bytes,
// in a DSSE envelope signed with the node's Ed25519 key (the key that signs its receipts, which the trust
// policy pins for the node), kept in the node's evidence store under its own digest. The envelope's keyid
// names the key for a reader; trust comes only from the keys a verifier brings.
import { IN_TOTO_PAYLOAD_TYPE, pae, type Envelope } from '../../core/evidence/dsse.js';
import { statementBytes, type PredicateType, type Subject } from '../../core/evidence/statement.js';
import type { SigningKey } from '../receipts/signing-key.js';
import type { EvidenceStore } from './evidence-store.js';

export interface SignedStatement {
  /** The envelope as JSON text (what is stored and shown). */
  envelope: string;
  /** Its digest in the evidence store. */
  digest: string;
}

export class StatementSigner {
  constructor(
    private readonly key: Pick<SigningKey, 'sign' | 'keyId'>,
    private readonly store: Pick<EvidenceStore, 'putAll'>,
  ) {}

  sign(subject: Subject, predicateType: PredicateType, predicate: unknown): SignedStatement {
    const [signed] = this.signAll([{ subject, predicateType, predicate }]);
    return signed as SignedStatement;
  }

  /** Signs each statement and stores them together (one directory fsync for all): their envelopes and digests, in order. */
  signAll(statements: readonly { subject: Subject; predicateType: PredicateType; predicate: unknown }[]): SignedStatement[] {
    const envelopes = statements.map(({ subject, predicateType, predicate }) => {
      const payload = statementBytes(subject, predicateType, predicate);
      const sig = Buffer.from(this.key.sign(pae(IN_TOTO_PAYLOAD_TYPE, payload)));
      const env: Envelope = { payloadType: IN_TOTO_PAYLOAD_TYPE, payload: payload.toString('base64'), signatures: [{ keyid: this.key.keyId, sig: sig.toString('base64') }] };
      return JSON.stringify(env);
    });
    const digests = this.store.putAll(envelopes.map((e) => Buffer.from(e)));
    return envelopes.map((envelope, i) => ({ envelope, digest: digests[i] as string }));
  }
}
