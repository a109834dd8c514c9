// The Collapses of this node as one unit for main.ts: the receipt ledger, an informer of the Collapses
// bound to this node (parsed at the edge) and a one-worker runner driving the collapse reconciler.
import type { KubeConfig } from '@kubernetes/client-node';
import type { CheckResources } from '../../core/evidence/requirement.js';
import type { Collapse, Policy, World } from '../../crds/index.js';
import type { Clock } from '../../kube/clock.js';
import type { EventRecorder } from '../../kube/events.js';
import type { Logger } from '../../kube/logger.js';
import { ControllerRunner, type ReconcileMetrics } from '../../kube/reconcile.js';
import { Informer } from '../../kube/informer.js';
import { kindParsers } from '../../kube/kind-parsers.js';
import type { RefusalWriter } from '../../kube/refusal-writer.js';
import { objectKey } from '../../kube/resource-ref.js';
import type { StatusWriter } from '../../kube/status-writer.js';
import { collapseStepHooks } from './step-hooks.js';
import { openCollapseLedger } from '../receipts/open-ledger.js';
import { ReceiptLedgerError } from '../receipts/errors.js';
import { refs } from '../api-refs.js';
import type { Store } from '../store/open-store.js';
import type { AgentMetrics } from '../metrics.js';
import type { GateRootView } from '../roots/root-collapse-gate.js';
import { makeNodeCollapseReconciler, type CollapsePolicyView } from './collapse-reconciler.js';
import type { GrantStore } from '../evidence/grant-store.js';
import type { ControllerGrants } from '../evidence/controller-grant.js';
import type { StatementSigner } from '../evidence/statement-signer.js';

export interface NodeCollapsesOptions {
  kubeConfig: KubeConfig;
  store: Store;
  worlds: Pick<Informer<World>, 'get' | 'hasSynced'>;
  /** This node's Root objects by name: a Collapse into a Root not Ready is refused (roots/root-collapse-gate.ts). */
  roots: (name: string) => GateRootView | undefined;
  policies: { list(): readonly CollapsePolicyView[]; hasSynced(): boolean; onAdd(fn: (p: Policy) => void): void; onUpdate(fn: (p: Policy) => void): void };
  status: StatusWriter;
  refusals: RefusalWriter;
  events: EventRecorder;
  clock: Clock;
  nodeName: string;
  logger: Logger;
  metrics?: ReconcileMetrics;
  requeueRoot: (name: string) => void;
  requeueWorld: (key: string) => void;
  agentMetrics?: AgentMetrics;
  /** The resources a check runs with on this node (admission-authority.ts RunAdmission.checkResources). */
  checkResources: () => CheckResources | null;
  /** Where the ledger is mirrored (--receipts-export). */
  receiptsExport?: string;
  /** The node's grant store, and whether a grant id is revoked. */
  grants: () => GrantStore;
  grantRevoked: (id: string) => boolean;
  /** Signs each receipt as a statement too. */
  statements?: StatementSigner;
  /** The controller's grants (when the trust policy pins a grant signer for this node). */
  controllerGrants?: ControllerGrants;
  /** How long a Collapse holds its progress statuses (--collapse-status-hold-ms). */
  progressHoldMs: number;
}

/**
 * Everything the agent needs for Collapses, as one unit for main.ts: the receipt ledger, an informer of
 * the Collapses bound to this node and a one-worker runner. start() waits until the World and Policy
 * informers have listed (a Collapse is never judged against a World the agent has not seen yet).
 */
export function startNodeCollapses(o: NodeCollapsesOptions): { start(): Promise<void>; stop(): Promise<void>; wakeRebasing(): void } {
  let opened: ReturnType<typeof openCollapseLedger>;
  try {
    opened = openCollapseLedger(o.store, o.receiptsExport ? { exportPath: o.receiptsExport } : {});
  } catch (err) {
    if (!(err instanceof ReceiptLedgerError)) throw err;
    // The ledger failed verification: no Collapse is served (none could be receipted), the rest of the agent
    // runs, and worldline_receipt_ledger_verified 0 raises WorldlineReceiptLedgerVerificationFailed.
    o.agentMetrics?.ledgerVerified(false);
    o.logger.error('the receipt ledger failed verification; no Collapse is served on this node until it is repaired and the agent restarted', { code: err.code, error: err.message });
    return { start: () => Promise.resolve(), stop: () => Promise.resolve(), wakeRebasing: () => undefined };
  }
  o.agentMetrics?.ledgerVerified(true);
  if (opened.ledger.tornTailCut > 0) {
    o.logger.warn('the receipt ledger ended with an unfinished line (an append a crash interrupted, never acknowledged); it was cut off, and the store\'s rows confirm no acknowledged receipt was in it', { ledger: opened.path, bytes: opened.ledger.tornTailCut });
  }
  o.logger.info('collapse receipts ledger opened', { ledger: opened.path, publicKey: opened.publicKeyPath, keyId: opened.ledger.keyId });
  const informer = new Informer<Collapse>({ kubeConfig: o.kubeConfig, resource: refs.Collapse, parse: kindParsers.Collapse, fieldSelector: `status.nodeName=${o.nodeName}`, logger: o.logger, clock: o.clock });
  const reconcile = makeNodeCollapseReconciler({
    informer,
    refusals: o.refusals,
    world: (key) => o.worlds.get(key),
    root: o.roots,
    policies: () => o.policies.list(),
    store: o.store,
    ledger: opened.ledger,
    status: o.status,
    events: o.events,
    clock: o.clock,
    nodeName: o.nodeName,
    logger: o.logger,
    requeueRoot: o.requeueRoot,
    requeueWorld: o.requeueWorld,
    requeueCollapse: (key) => runner.enqueue(key),
    checkResources: o.checkResources,
    grants: o.grants,
    grantRevoked: o.grantRevoked,
    ...(o.statements ? { statements: o.statements } : {}),
    ...(o.controllerGrants ? { controllerGrants: o.controllerGrants } : {}),
    hooks: collapseStepHooks(),
    progressHoldMs: o.progressHoldMs,
    ...(o.agentMetrics ? { agentMetrics: o.agentMetrics } : {}),
  });
  const runner = new ControllerRunner({ kind: 'NodeCollapse', reconcile, workers: 1, ...(o.metrics ? { metrics: o.metrics } : {}), logger: o.logger });
  const enqueue = (c: Collapse): void => runner.enqueue(objectKey(c));
  informer.onAdd(enqueue);
  informer.onUpdate(enqueue);
  informer.onRefuse((r) => runner.enqueue(r.key));
  // Which Policy generation the next Collapse is judged under (operators and tests read it: a Collapse created
  // after this line for a generation is judged with that generation or a later one).
  const observed = (p: Policy): void => o.logger.info('collapse policy view updated', { policy: p.metadata.name, generation: p.metadata.generation, resourceVersion: p.metadata.resourceVersion });
  o.policies.onAdd(observed);
  o.policies.onUpdate(observed);
  let stopped = false;
  return {
    start: async () => {
      while (!stopped && !(o.worlds.hasSynced() && o.policies.hasSynced())) await new Promise((r) => setTimeout(r, 100));
      if (stopped) return;
      await informer.start();
      runner.start();
    },
    // A check finished: the Collapses waiting for the checks of a rebased candidate look again now.
    wakeRebasing: () => {
      for (const c of informer.list()) if (c.status?.phase === 'Rebasing') runner.enqueue(objectKey(c));
    },
    stop: async () => {
      stopped = true;
      informer.stop();
      await runner.stop();
      opened.ledger.close();
    },
  };
}
