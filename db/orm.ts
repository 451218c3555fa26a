import path from 'node:path';
import { MikroORM, type Options } from '@mikro-orm/postgresql';
import { Migrator } from '@mikro-orm/migrations';
import { entities } from './entities';
import { migrationsList } from './migrations';

export type Orm = MikroORM;

export function ormOptions(databaseUrl: string, poolMax = 10): Options {
  return {
    clientUrl: databaseUrl,
    entities,
    extensions: [Migrator],
    // Explicit schemas: no reflection, no decorator metadata.
    discovery: { requireEntitiesArray: true },
    forceUtcTimezone: true,
    pool: { min: 0, max: poolMax },
    allowGlobalContext: false,
    debug: false,
    migrations: {
      path: path.resolve(__dirname, 'migrations'),
      pathTs: path.resolve(__dirname, 'migrations'),
      migrationsList,
      silent: true,
      transactional: true,
      allOrNothing: true,
      snapshot: false,
      emit: 'ts',
      fileName: (timestamp: string, name?: string) => `Migration${timestamp}${name ? `_${name}` : ''}`,
    },
  };
}

export async function openOrm(databaseUrl: string, poolMax = 10): Promise<Orm> {
  return MikroORM.init(ormOptions(databaseUrl, poolMax));
}

/** Applies every committed migration that has not run yet; safe to call at each start. */
export async function migrate(orm: Orm): Promise<void> {
  await orm.getMigrator().up();
}
