/** Generates a migration from the difference between the entities and the database (then review it). */
import { openOrm } from '../db/orm';
import { loadConfig } from '../config/env';

async function main(): Promise<void> {
  const config = loadConfig();
  if (!config.DATABASE_URL) throw new Error('DATABASE_URL must point at a database with all migrations applied');
  const orm = await openOrm(config.DATABASE_URL);
  try {
    await orm.getMigrator().up();
    const result = await orm.getMigrator().createMigration(undefined, false, false, process.argv[2]);
    console.log(result.fileName ? `created ${result.fileName}` : 'no changes');
  } finally {
    await orm.close();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
