// Reconciles the Roots of this node: adopts each into the node store (its directory becomes
// generation 1 and the host path a link through live/), then keeps checking that the host path
// still routes through the store. Status (phase, generation, digest) is this agent's. Once adopted it
// carries the finalizer worldline.dev/root-release; on deletion the Worlds forking it end first, then the
// directory is released to its host path (spec.onDelete Release) or left adopted (KeepAdopted), and the
// finalizer is removed (root-deletion.ts, store/release-root.ts).
import type { Root, RootPhase, RootStatus } from '../../crds/index.js';
import type { Clock } from '../../kube/clock.js';
import { findCondition, setCondition } from '../../kube/conditions.js';
import type { EventRecorder } from '../../kube/events.js';
import type { Informer } from '../../kube/informer.js';
import type { Logger } from '../../kube/logger.js';
import type { ReconcileResult } from '../../kube/reconcile.js';
import { statusEqual, type StatusWriter } from '../../kube/status-writer.js';
import { adoptRoot } from '../store/adopt-root.js';
import type { Store } from '../store/open-store.js';
import { checkRoutingSettled } from '../store/routing.js';
import { withPayload } from '../store/payload-holds.js';
import { isStoreError } from '../store/store-errors.js';
import { bindRootObjectUid, getRoot, upsertRoot } from '../store/store-records.js';
import { beginRelease, releaseRoot } from '../store/release-root.js';
import { rootDeletion } from './root-deletion.js';
import { ROOT_RELEASE_FINALIZER, type RootFinalizers } from './root-finalizer.js';
import { cleanDigest } from '../store/store-walk.js';
import { refs } from '../api-refs.js';
import { rootRecordBinding } from './root-binding.js';

export interface RootReconcilerDeps {
  informer: Informer<Root>;
  store: Store;
  status: StatusWriter;
  events: EventRecorder;
  clock: Clock;
  nodeName: string;
  logger: Logger;
  finalizers: RootFinalizers;
  /** Ends the running Worlds that fork a Root with a code; returns the keys of those still running. */
  worlds: { endOnRoot(root: string, code: string, message: string): string[] };
  /** Why the owner's edits of a Root cannot be published now (collapses/owner-edits.ts), if they cannot. */
  ownerEditProblem?: (root: string) => { code: string; message: string } | undefined;
  /** Told of each Root adopted (the agent measures its PRIME in the background: collapses/background-compaction.ts). */
  afterAdopt?: (root: string) => void;
}

/** How soon a Root being released looks again at the Worlds it is waiting for. */
const WORLDS_ENDING_MS = 500;

/** How often a refused or broken Root is looked at again (its directory may be fixed meanwhile). */
const RETRY_MS = 30_000;
/** How often a Ready Root's routing is re-checked. */
const ROUTING_RECHECK_MS = 60_000;

type RootStatusDoc = Omit<RootStatus, 'observedGeneration'>;

const OWNED_CONDITIONS = new Set(['Adopted', 'PrimeConsistent', 'OwnerEditsPublished']);

/**
 * The status document. `consistent`: whether live PRIME still has its recorded generation's bytes — false
 * once a collapse found a foreign write (the store root's reason FOREIGN_WRITE), until a re-hash matches.
 */
function doc(root: Root, phase: RootPhase, reason: string, message: string, now: Date, extra: Partial<RootStatusDoc> = {}, consistent?: { ok: boolean; message: string }, owner?: { ok: boolean; reason: string; message: string }): RootStatusDoc {
  const prev = root.status?.conditions?.filter((c) => OWNED_CONDITIONS.has(c.type));
  const adopted = phase === 'Ready' ? 'True' : 'False';
  let conditions = setCondition(prev, { type: 'Adopted', status: adopted, reason: phase === 'Ready' ? 'Adopted' : reason, message }, root.metadata.generation, now);
  if (consistent) {
    conditions = setCondition(conditions, { type: 'PrimeConsistent', status: consistent.ok ? 'True' : 'False', reason: consistent.ok ? 'Consistent' : 'FOREIGN_WRITE', message: consistent.message }, root.metadata.generation, now);
  }
  if (owner) conditions = setCondition(conditions, { type: 'OwnerEditsPublished', status: owner.ok ? 'True' : 'False', reason: owner.reason, message: owner.message }, root.metadata.generation, now);
  return { phase, reason, message, nodeName: root.spec.nodeName, ...extra, conditions };
}

function owned(s: Root['status']): Partial<RootStatusDoc> {
  if (!s) return {};
  const { phase, generation, digest, shortDigest, nodeName, reason, message } = s;
  return { phase, generation, digest, shortDigest, nodeName, reason, message, conditions: (s.conditions ?? []).filter((c) => OWNED_CONDITIONS.has(c.type)) };
}

export function makeNodeRootReconciler(d: RootReconcilerDeps): (key: string) => Promise<ReconcileResult> {
  /**
   * Writes `next` unless it equals `shown`, what the object holds as far as this reconcile knows, and
   * returns what it holds now. `shown` starts as the informer's copy and must follow this reconcile's own
   * writes: compared with the copy read before its Adopting write, a refusal equal to the previous one was
   * skipped and the object stayed Adopting (issue 12).
   */
  const apply = async (root: Root, shown: Partial<RootStatusDoc>, next: RootStatusDoc): Promise<Partial<RootStatusDoc>> => {
    const clean = JSON.parse(JSON.stringify(next)) as RootStatusDoc;
    if (statusEqual(shown, owned(clean))) return shown;
    await d.status.applyStatus(refs.Root, { metadata: { name: root.metadata.name ?? '' }, status: clean });
    if (shown.phase !== clean.phase || shown.reason !== clean.reason) {
      if (clean.phase === 'Broken') d.events.warning(root, clean.reason ?? 'Broken', clean.message ?? '');
      else d.events.normal(root, clean.phase ?? '', clean.message ?? '');
    }
    return owned(clean);
  };

  /** Puts the release finalizer on a Root this agent serves; a refusal (an older chart's RBAC) is logged, never fatal. */
  const holdForRelease = async (root: Root, name: string): Promise<void> => {
    if ((root.metadata.finalizers ?? []).includes(ROOT_RELEASE_FINALIZER)) return;
    try {
      await d.finalizers.add(name);
    } catch (err) {
      d.logger.warn('could not add the release finalizer: deleting this Root will leave it adopted in the store', { root: name, error: (err as Error).message });
    }
  };

  const onDeletion = async (root: Root, name: string, uid: string, shown: Partial<RootStatusDoc>): Promise<ReconcileResult> => {
    const record = getRoot(d.store.db, name);
    const decision = rootDeletion({ uid, hasFinalizer: (root.metadata.finalizers ?? []).includes(ROOT_RELEASE_FINALIZER), onDelete: root.spec.onDelete }, record);
    if (decision.act === 'none') return;
    if (decision.act === 'let-go') {
      d.logger.info('root deleted; finalizer removed', { root: name, why: decision.why });
      await d.finalizers.remove(name);
      return;
    }
    const path = root.spec.path;
    const now = d.clock.now();
    const releasing = (reason: string, message: string): RootStatusDoc => doc(root, 'Releasing', reason, message, now, record ? { generation: record.generation, digest: record.digest, shortDigest: record.digest.slice(7, 19) } : {});
    await beginRelease(d.store, name); // from here nothing forks from it or commits into it (ROOT_RELEASING)
    const running = d.worlds.endOnRoot(name, 'ROOT_RELEASING', `Root ${name} is being deleted and its directory released to ${path}; the World was ended first`);
    if (running.length > 0) {
      await apply(root, shown, releasing('ROOT_RELEASING', `ending the Worlds that fork it before releasing ${path}: ${running.join(', ')}`));
      return { requeueAfterMs: WORLDS_ENDING_MS };
    }
    shown = await apply(root, shown, releasing('ROOT_RELEASING', `releasing PRIME to ${path} as a plain directory`));
    try {
      const t0 = performance.now();
      const released = await releaseRoot(d.store, name);
      d.logger.info('root released', { root: name, path, generation: released.generation, ms: Math.round(performance.now() - t0) });
      await apply(root, shown, releasing('ROOT_RELEASED', released.message ?? `released to ${path}`));
    } catch (err) {
      if (!isStoreError(err)) throw err;
      d.logger.warn('root release refused; retried', { root: name, code: err.code, error: err.message });
      await apply(root, shown, releasing(err.code, err.message));
      return { requeueAfterMs: RETRY_MS };
    }
    await d.finalizers.remove(name);
    return;
  };

  return async (key) => {
    const root = d.informer.get(key);
    const name = root?.metadata.name;
    const uid = root?.metadata.uid;
    if (!root || !name || !uid || root.spec.nodeName !== d.nodeName) return;
    const path = root.spec.path;
    const now = d.clock.now();
    let shown = owned(root.status);
    if (root.metadata.deletionTimestamp) return onDeletion(root, name, uid, shown);

    const accepted = findCondition(root.status?.conditions, 'Accepted');
    if (accepted?.status === 'False') {
      await apply(root, shown, doc(root, 'Broken', 'ROOT_PATH_CONFLICT', `not adopted: ${accepted.message}`, now));
      return { requeueAfterMs: RETRY_MS };
    }

    const readyDoc = async (): Promise<RootStatusDoc> => {
      const routing = await checkRoutingSettled(d.store, name);
      let r = routing.root;
      const ids = { generation: r.generation, digest: r.digest, shortDigest: r.digest.slice(7, 19) };
      if (r.reason === 'FOREIGN_WRITE') {
        // Marked by a collapse: re-hash PRIME; the mark is lifted once its bytes are the recorded generation's again.
        if ((await withPayload(d.store, routing.generationId, (payload) => cleanDigest(payload, d.store.dir))) === r.digest) {
          upsertRoot(d.store.db, { ...r, reason: null, message: null }, now);
          r = getRoot(d.store.db, name)!;
          d.logger.info('foreign write mark lifted: PRIME re-hashes to its recorded generation', { root: name });
        } else {
          const message = r.message ?? `PRIME of ${name} was changed outside any collapse`;
          return doc(root, 'Ready', 'FOREIGN_WRITE', message, now, ids, { ok: false, message });
        }
      }
      const consistent = root.status?.conditions?.some((c) => c.type === 'PrimeConsistent') ? { ok: true, message: `PRIME re-hashes to generation ${r.generation}` } : undefined;
      // Shown once an owner's edit could not be published, and from then on.
      const problem = d.ownerEditProblem?.(name);
      const owner = problem
        ? { ok: false, reason: problem.code, message: problem.message }
        : root.status?.conditions?.some((c) => c.type === 'OwnerEditsPublished')
          ? { ok: true, reason: 'Published', message: `every edit made through ${path} is published (PRIME is generation ${r.generation})` }
          : undefined;
      return doc(root, 'Ready', 'READY', `PRIME is generation ${r.generation} (${r.digest}); ${path} routes through the store`, now, ids, consistent, owner);
    };

    try {
      const binding = rootRecordBinding(getRoot(d.store.db, name), { name, uid, path });
      if (binding.act === 'refuse') {
        // Another Root's record: nothing in the store or at either path is touched.
        await apply(root, shown, doc(root, 'Broken', binding.code, binding.message, now));
        return { requeueAfterMs: RETRY_MS };
      }
      if (binding.act === 'bind' && bindRootObjectUid(d.store.db, name, binding.objectUid, now)) {
        d.logger.info('root record from before uids were kept now bound to this Root object', { root: name, uid, path });
      }
      if (binding.act === 'adopt') {
        // A refused Root is retried (RETRY_MS, and on every update of the object) without announcing
        // Adopting again: that write is itself an update, which would wake this Root again and flip it
        // Adopting/Broken, one tree walk per flip, for as long as the refusal holds (issue 12).
        if (shown.phase !== 'Broken') shown = await apply(root, shown, doc(root, 'Adopting', 'ADOPTING', `adopting ${path} into the node store`, now));
        const t0 = performance.now();
        await adoptRoot(d.store, { name, hostPath: path, objectUid: uid });
        d.logger.info('root adopted', { root: name, path, uid, ms: Math.round(performance.now() - t0) });
        d.afterAdopt?.(name);
      }
      await apply(root, shown, await readyDoc());
      await holdForRelease(root, name);
      return { requeueAfterMs: ROUTING_RECHECK_MS };
    } catch (err) {
      if (!isStoreError(err)) throw err;
      const existing = getRoot(d.store.db, name);
      await apply(root, shown, doc(root, 'Broken', err.code, err.message, now, existing ? { generation: existing.generation, digest: existing.digest, shortDigest: existing.digest.slice(7, 19) } : {}));
      return { requeueAfterMs: RETRY_MS };
    }
  };
}
