import fs from 'node:fs';
import path from 'node:path';
import { Client } from 'pg';
import { bundleWorkflowCode } from '@temporalio/worker';
import { openOrm, migrate } from '../../db/orm';
import { workflowsPath } from '../../services/temporal/worker';
import { startEmbeddedPostgres } from '../../scripts/lib/embedded-postgres';
import { freePort } from '../../scripts/lib/ports';
import { startTemporalDevServer } from '../../scripts/lib/temporal-dev-server';
import { TEST_ENV, testDataDir, toolsDir } from './env';

interface Teardown {
  steps: Array<() => Promise<void>>;
}

declare global {
  var __integrationTeardown: Teardown | undefined;
}

async function reachable(url: string): Promise<boolean> {
  const client = new Client({ connectionString: url, connectionTimeoutMillis: 2000 });
  try {
    await client.connect();
    await client.end();
    return true;
  } catch {
    return false;
  }
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

  let adminUrl = process.env.TEST_DATABASE_URL ?? process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
  if (!(await reachable(adminUrl))) {
    const embedded = await startEmbeddedPostgres(path.join(testDataDir, 'pg'), await freePort());
    teardown.steps.push(() => embedded.stop());
    adminUrl = embedded.url;
  }
  const dbName = `svc_test_${process.pid}_${Date.now()}`;
  const admin = new Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`create database ${dbName}`);
  await admin.end();
  const testUrl = new URL(adminUrl);
  testUrl.pathname = `/${dbName}`;
  teardown.steps.push(async () => {
    const client = new Client({ connectionString: adminUrl });
    await client.connect();
    await client.query(`drop database if exists ${dbName} with (force)`);
    await client.end();
  });
  const orm = await openOrm(testUrl.toString(), 2);
  await migrate(orm);
  await orm.close();

  const server = await startTemporalDevServer({ toolsDir, logFile: path.join(testDataDir, 'temporal.log') });
  teardown.steps.push(() => server.stop());

  const { code } = await bundleWorkflowCode({ workflowsPath, logger: { trace() {}, debug() {}, info() {}, warn() {}, error() {}, log() {} } });
  const bundlePath = path.join(testDataDir, `workflow-bundle-${process.pid}.js`);
  fs.writeFileSync(bundlePath, code);
  teardown.steps.push(async () => fs.rmSync(bundlePath, { force: true }));

  process.env[TEST_ENV.databaseUrl] = testUrl.toString();
  process.env[TEST_ENV.temporalAddress] = server.address;
  process.env[TEST_ENV.workflowBundle] = bundlePath;
}
