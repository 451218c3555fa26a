import path from 'node:path';
import { Client } from '@temporalio/client';
import { format } from 'node:util';
import { bundleWorkflowCode, DefaultLogger, NativeConnection, Runtime, Worker, type LogEntry, type WorkerOptions, makeTelemetryFilterString } from '@temporalio/worker';
import type { MikroORM } from '@mikro-orm/postgresql';
import type { Logger } from 'pino';
import { createActivities } from '../../activities';
import type { EnginePool } from '../engine-pool';
import { DeliveryRelay } from '../webhooks/relay';
import type { WebhookSettings } from '../webhooks/settings';
import { activityLoggingInterceptor } from './activity-logging';
import { deliveryTaskQueue, fitTaskQueue } from './task-queues';
import type { Stripe } from '../stripe';

export interface WorkerDeps {
  orm: MikroORM;
  logger: Logger;
  enginePool: EnginePool;
  connection: NativeConnection;
  namespace: string;
  taskQueue: string;
  /** A model still `training` this long after creation is handed to the sweep (default 2 minutes). */
  strandedAfterMs?: number;
  fitHeartbeatTimeoutMs?: number;
  /** A pre-built bundle (tests build it once); otherwise the workflows folder is bundled at start. */
  workflowBundlePath?: string;
  /** How long a shutdown lets running activities finish before cancelling them (default: Temporal's). */
  shutdownGraceMs?: number;
  /** Delivery settings of the webhook activities and the outbox relay (services/webhooks/settings.ts). */
  webhooks: WebhookSettings;
  /** Stripe, for purchases whose settlement never came (default: none, such purchases expire). */
  stripe?: Stripe | null;
  /** Workflows kept in memory between tasks (default: the SDK's); 0 polls every task from the shared queue. */
  maxCachedWorkflows?: number;
}

let runtimeInstalled = false;

/**
 * The SDK's log lines, as its default logger writes them, but for the warning that the fits' worker
 * (activities only, by design) polls no workflow task, which every start would otherwise print.
 */
function sdkLog(entry: LogEntry): void {
  if (entry.message.startsWith('No workflows registered')) return;
  const time = new Date(Number(entry.timestampNanos / 1_000_000n)).toISOString();
  process.stderr.write(entry.meta === undefined ? `${time} [${entry.level}] ${entry.message}\n` : `${time} [${entry.level}] ${entry.message} ${format(entry.meta)}\n`);
}

/**
 * Keeps the SDK's and the Rust core's own logs quiet unless something is wrong, and leaves signals to
 * the process (scripts/lib/runtime.ts stops the worker in its place in the shutdown order; the SDK's
 * default would shut the workers down on SIGINT/SIGTERM by itself, ahead of that order).
 */
export function installRuntimeOnce(): void {
  if (runtimeInstalled) return;
  runtimeInstalled = true;
  try {
    Runtime.install({
      logger: new DefaultLogger('WARN', sdkLog),
      telemetryOptions: { logging: { filter: makeTelemetryFilterString({ core: 'WARN' }) } },
      shutdownSignals: [],
    });
  } catch {
    // Already installed by another part of the process (e.g. @temporalio/testing): keep that one.
  }
}

export const workflowsPath = path.resolve(__dirname, '..', '..', 'workflows');

const silent = (): void => undefined;

/** The bundler's progress lines are not the service's; its warnings and errors are. */
function bundlerLogger(logger: Logger) {
  return { trace: silent, debug: silent, info: silent, log: silent, warn: (message: string) => logger.warn(message), error: (message: string) => logger.error(message) };
}

/** The service's Temporal workers of one process, run and stopped together. */
export interface ServiceWorker {
  /** Polls until shut down (or until a worker fails); the outbox relay runs meanwhile. */
  run(): Promise<void>;
  /** Stops polling; running activities finish, or are cancelled after the grace. */
  shutdown(): void;
}

/**
 * Two workers: one on the service's task queue (every workflow and every activity but the fit), one on
 * the fits' queue (services/temporal/task-queues.ts) that takes as many fits at once as the engine pool
 * has threads, so that fits queue in Temporal rather than in this process.
 */
export async function createWorker(deps: WorkerDeps): Promise<ServiceWorker> {
  installRuntimeOnce();
  // One bundle for the two workers that run workflows (bundling takes seconds).
  const workflowSource: Pick<WorkerOptions, 'workflowBundle'> = deps.workflowBundlePath
    ? { workflowBundle: { codePath: deps.workflowBundlePath } }
    : { workflowBundle: { code: (await bundleWorkflowCode({ workflowsPath, logger: bundlerLogger(deps.logger) })).code } };
  const activities = createActivities({
    orm: deps.orm,
    logger: deps.logger,
    enginePool: deps.enginePool,
    strandedAfterMs: deps.strandedAfterMs ?? 120_000,
    fitHeartbeatTimeoutMs: deps.fitHeartbeatTimeoutMs ?? 30_000,
    webhooks: deps.webhooks.delivery,
    stripe: deps.stripe ?? null,
  });
  const shared = {
    connection: deps.connection,
    namespace: deps.namespace,
    ...(deps.shutdownGraceMs !== undefined ? { shutdownGraceTime: deps.shutdownGraceMs } : {}),
    interceptors: { activity: [activityLoggingInterceptor(deps.logger)] },
  };
  const main = await Worker.create({
    ...shared,
    taskQueue: deps.taskQueue,
    ...workflowSource,
    ...(deps.maxCachedWorkflows !== undefined ? { maxCachedWorkflows: deps.maxCachedWorkflows } : {}),
    activities,
  });
  const fits = await Worker.create({
    ...shared,
    taskQueue: fitTaskQueue(deps.taskQueue),
    activities: { fitVersion: activities.fitVersion },
    maxConcurrentActivityTaskExecutions: deps.enginePool.threads,
  });
  // Webhook deliveries on their own queue and slots, their workflows and their attempts
  // (workflows/webhook-delivery.ts, services/webhooks/relay.ts): a receiver that never answers holds an
  // attempt for its whole timeout, and deliveries waiting for attempt slots wake often; neither must
  // hold the slots or the workflow tasks above. One account holds at most WEBHOOK_ATTEMPTS_PER_ACCOUNT
  // attempts (services/webhooks/attempt-slots.ts). Deliveries started before keep running on the
  // service's queue, whose worker still has every workflow.
  const deliveries = await Worker.create({
    ...shared,
    taskQueue: deliveryTaskQueue(deps.taskQueue),
    ...workflowSource,
    ...(deps.maxCachedWorkflows !== undefined ? { maxCachedWorkflows: deps.maxCachedWorkflows } : {}),
    activities: { attemptDelivery: activities.attemptDelivery },
    maxConcurrentActivityTaskExecutions: deps.webhooks.attemptsPerWorker,
  });
  // The outbox relay lives exactly as long as the worker runs, whoever runs it (npm start, the
  // worker process, the tests), so no process that polls the queue can forget to dispatch.
  const relay = new DeliveryRelay(deps.orm, new Client({ connection: deps.connection, namespace: deps.namespace }), deps.taskQueue, deps.webhooks.relay, deps.logger);
  const workers = [main, fits, deliveries];
  return {
    async run() {
      relay.start();
      try {
        // one worker failing stops the other, so the process never keeps half a worker
        const running = workers.map((w) =>
          w.run().catch((err: unknown) => {
            for (const other of workers) if (other.getState() === 'RUNNING') other.shutdown();
            throw err;
          }),
        );
        const results = await Promise.allSettled(running);
        const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
        if (failed) throw failed.reason;
      } finally {
        await relay.stop();
      }
    },
    shutdown() {
      for (const w of workers) if (w.getState() === 'RUNNING') w.shutdown();
    },
  };
}
