// Publishes this node's receipt public key as the ConfigMap worldline-receipts-<node> in the agent's
// namespace (data: public-key.pem, the SPKI PEM of <store>/keys; key-id; node), so that whoever may read
// it can fetch the key that verifies the node's receipts without access to the node. Applied (server-side
// apply, field manager worldline-node-agent) at agent start and again every `refreshMs` (default 10
// minutes) while the agent runs, so a deleted or edited ConfigMap is restored within that time. A failure
// is logged and retried with backoff, and never stops the agent.
//
// The ConfigMap helps find the key; it does not vouch for it: anyone who can write ConfigMaps in the
// namespace can replace it. A verifier that has seen the key once should pin its key-id.
import type { KubeConfig } from '@kubernetes/client-node';
import { COMPONENT_LABEL, NODE_LABEL } from '../../crds/labels.js';
import { objectPath } from '../../kube/api-paths.js';
import { Backoff, type BackoffOptions } from '../../kube/backoff.js';
import type { Clock } from '../../kube/clock.js';
import { httpClientFor } from '../../kube/http.js';
import type { Logger } from '../../kube/logger.js';
import { configMapsRef } from '../../kube/resource-ref.js';
import { APPLY_PATCH_CONTENT_TYPE } from '../../kube/status-writer.js';
import { FIELD_MANAGER } from '../api-refs.js';
import { loadOrCreateSigningKey } from './signing-key.js';

/** The ConfigMap's data keys. */
export const PUBLIC_KEY_DATA = { pem: 'public-key.pem', keyId: 'key-id', node: 'node' } as const;

export function receiptsConfigMapName(nodeName: string): string {
  return `worldline-receipts-${nodeName}`.slice(0, 253).replace(/[^a-z0-9]+$/, '');
}

/** The applied object: exactly the fields this agent owns on the ConfigMap. */
export function publicKeyConfigMap(namespace: string, nodeName: string, key: { publicKeyPem: string; keyId: string }): Record<string, unknown> {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: {
      name: receiptsConfigMapName(nodeName),
      namespace,
      labels: { [COMPONENT_LABEL]: 'node-agent', [NODE_LABEL]: nodeName, 'app.kubernetes.io/part-of': 'worldline' },
    },
    data: { [PUBLIC_KEY_DATA.pem]: key.publicKeyPem, [PUBLIC_KEY_DATA.keyId]: key.keyId, [PUBLIC_KEY_DATA.node]: nodeName },
  };
}

export interface PublishPublicKeyOptions {
  kubeConfig: KubeConfig;
  namespace: string;
  nodeName: string;
  /** The signing key's directory (receiptPaths(store).keyDir); the key is made there if there is none yet. */
  keyDir: string;
  clock: Clock;
  logger: Logger;
  /** Delays between failed attempts; default 1 s doubling up to 5 minutes. */
  backoff?: BackoffOptions;
  /** Time between re-applies after a success; default 10 minutes. */
  refreshMs?: number;
}

export const DEFAULT_PUBLIC_KEY_REFRESH_MS = 10 * 60_000;

export interface PublicKeyPublisher {
  /** Settles when the key is first published (true) or the publisher was stopped first (false); never rejects. */
  readonly done: Promise<boolean>;
  stop(): Promise<void>;
}

/** Starts publishing in the background (see the header). */
export function publishReceiptsPublicKey(o: PublishPublicKeyOptions): PublicKeyPublisher {
  const abort = new AbortController();
  const http = httpClientFor(o.kubeConfig);
  const name = receiptsConfigMapName(o.nodeName);
  const log = o.logger.child({ configMap: `${o.namespace}/${name}` });
  const backoff = new Backoff(o.backoff ?? { initialMs: 1000, maxMs: 5 * 60_000 });
  let firstPublished: (ok: boolean) => void = () => undefined;
  const done = new Promise<boolean>((resolve) => (firstPublished = resolve));
  const loop = (async (): Promise<void> => {
    let published = 0;
    while (!abort.signal.aborted) {
      try {
        const key = loadOrCreateSigningKey(o.keyDir);
        await http.request({
          method: 'PATCH',
          path: objectPath(configMapsRef, name, o.namespace),
          query: { fieldManager: FIELD_MANAGER, force: true },
          body: JSON.stringify(publicKeyConfigMap(o.namespace, o.nodeName, key)),
          contentType: APPLY_PATCH_CONTENT_TYPE,
          signal: abort.signal,
        });
        backoff.reset();
        if (published++ === 0) {
          log.info('receipts public key published', { keyId: key.keyId });
          firstPublished(true);
        } else {
          log.debug('receipts public key re-applied', { keyId: key.keyId });
        }
        await o.clock.sleep(o.refreshMs ?? DEFAULT_PUBLIC_KEY_REFRESH_MS, abort.signal);
      } catch (err) {
        if (abort.signal.aborted) break;
        const delay = backoff.next();
        const e = err as Error & { code?: unknown; statusCode?: unknown };
        log.warn('could not publish the receipts public key; retrying', { error: e.message, code: e.code ?? e.statusCode, attempt: backoff.attempts, retryInMs: delay });
        await o.clock.sleep(delay, abort.signal);
      }
    }
    firstPublished(false);
  })();
  return {
    done,
    stop: async () => {
      abort.abort();
      await loop;
    },
  };
}
