/**
 * Runs an embedded PostgreSQL as a process of its own (tests that restart a database spawn it with
 * tsx: the package is ESM, which jest's CommonJS test files cannot load). Prints `ready <url>` once
 * it serves; SIGTERM stops it cleanly.
 *   tsx test/support/embedded-postgres-process.ts DATA_DIR PORT
 */
import { startEmbeddedPostgres } from '../../scripts/lib/embedded-postgres';

async function main(): Promise<void> {
  const [dataDir, port] = process.argv.slice(2);
  if (!dataDir || !port) throw new Error('usage: embedded-postgres-process.ts DATA_DIR PORT');
  const database = await startEmbeddedPostgres(dataDir, Number(port));
  process.stdout.write(`ready ${database.url}\n`);
  const stop = () => {
    database.stop().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
