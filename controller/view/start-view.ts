// Starts the view API from the controller's configuration: its TLS material from the mounted
// directories, the request-header rules from the cluster (read once at start; a rotated front-proxy CA
// takes a controller restart).
import { httpClientFor } from '../../kube/http.js';
import type { KubeAccess } from '../../kube/kube-access.js';
import type { Logger } from '../../kube/logger.js';
import { readCertPair, readTlsDir } from '../../kube/tls-dir.js';
import type { ControllerConfig } from '../config.js';
import { loadRequestHeaderRules } from './front-proxy.js';
import { startViewApi } from './view-api.js';

export async function startViewFromConfig(view: NonNullable<ControllerConfig['view']>, kc: KubeAccess, namespace: string, logger: Logger): Promise<{ port: number; close(): Promise<void> }> {
  const http = httpClientFor(kc);
  // The API server publishes the rules shortly after it starts serving: wait for them for a minute.
  let rules;
  for (let attempt = 1; ; attempt++) {
    try {
      rules = await loadRequestHeaderRules(http);
      break;
    } catch (err) {
      if (attempt >= 30) throw new Error(`the view API cannot start: ${(err as Error).message}`, { cause: err });
      logger.warn('waiting for the request-header rules', { error: (err as Error).message });
      await new Promise((r) => setTimeout(r, 2000));
    }
  }
  return startViewApi({
    host: view.host,
    port: view.port,
    serving: readCertPair(view.servingTlsDir, '--view-tls-dir'),
    link: readTlsDir(view.linkTlsDir, '--link-tls-dir'),
    rules,
    http,
    namespace,
    now: () => new Date(),
    logger,
  });
}
