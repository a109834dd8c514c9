// The soak's own client for its Worlds: one watch (the project's informer, kube/informer.ts) over the
// namespace instead of a kubectl process per poll, creates and deletes through the API, and the time each
// World first showed each milestone of its life (as the watch delivered it), for the per-phase table.
// A kubectl process costs about as much CPU as a World's whole run on the node; polling with four of them
// took half the CPU of a two-core host away from the controller, the node-agent and the API server.
import { Informer } from '../../kube/informer.js';
import { isNotFound } from '../../kube/api-error.js';
import { collectionPath, objectPath } from '../../kube/api-paths.js';
import { httpClientFor, type KubeHttpClient } from '../../kube/http.js';
import { loadKubeAccess } from '../../kube/kube-access.js';
import type { ResourceRef } from '../../kube/resource-ref.js';

type Obj = Record<string, any>;

const WORLDS: ResourceRef = { group: 'worldline.dev', version: 'v1alpha1', plural: 'worlds', kind: 'World', namespaced: true };

/** A lifecycle's milestones in order; each is the first time the watch showed it (ms after the create request). */
export const MILESTONES = ['created', 'accepted', 'admitted', 'isolated', 'final', 'gone'] as const;
export type Milestone = (typeof MILESTONES)[number];

const isTrue = (w: Obj, type: string): boolean => (w.status?.conditions ?? []).some((c: Obj) => c.type === type && c.status === 'True');

/** What each milestone means, read off one version of the World (`created` and `gone` are set by the client). */
const SHOWS: Partial<Record<Milestone, (w: Obj, final: string[]) => boolean>> = {
  accepted: (w) => isTrue(w, 'Accepted'),
  admitted: (w) => isTrue(w, 'Admitted'),
  isolated: (w) => (w.status?.conditions ?? []).some((c: Obj) => c.type === 'Isolated'),
  final: (w, final) => final.includes(w.status?.phase),
};

interface Tracked {
  start: number;
  at: Partial<Record<Milestone, number>>;
  /** Reasons the node-agent showed the World waiting for admission with (Pending, Admitted False: no room, for one). */
  waited: Set<string>;
  /** Waiters for a version satisfying a predicate, or for the object's deletion (`pred` undefined). */
  waiters: { pred?: (w: Obj) => boolean; resolve: (w: Obj) => void }[];
}

export class SoakWorlds {
  private readonly tracked = new Map<string, Tracked>();
  /** How many Worlds waited for admission, by reason. */
  readonly waits: Record<string, number> = {};

  private constructor(private readonly informer: Informer<Obj>, private readonly http: KubeHttpClient, private readonly namespace: string, private readonly final: string[]) {
    const seen = (w: Obj): void => this.seen(w);
    informer.onAdd(seen);
    informer.onUpdate(seen);
    informer.onDelete((w) => this.gone(w));
  }

  /** Starts the watch on `namespace` and resolves once its first list is in. */
  static async open(kubeconfig: string, namespace: string, finalPhases: string[]): Promise<SoakWorlds> {
    const kc = await loadKubeAccess({ kubeconfig });
    const informer = new Informer<Obj>({ kubeConfig: kc, resource: WORLDS, namespace, stripManagedFields: true, backoff: { initialMs: 50, maxMs: 1000 } });
    const worlds = new SoakWorlds(informer, httpClientFor(kc), namespace, finalPhases);
    await informer.start();
    return worlds;
  }

  stop(): void {
    this.informer.stop();
  }

  /** Creates the World in `manifest` (JSON) and starts its milestones. */
  async create(name: string, manifest: string): Promise<void> {
    const t: Tracked = { start: Date.now(), at: {}, waited: new Set(), waiters: [] };
    this.tracked.set(name, t);
    await this.http.request({ method: 'POST', path: collectionPath(WORLDS, this.namespace), body: manifest });
    t.at.created ??= Date.now() - t.start;
  }

  /** The first version of `name` (cached or arriving) for which `pred` holds; throws naming the last version seen after `timeoutMs`. */
  until(name: string, pred: (w: Obj) => boolean, timeoutMs: number, what: string): Promise<Obj> {
    return this.wait(name, pred, timeoutMs, what);
  }

  /** Deletes the World and resolves once the watch reports it gone (every finalizer released). */
  async deleteAndWait(name: string, timeoutMs: number): Promise<void> {
    const gone = this.wait(name, undefined, timeoutMs, `World ${this.namespace}/${name} gone`);
    try {
      await this.http.request({ method: 'DELETE', path: objectPath(WORLDS, name, this.namespace) });
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
    await gone;
  }

  /** The milestones of `name` (ms after its create request), and forgets it. */
  take(name: string): Partial<Record<Milestone, number>> {
    const at = this.tracked.get(name)?.at ?? {};
    this.tracked.delete(name);
    return at;
  }

  private wait(name: string, pred: ((w: Obj) => boolean) | undefined, timeoutMs: number, what: string): Promise<Obj> {
    const t = this.tracked.get(name);
    if (!t) return Promise.reject(new Error(`${name} is not a World this soak created`));
    const cached = this.informer.get(`${this.namespace}/${name}`);
    if (pred && cached && pred(cached)) return Promise.resolve(cached);
    return new Promise<Obj>((resolve, reject) => {
      const waiter = {
        ...(pred ? { pred } : {}),
        resolve: (w: Obj) => {
          clearTimeout(timer);
          resolve(w);
        },
      };
      const timer = setTimeout(() => {
        t.waiters.splice(t.waiters.indexOf(waiter), 1);
        const last = this.informer.get(`${this.namespace}/${name}`);
        reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}; the World was at ${last ? `phase ${String(last.status?.phase)}, reason ${String(last.status?.reason)}: ${String(last.status?.message)}` : 'no World'}`));
      }, timeoutMs);
      t.waiters.push(waiter);
    });
  }

  private seen(w: Obj): void {
    const t = this.tracked.get(w.metadata?.name);
    if (!t) return;
    const now = Date.now() - t.start;
    for (const [m, shows] of Object.entries(SHOWS) as [Milestone, (w: Obj, f: string[]) => boolean][]) if (t.at[m] === undefined && shows(w, this.final)) t.at[m] = now;
    const admitted = (w.status?.conditions ?? []).find((c: Obj) => c.type === 'Admitted');
    const reason = w.status?.phase === 'Pending' && admitted?.status === 'False' ? admitted.reason : undefined;
    if (typeof reason === 'string' && !t.waited.has(reason)) {
      t.waited.add(reason);
      this.waits[reason] = (this.waits[reason] ?? 0) + 1;
    }
    for (const x of [...t.waiters]) {
      if (x.pred?.(w)) {
        t.waiters.splice(t.waiters.indexOf(x), 1);
        x.resolve(w);
      }
    }
  }

  private gone(w: Obj): void {
    const t = this.tracked.get(w.metadata?.name);
    if (!t) return;
    t.at.gone ??= Date.now() - t.start;
    for (const x of t.waiters.filter((x) => !x.pred)) {
      t.waiters.splice(t.waiters.indexOf(x), 1);
      x.resolve(w);
    }
  }
}

/** Per phase (between consecutive milestones), the median, 90th percentile and maximum in ms over the lifecycles. */
export function phaseTable(lifecycles: Partial<Record<Milestone, number>>[]): { phase: string; n: number; medianMs: number; p90Ms: number; maxMs: number }[] {
  const rows = [];
  for (let i = 0; i < MILESTONES.length; i++) {
    const to = MILESTONES[i]!;
    const from = i === 0 ? undefined : MILESTONES[i - 1]!;
    const spans = lifecycles.map((l) => (l[to] ?? NaN) - (from === undefined ? 0 : (l[from] ?? NaN))).filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
    if (spans.length === 0) continue;
    const q = (p: number): number => spans[Math.min(spans.length - 1, Math.floor(p * spans.length))]!;
    rows.push({ phase: `${from ?? 'request'} → ${to}`, n: spans.length, medianMs: q(0.5), p90Ms: q(0.9), maxMs: spans.at(-1)! });
  }
  const totals = lifecycles.map((l) => l.gone).filter((x): x is number => x !== undefined).sort((a, b) => a - b);
  if (totals.length > 0) rows.push({ phase: 'request → gone', n: totals.length, medianMs: totals[Math.floor(0.5 * totals.length)]!, p90Ms: totals[Math.min(totals.length - 1, Math.floor(0.9 * totals.length))]!, maxMs: totals.at(-1)! });
  return rows;
}
