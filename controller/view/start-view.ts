// Starts the view API from the controller's configuration: its TLS material from the mounted
// directories, the request-header rules from the cluster (read once at start; a rotated front-proxy CA
// takes a controller restart). It starts beside the reconcilers, never in their way: until the API server
// publishes the rules (or when it never will, because it is not configured as a front proxy) the
// controller reconciles as usual, and says every minute why the view API is not served.
import { httpClientFor } from '../../kube/http.js';
import type { KubeAccess } from '../../kube/kube-access.js';
import type { Logger } from '../../kube/logger.js';
import { readCertPair, readTlsDir } from '../../kube/tls-dir.js';
import type { ControllerConfig } from '../config.js';
import { loadRequestHeaderRules, type RequestHeaderRules } from './front-proxy.js';
import { startViewApi } from './view-api.js';

const RETRY_MS = 5_000;
const SAY_EVERY = 12; // attempts: once a minute

export interface ViewHandle {
  close(): Promise<void>;
}

export function startViewFromConfig(view: NonNullable<ControllerConfig['view']>, kc: KubeAccess, namespace: string, logger: Logger): ViewHandle {
  // Unreadable TLS material is a configuration error of this process: it stops the start at once.
  const serving = readCertPair(view.servingTlsDir, '--view-tls-dir');
  const link = readTlsDir(view.linkTlsDir, '--link-tls-dir');
  const http = httpClientFor(kc);
  let stopped = false;
  let server: { close(): Promise<void> } | undefined;
  let wake: (() => void) | undefined;
  const started = (async () => {
    let rules: RequestHeaderRules | undefined;
    for (let attempt = 0; !stopped; attempt++) {
      try {
        rules = await loadRequestHeaderRules(http);
        break;
      } catch (err) {
        if (attempt % SAY_EVERY === 0) logger.error('the view API is not served yet: no request-header rules', { error: (err as Error).message });
        await new Promise<void>((r) => {
          wake = r;
          setTimeout(r, RETRY_MS).unref();
        });
      }
    }
    if (stopped || !rules) return;
    server = await startViewApi({ host: view.host, port: view.port, serving, link, rules, http, namespace, now: () => new Date(), logger });
  })().catch((err: unknown) => logger.error('the view API failed to start', { error: (err as Error).message }));
  return {
    async close() {
      stopped = true;
      wake?.();
      await started;
      await server?.close();
    },
  };
}
