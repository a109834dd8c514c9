// worldline-controller entry point: leader election, the metrics/health server, the reconcilers,
// and a graceful stop on SIGTERM (drain work, release the Lease so a standby takes over at once).
import { Registry, collectDefaultMetrics } from 'prom-client';
import { describeError } from '../core/errors.js';
import { loadKubeAccess } from '../kube/kube-access.js';
import { EventRecorder } from '../kube/events.js';
import { startHttpServer } from '../kube/http-server.js';
import { LeaderElector } from '../kube/leader-election.js';
import { createLogger } from '../kube/logger.js';
import { onShutdown } from '../kube/shutdown.js';
import { wantsHelp } from '../kube/cli-help.js';
import { parseConfig, USAGE } from './config.js';
import { Manager } from './manager.js';
import { loadGrantKey } from './evidence/grant-key.js';
import { startViewFromConfig } from './view/start-view.js';

async function main(): Promise<void> {
  if (wantsHelp(process.argv.slice(2))) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  const cfg = parseConfig(process.argv.slice(2), process.env);
  const logger = createLogger('worldline-controller', { level: cfg.logLevel });
  // The light loader: the full @kubernetes/client-node is imported only for configurations that need it.
  const kc = await loadKubeAccess(cfg.kubeconfig ? { kubeconfig: cfg.kubeconfig } : {});
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const events = new EventRecorder(kc, { component: 'worldline-controller', instance: cfg.identity, logger });
  const manager = new Manager({ kubeConfig: kc, namespace: cfg.namespace, registry, events, logger, workers: cfg.workers, ...(cfg.trustPolicy ? { trustPolicy: cfg.trustPolicy } : {}), ...(cfg.grantKey ? { grantKey: loadGrantKey(cfg.grantKey, cfg.grantIssuer) } : {}) });

  let leading = false;
  const server = await startHttpServer({
    host: cfg.metricsHost,
    port: cfg.metricsPort,
    registry,
    ready: () => !cfg.leaderElect || !leading || manager.isSynced(),
    logger,
  });
  logger.info('serving health and metrics', { host: cfg.metricsHost, port: server.port, identity: cfg.identity });
  // The view API is served by every replica, leader or not: it only reads.
  const view = cfg.view ? startViewFromConfig(cfg.view, kc, cfg.namespace, logger) : undefined;

  let elector: LeaderElector | undefined = undefined;
  let shuttingDown = false;
  onShutdown(async () => {
    shuttingDown = true;
    logger.info('shutting down');
    await manager.stop();
    await events.flush();
    if (elector) await elector.stop();
    await view?.close();
    await server.close();
  }, logger);

  if (!cfg.leaderElect) {
    leading = true;
    await manager.start();
    return;
  }
  elector = new LeaderElector({
    kubeConfig: kc,
    namespace: cfg.namespace,
    name: 'worldline-controller',
    identity: cfg.identity,
    leaseDurationSeconds: cfg.leaseDurationSeconds,
    renewDeadlineSeconds: Math.max(2, Math.floor((cfg.leaseDurationSeconds * 2) / 3)),
    retryPeriodSeconds: Math.max(1, Math.floor(cfg.leaseDurationSeconds / 7)),
    logger,
  });
  await elector.run({
    onStartedLeading: async () => {
      leading = true;
      logger.info('became leader', { identity: cfg.identity });
      await manager.start();
    },
    onStoppedLeading: () => {
      if (shuttingDown) return;
      // Another replica may already be reconciling: stop at once and let the process restart as a standby.
      logger.error('lost leadership; exiting', { identity: cfg.identity });
      process.exit(1);
    },
  });
}

main().catch((err: unknown) => {
  process.stderr.write(`${JSON.stringify({ time: new Date().toISOString(), level: 'error', component: 'worldline-controller', msg: 'fatal', error: describeError(err) })}\n`);
  process.exit(1);
});
