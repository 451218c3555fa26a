import { spawn, type ChildProcess, type StdioOptions } from 'node:child_process';
import path from 'node:path';
import { NativeConnection } from '@temporalio/worker';
import pino from 'pino';
import { createWorker } from '../../services/temporal/worker';
import { createStripeClient } from '../../services/stripe';
import { webhookSettings } from '../../services/webhooks/settings';
import { TEST_ENV, repoRoot, requireEnv } from './env';
import type { Harness } from './harness';

/**
 * A service process of its own (`scripts/api.ts` or `scripts/worker.ts`, run as `npm run start:api`
 * and `start:worker` run them: node with tsx as its loader) on the run's PostgreSQL and Temporal and
 * the test file's task queue, in its own process group so that a kill reaches anything it starts.
 */
export function spawnServiceProcess(
  role: 'api' | 'worker',
  taskQueue: string,
  env: Record<string, string>,
  stdio: StdioOptions = 'ignore',
): ChildProcess {
  return spawn(process.execPath, ['--import', 'tsx', path.join(repoRoot, 'scripts', `${role}.ts`)], {
    cwd: repoRoot,
    env: {
      ...process.env,
      DATABASE_URL: requireEnv(TEST_ENV.databaseUrl),
      TEMPORAL_ADDRESS: requireEnv(TEST_ENV.temporalAddress),
      TEMPORAL_TASK_QUEUE: taskQueue,
      ...env,
    },
    stdio,
    detached: true,
  });
}

/** SIGKILL to a spawned process group; nothing when it is already gone. */
export function killProcessGroup(child: ChildProcess | null): void {
  if (!child?.pid || child.exitCode !== null) return;
  try {
    process.kill(-child.pid, 'SIGKILL');
  } catch {
    // already gone
  }
}

/**
 * A healthy Temporal worker in the test process, on the harness's task queue; `stop` shuts it down.
 * `temporal`: another server's connection (e.g. the time-skipping test server's), left open by `stop`;
 * `maxCachedWorkflows`: the worker's workflow cache (0: no sticky queue of its own).
 */
export async function startInProcessWorker(
  h: Harness,
  temporal?: NativeConnection,
  options: { maxCachedWorkflows?: number } = {},
): Promise<{ stop(): Promise<void> }> {
  const connection = temporal ?? (await NativeConnection.connect({ address: requireEnv(TEST_ENV.temporalAddress) }));
  const worker = await createWorker({
    orm: h.orm,
    logger: pino({ level: 'silent' }),
    enginePool: h.enginePool,
    connection,
    namespace: 'default',
    taskQueue: h.taskQueue,
    workflowBundlePath: requireEnv(TEST_ENV.workflowBundle),
    webhooks: webhookSettings(h.config),
    stripe: createStripeClient(h.config),
    ...options,
  });
  const running = worker.run();
  return {
    async stop() {
      worker.shutdown();
      await running;
      if (!temporal) await connection.close();
    },
  };
}
