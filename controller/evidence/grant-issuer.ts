// Collapse grants issued by the controller (issue 13, items 4 and 5). When a node-agent shows a Collapse
// Authorized (its decision kernel authorized the transaction on what the node measured), the controller
// verifies the Collapse's whole evidence graph itself — every statement against the trust policy (read
// afresh each time) and against expectations the producer does not supply (collapse-graph.ts) — and only
// then signs a single-use grant for exactly that transaction, naming every statement it verified. The
// node-agent waits for it, verifies it under the key the trust policy pins for grants, and spends it
// before the exchange; a refused graph is shown on status.grant with its reason, and the node-agent denies
// the Collapse with that reason. The trust state seen (clock, revocation snapshot) only moves forward.
//
// status.grant is written under a field manager of its own, so the binding the dependent reconciler
// applies never removes it.
import { Counter, type Registry } from 'prom-client';
import type { Collapse } from '../../crds/index.js';
import { COLLAPSE_GRANT_VALID_MS, transactionRefSubject, type CollapseGrantPredicate } from '../../core/evidence/collapse-grant.js';
import { verifyEvidenceGraph } from '../../core/evidence/evidence-graph.js';
import { IN_TOTO_PAYLOAD_TYPE, signEnvelope } from '../../core/evidence/dsse.js';
import { PREDICATE_TYPES, statementBytes } from '../../core/evidence/statement.js';
import type { TrustMemory, TrustPolicy } from '../../core/evidence/trust-policy.js';
import { DIGEST_PREFIX, sha256Hex } from '../../core/digest.js';
import type { Clock } from '../../kube/clock.js';
import type { EventRecorder } from '../../kube/events.js';
import type { KubeAccess } from '../../kube/kube-access.js';
import type { Logger } from '../../kube/logger.js';
import { StatusWriter } from '../../kube/status-writer.js';
import { readTrustPolicyFile } from '../../kube/trust-policy-file.js';
import type { Caches } from '../caches.js';
import { refs } from '../api-refs.js';
import { collapseGraphInputs } from './collapse-graph.js';
import type { GrantKey } from './grant-key.js';

export const GRANT_FIELD_MANAGER = 'worldline-controller-grants';

type GrantStatus = NonNullable<NonNullable<Collapse['status']>['grant']>;

export interface GrantIssuerDeps {
  kubeConfig: KubeAccess;
  caches: Caches;
  key: GrantKey;
  trustPolicyPath: string;
  events: EventRecorder;
  clock: Clock;
  logger: Logger;
  registry: Registry;
}

export class GrantIssuer {
  private memory: TrustMemory = {};
  private readonly status: StatusWriter;
  private readonly outcomes: Counter<'outcome' | 'reason'>;

  constructor(private readonly d: GrantIssuerDeps) {
    this.status = new StatusWriter(d.kubeConfig, GRANT_FIELD_MANAGER, d.logger);
    const name = 'worldline_collapse_grants_total';
    const existing = d.registry.getSingleMetric(name);
    this.outcomes = (existing as Counter<'outcome' | 'reason'> | undefined) ?? new Counter({ name, help: 'Collapse evidence graphs the controller verified: outcome Issued (a grant was signed) or Refused, by reason.', labelNames: ['outcome', 'reason'], registers: [d.registry] });
  }

  /** Verifies and answers the Collapse `key` when it waits Authorized for a grant its status does not show yet. */
  async reconcile(key: string): Promise<void> {
    const c = this.d.caches.collapses.get(key);
    const t = c?.status?.transaction;
    if (!c?.metadata.uid || c.metadata.deletionTimestamp || c.status?.phase !== 'Authorized' || t?.state !== 'AUTHORIZED' || !t.id) return;
    if (c.status.grant?.transaction === t.id) return;
    const answer = this.answer(c, t.id);
    await this.status.applyOwnedStatus(refs.Collapse, c, { grant: answer }, { keys: ['grant'] });
    this.outcomes.inc({ outcome: answer.outcome, reason: answer.reason ?? '' });
    if (answer.outcome === 'Issued') {
      this.d.logger.info('collapse grant issued', { collapse: key, transaction: t.id, evidence: answer.evidence?.length ?? 0 });
      this.d.events.normal(c, 'GrantIssued', `the evidence graph verified (${answer.evidence?.length ?? 0} statement(s)); grant ${answer.digest ?? ''} signed for transaction ${t.id}`);
    } else if (answer.reason !== undefined) {
      this.d.logger.warn('collapse evidence graph refused', { collapse: key, transaction: t.id, reason: answer.reason, message: answer.message });
      this.d.events.warning(c, answer.reason, answer.message ?? '');
    }
  }

  private answer(c: Collapse, transaction: string): GrantStatus {
    const ns = c.metadata.namespace ?? '';
    const world = this.d.caches.worlds.get(`${ns}/${c.spec.worldRef}`);
    const checks = this.d.caches.checksOf(ns, c.spec.worldRef).flatMap((k) => this.d.caches.checks.get(k) ?? []);
    const policies = world ? this.d.caches.policiesNaming(world.spec.roots) : [];
    const inputs = collapseGraphInputs(c, world, checks, policies);
    if ('refused' in inputs) return { transaction, outcome: 'Refused', ...inputs.refused };
    const refused = (reason: string, message: string): GrantStatus => ({ transaction, outcome: 'Refused', reason, message, roster: [...inputs.expect.roster] });
    let policy: TrustPolicy;
    try {
      policy = readTrustPolicyFile(this.d.trustPolicyPath);
    } catch (e) {
      return refused('TRUST_POLICY_UNREADABLE', (e as Error).message);
    }
    const result = verifyEvidenceGraph({
      expect: inputs.expect,
      statements: inputs.statements,
      policy,
      now: this.d.clock.now(),
      memory: this.memory,
      refresh: () => ({ policy: readTrustPolicyFile(this.d.trustPolicyPath), now: this.d.clock.now() }),
    });
    this.memory = result.memory;
    if (!result.ok) return refused(result.reason, result.message);

    const now = this.d.clock.now();
    const about = { collapse: { namespace: ns, name: c.metadata.name ?? '', uid: c.metadata.uid ?? '' }, transaction };
    const predicate: CollapseGrantPredicate = {
      grantId: transaction,
      about,
      world: { ...inputs.expect.world },
      node: inputs.expect.node,
      mode: c.spec.mode,
      candidate: inputs.expect.candidate,
      roster: [...inputs.expect.roster],
      evidence: result.nodes,
      notBefore: now.toISOString(),
      notAfter: new Date(now.getTime() + COLLAPSE_GRANT_VALID_MS).toISOString(),
    };
    const payload = statementBytes(transactionRefSubject(about), PREDICATE_TYPES.collapseGrant, predicate);
    const envelope = JSON.stringify(signEnvelope(IN_TOTO_PAYLOAD_TYPE, payload, { keyId: this.d.key.issuer, privateKey: this.d.key.privateKey }));
    return { transaction, outcome: 'Issued', roster: predicate.roster, evidence: result.nodes, digest: DIGEST_PREFIX + sha256Hex(envelope), envelope };
  }
}
