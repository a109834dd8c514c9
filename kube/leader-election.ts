// Leader election on a coordination.k8s.io/v1 Lease with resourceVersion optimistic concurrency.
// A lease is free when it is missing, has no holder, or renewTime + leaseDurationSeconds < now.
// Note: expiry compares the holder's renewTime with our clock, so clocks must agree to well within
// leaseDurationSeconds (NTP); client-go avoids this by timing observed changes locally.
import type { KubeAccess } from './kube-access.js';
import { isConflict, isNotFound } from './api-error.js';
import { collectionPath, objectPath } from './api-paths.js';
import { jittered } from './backoff.js';
import { systemClock, type Clock } from './clock.js';
import { formatMicroTime } from './events.js';
import { httpClientFor, type KubeHttpClient } from './http.js';
import { nullLogger, type Logger } from './logger.js';
import { leasesRef } from './resource-ref.js';

export interface LeaderElectorOptions {
  kubeConfig: KubeAccess;
  namespace: string;
  name: string;
  identity: string;
  leaseDurationSeconds?: number;
  renewDeadlineSeconds?: number;
  retryPeriodSeconds?: number;
  clock?: Clock;
  logger?: Logger;
  /** Release the lease on stop() so a standby takes over at once; default true. */
  releaseOnStop?: boolean;
}

export interface LeaderCallbacks {
  /** Called on becoming leader; the signal aborts when leadership is lost or stop() is called. */
  onStartedLeading: (signal: AbortSignal) => void | Promise<void>;
  onStoppedLeading: () => void;
}

interface Lease {
  apiVersion?: string;
  kind?: string;
  metadata: { name: string; namespace: string; resourceVersion?: string };
  spec?: {
    holderIdentity?: string | null;
    leaseDurationSeconds?: number;
    acquireTime?: string;
    renewTime?: string;
    leaseTransitions?: number;
  };
}

export class LeaderElector {
  private readonly http: KubeHttpClient;
  private readonly clock: Clock;
  private readonly log: Logger;
  private readonly leaseDuration: number;
  private readonly renewDeadline: number;
  private readonly retryPeriod: number;
  private readonly stopper = new AbortController();
  private leading = false;
  private lease: Lease | undefined;
  private running: Promise<void> | undefined;

  constructor(private readonly opts: LeaderElectorOptions) {
    this.http = httpClientFor(opts.kubeConfig);
    this.clock = opts.clock ?? systemClock;
    this.log = (opts.logger ?? nullLogger).child({ lease: `${opts.namespace}/${opts.name}`, identity: opts.identity });
    this.leaseDuration = opts.leaseDurationSeconds ?? 15;
    this.renewDeadline = opts.renewDeadlineSeconds ?? 10;
    this.retryPeriod = opts.retryPeriodSeconds ?? 2;
    if (!(this.leaseDuration > this.renewDeadline && this.renewDeadline > this.retryPeriod && this.retryPeriod > 0)) {
      throw new Error('leader election: need leaseDurationSeconds > renewDeadlineSeconds > retryPeriodSeconds > 0');
    }
  }

  isLeader(): boolean {
    return this.leading;
  }

  /** Acquires, leads, and re-acquires after losing the lease, until stop(). */
  run(callbacks: LeaderCallbacks): Promise<void> {
    if (this.running) throw new Error('leader elector already running');
    this.running = this.loop(callbacks);
    return this.running;
  }

  /** Stops; when leading, aborts the leader's work, calls onStoppedLeading and releases the lease. */
  async stop(): Promise<void> {
    this.stopper.abort();
    await this.running;
  }

  private async loop(cb: LeaderCallbacks): Promise<void> {
    const stop = this.stopper.signal;
    while (!stop.aborted) {
      if (!(await this.tryAcquireOrRenew())) {
        await this.clock.sleep(jittered(this.retryPeriod * 1000, 0.2), stop);
        continue;
      }
      this.leading = true;
      this.log.info('became leader');
      const leadership = new AbortController();
      const work = Promise.resolve()
        .then(() => cb.onStartedLeading(leadership.signal))
        .catch((err: unknown) => this.log.error('onStartedLeading failed', { err }));
      await this.renewLoop(stop);
      this.leading = false;
      leadership.abort();
      // Let the leader's work wind down before anyone else can take over (bounded by the renew deadline).
      const grace = new AbortController();
      await Promise.race([work, this.clock.sleep(this.renewDeadline * 1000, grace.signal)]);
      grace.abort();
      try {
        cb.onStoppedLeading();
      } catch (err) {
        this.log.error('onStoppedLeading failed', { err });
      }
      this.log.info('stopped leading', { stopping: stop.aborted });
    }
    if (this.lease?.spec?.holderIdentity === this.opts.identity && this.opts.releaseOnStop !== false) await this.release();
  }

  /** Renews every retryPeriod; returns when stopped or when renewal failed past the renew deadline. */
  private async renewLoop(stop: AbortSignal): Promise<void> {
    let lastRenew = this.clock.now().getTime();
    while (!stop.aborted) {
      await this.clock.sleep(this.retryPeriod * 1000, stop);
      if (stop.aborted) return;
      if (await this.tryAcquireOrRenew()) {
        lastRenew = this.clock.now().getTime();
        continue;
      }
      const holder = this.lease?.spec?.holderIdentity;
      if (holder && holder !== this.opts.identity) {
        this.log.warn('lease taken by another holder', { holder });
        return;
      }
      if (this.clock.now().getTime() - lastRenew > this.renewDeadline * 1000) {
        this.log.warn('failed to renew lease within the renew deadline', { renewDeadlineSeconds: this.renewDeadline });
        return;
      }
    }
  }

  /** One attempt; true when we hold the lease afterwards. Never throws. */
  private async tryAcquireOrRenew(): Promise<boolean> {
    const { namespace, name, identity } = this.opts;
    const now = this.clock.now();
    // A third of the renew deadline per request: one request that gets no answer (an overloaded API
    // server, a dead connection) leaves time for two more attempts before the lease is given up.
    const timeoutMs = Math.max(500, Math.floor((this.renewDeadline * 1000) / 3));
    try {
      // Renewing the lease we hold: one PUT from the copy we wrote last, whose resourceVersion proves
      // nobody wrote it since. A conflict drops the copy, and the next attempt reads the lease first.
      const held = this.lease;
      if (held?.spec?.holderIdentity === identity && held.metadata.resourceVersion !== undefined) {
        const renewed: Lease = { ...held, spec: { ...held.spec, leaseDurationSeconds: this.leaseDuration, renewTime: formatMicroTime(now) } };
        try {
          this.lease = await this.http.request<Lease>({ method: 'PUT', path: objectPath(leasesRef, name, namespace), body: renewed, timeoutMs });
          return true;
        } catch (err) {
          if (isConflict(err)) this.lease = undefined;
          throw err;
        }
      }
      let current: Lease;
      try {
        current = await this.http.request<Lease>({ path: objectPath(leasesRef, name, namespace), timeoutMs });
      } catch (err) {
        if (!isNotFound(err)) throw err;
        const fresh: Lease = {
          apiVersion: 'coordination.k8s.io/v1',
          kind: 'Lease',
          metadata: { name, namespace },
          spec: {
            holderIdentity: identity,
            leaseDurationSeconds: this.leaseDuration,
            acquireTime: formatMicroTime(now),
            renewTime: formatMicroTime(now),
            leaseTransitions: 0,
          },
        };
        this.lease = await this.http.request<Lease>({ method: 'POST', path: collectionPath(leasesRef, namespace), body: fresh, timeoutMs });
        return true;
      }
      this.lease = current;
      const spec = current.spec ?? {};
      const holder = spec.holderIdentity ?? '';
      const mine = holder === identity;
      if (!mine && holder !== '' && !this.expired(spec, now)) return false;
      const next: Lease = {
        ...current,
        spec: {
          ...spec,
          holderIdentity: identity,
          leaseDurationSeconds: this.leaseDuration,
          renewTime: formatMicroTime(now),
          acquireTime: mine ? spec.acquireTime : formatMicroTime(now),
          leaseTransitions: mine ? (spec.leaseTransitions ?? 0) : (spec.leaseTransitions ?? 0) + 1,
        },
      };
      // PUT carries metadata.resourceVersion: a concurrent writer makes this fail with 409.
      this.lease = await this.http.request<Lease>({ method: 'PUT', path: objectPath(leasesRef, name, namespace), body: next, timeoutMs });
      return true;
    } catch (err) {
      if (isConflict(err)) this.log.debug('lost lease race', { err: (err as Error).message });
      else this.log.warn('lease request failed', { err });
      return false;
    }
  }

  private expired(spec: NonNullable<Lease['spec']>, now: Date): boolean {
    const renew = Date.parse(spec.renewTime ?? spec.acquireTime ?? '');
    if (Number.isNaN(renew)) return true;
    return renew + (spec.leaseDurationSeconds ?? this.leaseDuration) * 1000 < now.getTime();
  }

  /** Graceful hand-over: empty holder and a 1s duration, so a standby acquires at its next retry. */
  private async release(): Promise<void> {
    const lease = this.lease;
    if (!lease) return;
    const now = formatMicroTime(this.clock.now());
    const next: Lease = { ...lease, spec: { ...lease.spec, holderIdentity: null, leaseDurationSeconds: 1, renewTime: now, acquireTime: now } };
    try {
      this.lease = await this.http.request<Lease>({
        method: 'PUT',
        path: objectPath(leasesRef, this.opts.name, this.opts.namespace),
        body: next,
        timeoutMs: this.renewDeadline * 1000,
      });
      this.log.info('released lease');
    } catch (err) {
      this.log.warn('releasing lease failed; standby takes over after expiry', { err });
    }
  }
}
