import path from 'node:path';
import { Client } from 'pg';
import { migrate, openOrm } from '../../db/orm';
import { startEmbeddedPostgres } from './embedded-postgres';
import { freePort } from './ports';

export interface ScratchDatabase {
  url: string;
  drop(): Promise<void>;
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
 * A fresh, migrated database for a test run or a benchmark, on `adminUrl`'s server (default: the
 * machine's PostgreSQL on 127.0.0.1:5432), else on an embedded PostgreSQL under `dataDir`.
 */
export async function createScratchDatabase(prefix: string, dataDir: string, adminUrl?: string): Promise<ScratchDatabase> {
  const steps: Array<() => Promise<void>> = [];
  let serverUrl = adminUrl ?? 'postgres://postgres@127.0.0.1:5432/postgres';
  if (!(await reachable(serverUrl))) {
    const embedded = await startEmbeddedPostgres(path.join(dataDir, 'pg'), await freePort());
    steps.push(() => embedded.stop());
    serverUrl = embedded.url;
  }
  const name = `${prefix}_${process.pid}_${Date.now()}`;
  const admin = new Client({ connectionString: serverUrl });
  await admin.connect();
  await admin.query(`create database ${name}`);
  await admin.end();
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  steps.push(async () => {
    const client = new Client({ connectionString: serverUrl });
    await client.connect();
    await client.query(`drop database if exists ${name} with (force)`);
    await client.end();
  });
  const orm = await openOrm(url.toString(), 2);
  await migrate(orm);
  await orm.close();
  return {
    url: url.toString(),
    async drop() {
      for (const step of steps.reverse()) await step();
    },
  };
}
