import fs from 'node:fs';
import path from 'node:path';
import { bundleWorkflowCode } from '@temporalio/worker';
import { workflowsPath } from '../../services/temporal/worker';
import { createScratchDatabase } from '../../scripts/lib/scratch-database';
import { startTemporalDevServer } from '../../scripts/lib/temporal-dev-server';
import { TEST_ENV, testDataDir, toolsDir } from './env';

interface Teardown {
  steps: Array<() => Promise<void>>;
}

declare global {
  var __integrationTeardown: Teardown | undefined;
}

/**
 * One real PostgreSQL database (fresh, migrated) and one real Temporal dev server for the whole run.
 * PostgreSQL: TEST_DATABASE_URL / DATABASE_URL, else the machine's on 127.0.0.1:5432, else an
 * embedded one. Workflow code is bundled once here, not per test file.
 */
export default async function globalSetup(): Promise<void> {
  const teardown: Teardown = { steps: [] };
  globalThis.__integrationTeardown = teardown;
  fs.mkdirSync(testDataDir, { recursive: true });

  const database = await createScratchDatabase('svc_test', testDataDir, process.env.TEST_DATABASE_URL ?? process.env.DATABASE_URL);
  teardown.steps.push(() => database.drop());

  const server = await startTemporalDevServer({ toolsDir, logFile: path.join(testDataDir, 'temporal.log') });
  teardown.steps.push(() => server.stop());

  const { code } = await bundleWorkflowCode({ workflowsPath, logger: { trace() {}, debug() {}, info() {}, warn() {}, error() {}, log() {} } });
  const bundlePath = path.join(testDataDir, `workflow-bundle-${process.pid}.js`);
  fs.writeFileSync(bundlePath, code);
  teardown.steps.push(async () => fs.rmSync(bundlePath, { force: true }));

  process.env[TEST_ENV.databaseUrl] = database.url;
  process.env[TEST_ENV.temporalAddress] = server.address;
  process.env[TEST_ENV.workflowBundle] = bundlePath;
}
