// The cluster's record of each node's receipt ledger head (issue 13, receipts anchored off the node): the
// newest receipt a node reported on a Collapse's status, recorded by the controller in the ConfigMap
// worldline-ledger-heads of its namespace, one key per node, as a core/receipts/ledger-head.ts document.
// The node-agents cannot write that ConfigMap (the chart's admission policy lets a node-agent write only
// its own receipts ConfigMap), so history a node rewrites or cuts after a head was recorded is caught by
// `worldline receipts verify --heads`. Heads only move forward under the key first recorded for the node;
// a conflict (another receipt at the recorded sequence, another key) is never recorded over the head: it
// is logged and announced as a Warning Event on the Collapse that showed it.
//
// With a trust policy (--trust-policy), a receipt is recorded only when its signature verifies under a
// key the policy pins for that node (receipt-trust.ts): a node that starts signing with a key of its own
// making is refused KEY_UNTRUSTED, and a pinned new key moves the head on (rotation).
//
// Observed Collapses are batched: one read and one apply of the ConfigMap per flush (a short delay after
// the first change), and a failed flush is tried again later with what was pending.
import type { Collapse } from '../crds/index.js';
import { nextHead, parseLedgerHead, type LedgerHead, type SeenReceipt } from '../core/receipts/ledger-head.js';
import { trustReceipt } from '../core/receipts/receipt-trust.js';
import type { TrustMemory, TrustPolicy } from '../core/evidence/trust-policy.js';
import { readTrustPolicyFile } from '../kube/trust-policy-file.js';
import { isNotFound } from '../kube/api-error.js';
import { objectPath } from '../kube/api-paths.js';
import type { Clock } from '../kube/clock.js';
import type { EventRecorder } from '../kube/events.js';
import { httpClientFor } from '../kube/http.js';
import type { KubeAccess } from '../kube/kube-access.js';
import type { Logger } from '../kube/logger.js';
import { configMapsRef } from '../kube/resource-ref.js';
import type { StatusWriter } from '../kube/status-writer.js';
import { COMPONENT_LABEL } from './reasons.js';

export const LEDGER_HEADS_CONFIGMAP = 'worldline-ledger-heads';
const FLUSH_DELAY_MS = 1_000;
const RETRY_DELAY_MS = 5_000;

interface Pending extends SeenReceipt {
  collapse: Collapse;
}

export interface LedgerHeadsDeps {
  kubeConfig: KubeAccess;
  namespace: string;
  /** Applies the ConfigMap with the controller's field manager. */
  writer: Pick<StatusWriter, 'applyObject'>;
  events: EventRecorder;
  clock: Clock;
  logger: Logger;
  flushDelayMs?: number;
  /** The trust policy file pinning each node's receipt keys (read afresh at each flush). */
  trustPolicy?: string;
}

export class LedgerHeads {
  private readonly pending = new Map<string, Pending>();
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> = Promise.resolve();
  private stopped = false;
  private trustMemory: TrustMemory = {};

  constructor(private readonly d: LedgerHeadsDeps) {}

  /** Notes the receipt a Collapse's status shows (the newest per node waits for the next flush). */
  observe(c: Collapse): void {
    const r = c.status?.receipt;
    const node = c.status?.nodeName;
    if (!r || !node || this.stopped) return;
    const had = this.pending.get(node);
    if (had && had.sequence >= r.sequence) return;
    this.pending.set(node, { sequence: r.sequence, id: r.id, keyId: r.keyId, signature: r.signature, collapse: c });
    this.schedule(this.d.flushDelayMs ?? FLUSH_DELAY_MS);
  }

  private schedule(ms: number): void {
    if (this.timer || this.stopped) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.flushing = this.flushing.then(() => this.flush());
    }, ms);
    this.timer.unref();
  }

  /** Records what is pending; on failure keeps it pending and tries again later. */
  async flush(): Promise<void> {
    if (this.pending.size === 0) return;
    const batch = new Map(this.pending);
    this.pending.clear();
    try {
      await this.record(batch);
    } catch (e) {
      this.d.logger.warn('could not record the nodes\' ledger heads; trying again', { configMap: LEDGER_HEADS_CONFIGMAP, error: (e as Error).message });
      for (const [node, p] of batch) if ((this.pending.get(node)?.sequence ?? 0) < p.sequence) this.pending.set(node, p);
      this.schedule(RETRY_DELAY_MS);
    }
  }

  private async record(batch: ReadonlyMap<string, Pending>): Promise<void> {
    const path = objectPath(configMapsRef, LEDGER_HEADS_CONFIGMAP, this.d.namespace);
    let data: Record<string, string> = {};
    try {
      const cm = await httpClientFor(this.d.kubeConfig).request<{ data?: Record<string, string> }>({ method: 'GET', path });
      data = { ...(cm.data ?? {}) };
    } catch (e) {
      if (!isNotFound(e)) throw e;
    }
    let changed = false;
    let policy: TrustPolicy | undefined;
    let policyError: string | undefined;
    if (this.d.trustPolicy !== undefined) {
      try {
        policy = readTrustPolicyFile(this.d.trustPolicy);
      } catch (e) {
        policyError = (e as Error).message;
      }
    }
    for (const [node, seen] of batch) {
      let keyPinned = false;
      if (this.d.trustPolicy !== undefined) {
        if (!policy) {
          this.conflict(seen.collapse, 'KEY_UNTRUSTED', `receipt ${seen.sequence} of node ${node} is not recorded: ${policyError ?? 'no trust policy'}`);
          continue;
        }
        const trust = trustReceipt(policy, { node, id: seen.id, signature: seen.signature, keyId: seen.keyId, at: this.d.clock.now() }, this.d.clock.now(), this.trustMemory);
        if (!trust.ok) {
          this.conflict(seen.collapse, trust.code === 'SIGNATURE_INVALID' ? 'HEAD_CONFLICT' : trust.code, `receipt ${seen.sequence} of node ${node} is not recorded: ${trust.message}`);
          continue;
        }
        this.trustMemory = trust.memory;
        keyPinned = true;
      }
      const text = data[node];
      let recorded: LedgerHead | undefined;
      if (text !== undefined) {
        const parsed = parseLedgerHead(text);
        if (!parsed.ok) {
          // Someone wrote something that is not a head: never overwritten silently.
          this.conflict(seen.collapse, 'HEAD_CONFLICT', `the recorded head of node ${node} in ConfigMap ${LEDGER_HEADS_CONFIGMAP} is not a ledger head (${parsed.message}); it is left for an operator`);
          continue;
        }
        recorded = parsed.head;
      }
      const step = nextHead(recorded, seen, node, this.d.clock.now(), { keyPinned });
      if (step.kind === 'conflict') this.conflict(seen.collapse, step.code, step.message);
      if (step.kind !== 'advance') continue;
      data[node] = JSON.stringify(step.head);
      changed = true;
    }
    if (!changed) return;
    await this.d.writer.applyObject(configMapsRef, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: LEDGER_HEADS_CONFIGMAP, namespace: this.d.namespace, labels: { 'app.kubernetes.io/part-of': 'worldline', [COMPONENT_LABEL]: 'controller' } },
      data,
    });
    this.d.logger.info('ledger heads recorded', { configMap: LEDGER_HEADS_CONFIGMAP, nodes: [...batch.keys()] });
  }

  private conflict(c: Collapse, code: string, message: string): void {
    this.d.logger.warn('ledger head not recorded', { code, message });
    this.d.events.warning(c, code, message);
  }

  /** Records what is still pending, then stops. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    await this.flushing;
    await this.flush();
  }
}
