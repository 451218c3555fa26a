import type { MikroORM } from '@mikro-orm/postgresql';
import type { Logger } from 'pino';
import { revokeEndedKey, sweepEndedKeys } from '../services/api-keys';

export interface ActivityDeps {
  orm: MikroORM;
  logger: Logger;
}

/**
 * Activities close over their dependencies (built once by the worker). Each forks its own
 * EntityManager and is idempotent: Temporal may run it more than once.
 */
export function createActivities(deps: ActivityDeps) {
  return {
    async revokeEndedKey(keyId: string): Promise<boolean> {
      const revoked = await revokeEndedKey(deps.orm.em.fork(), keyId, new Date());
      deps.logger.info({ keyId, revoked }, 'rotation grace ended');
      return revoked;
    },
    async sweepEndedKeys(): Promise<{ expired: number; ended: number }> {
      const result = await sweepEndedKeys(deps.orm.em.fork(), new Date());
      if (result.expired + result.ended > 0) deps.logger.info(result, 'swept ended keys');
      return result;
    },
  };
}

export type Activities = ReturnType<typeof createActivities>;
