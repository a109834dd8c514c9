// The node-agent's heartbeat: a Lease per node in the worldline namespace, renewed while the agent
// runs. The controller counts a node as served while the Lease's renewTime + duration lies ahead.
import type { KubeConfig } from '@kubernetes/client-node';
import { isAlreadyExists, isNotFound } from '../kube/api-error.js';
import { collectionPath, objectPath } from '../kube/api-paths.js';
import type { Clock } from '../kube/clock.js';
import { formatMicroTime } from '../kube/events.js';
import { httpClientFor, type KubeHttpClient } from '../kube/http.js';
import type { Logger } from '../kube/logger.js';
import { leasesRef } from '../kube/resource-ref.js';
import { COMPONENT_LABEL, NODE_LABEL, heartbeatLeaseName } from '../crds/labels.js';

export interface HeartbeatOptions {
  kubeConfig: KubeConfig;
  namespace: string;
  nodeName: string;
  identity: string;
  leaseDurationSeconds?: number;
  clock: Clock;
  logger: Logger;
  /** Annotations the Lease carries (the view server's address), set once the agent knows them. */
  annotations?: () => Record<string, string>;
}

export class Heartbeat {
  private readonly http: KubeHttpClient;
  private readonly abort = new AbortController();
  private loop: Promise<void> | undefined;

  constructor(private readonly o: HeartbeatOptions) {
    this.http = httpClientFor(o.kubeConfig);
  }

  private body(): Record<string, unknown> {
    return {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: {
        name: heartbeatLeaseName(this.o.nodeName),
        namespace: this.o.namespace,
        labels: { [COMPONENT_LABEL]: 'node-agent', [NODE_LABEL]: this.o.nodeName },
        ...(this.o.annotations ? { annotations: this.o.annotations() } : {}),
      },
      spec: {
        holderIdentity: this.o.identity,
        leaseDurationSeconds: this.o.leaseDurationSeconds ?? 40,
        renewTime: formatMicroTime(this.o.clock.now()),
      },
    };
  }

  /** Creates or renews the Lease once. */
  async beat(): Promise<void> {
    const name = heartbeatLeaseName(this.o.nodeName);
    try {
      const cur = await this.http.request<{ metadata: { resourceVersion: string } }>({ path: objectPath(leasesRef, name, this.o.namespace) });
      const next = this.body();
      (next.metadata as Record<string, unknown>).resourceVersion = cur.metadata.resourceVersion;
      await this.http.request({ method: 'PUT', path: objectPath(leasesRef, name, this.o.namespace), body: next });
    } catch (err) {
      if (!isNotFound(err)) throw err;
      try {
        await this.http.request({ method: 'POST', path: collectionPath(leasesRef, this.o.namespace), body: this.body() });
      } catch (e) {
        if (!isAlreadyExists(e)) throw e;
      }
    }
  }

  /** Beats now, then every quarter of the lease duration until stop(). */
  async start(): Promise<void> {
    await this.beat();
    const every = ((this.o.leaseDurationSeconds ?? 40) * 1000) / 4;
    this.loop = (async () => {
      while (!this.abort.signal.aborted) {
        await this.o.clock.sleep(every, this.abort.signal);
        if (this.abort.signal.aborted) break;
        try {
          await this.beat();
        } catch (err) {
          this.o.logger.warn('heartbeat renewal failed', { error: (err as Error).message });
        }
      }
    })();
  }

  /** Stops renewing and deletes the Lease, so the controller sees at once that the node is not served. */
  async stop(): Promise<void> {
    this.abort.abort();
    await this.loop;
    try {
      await this.http.request({ method: 'DELETE', path: objectPath(leasesRef, heartbeatLeaseName(this.o.nodeName), this.o.namespace) });
    } catch (err) {
      if (!isNotFound(err)) this.o.logger.warn('could not delete heartbeat lease', { error: (err as Error).message });
    }
  }
}
