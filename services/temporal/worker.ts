import path from 'node:path';
import { Client } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime, Worker, type WorkerOptions, makeTelemetryFilterString } from '@temporalio/worker';
import type { MikroORM } from '@mikro-orm/postgresql';
import type { Logger } from 'pino';
import { createActivities } from '../../activities';
import type { EnginePool } from '../engine-pool';
import { DeliveryRelay } from '../webhooks/relay';
import type { WebhookSettings } from '../webhooks/settings';
import { activityLoggingInterceptor } from './activity-logging';
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
 * Keeps the SDK's and the Rust core's own logs quiet unless something is wrong, and leaves signals to
 * the process (scripts/lib/runtime.ts stops the worker in its place in the shutdown order; the SDK's
 * default would shut the workers down on SIGINT/SIGTERM by itself, ahead of that order).
 */
export function installRuntimeOnce(): void {
  if (runtimeInstalled) return;
  runtimeInstalled = true;
  try {
    Runtime.install({
      logger: new DefaultLogger('WARN'),
      telemetryOptions: { logging: { filter: makeTelemetryFilterString({ core: 'WARN' }) } },
      shutdownSignals: [],
    });
  } catch {
    // Already installed by another part of the process (e.g. @temporalio/testing): keep that one.
  }
}

export const workflowsPath = path.resolve(__dirname, '..', '..', 'workflows');

export async function createWorker(deps: WorkerDeps): Promise<Worker> {
  installRuntimeOnce();
  const workflowSource: Pick<WorkerOptions, 'workflowsPath' | 'workflowBundle'> = deps.workflowBundlePath
    ? { workflowBundle: { codePath: deps.workflowBundlePath } }
    : { workflowsPath };
  const worker = await Worker.create({
    connection: deps.connection,
    namespace: deps.namespace,
    taskQueue: deps.taskQueue,
    ...workflowSource,
    ...(deps.shutdownGraceMs !== undefined ? { shutdownGraceTime: deps.shutdownGraceMs } : {}),
    ...(deps.maxCachedWorkflows !== undefined ? { maxCachedWorkflows: deps.maxCachedWorkflows } : {}),
    activities: createActivities({
      orm: deps.orm,
      logger: deps.logger,
      enginePool: deps.enginePool,
      strandedAfterMs: deps.strandedAfterMs ?? 120_000,
      fitHeartbeatTimeoutMs: deps.fitHeartbeatTimeoutMs ?? 30_000,
      webhooks: deps.webhooks.delivery,
      stripe: deps.stripe ?? null,
    }),
    interceptors: { activity: [activityLoggingInterceptor(deps.logger)] },
  });
  // The outbox relay lives exactly as long as the worker runs, whoever runs it (npm start, the
  // worker process, the tests), so no process that polls the queue can forget to dispatch.
  const relay = new DeliveryRelay(deps.orm, new Client({ connection: deps.connection, namespace: deps.namespace }), deps.taskQueue, deps.webhooks.relay, deps.logger);
  const run = worker.run.bind(worker);
  worker.run = async () => {
    relay.start();
    try {
      return await run();
    } finally {
      await relay.stop();
    }
  };
  return worker;
}
