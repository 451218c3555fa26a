/** `npm run migrate`: applies the committed migrations (deployments run it before starting the api). */
import { loadConfig } from '../config/env';
import { migrate, openOrm } from '../db/orm';
import { resolveDatabase } from './lib/embedded-postgres';

async function main(): Promise<void> {
  const config = loadConfig();
  const database = await resolveDatabase(config);
  const orm = await openOrm(database.url, 2);
  try {
    await migrate(orm);
    console.log('migrations applied');
  } finally {
    await orm.close();
    await database.stop();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
