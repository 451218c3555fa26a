import { ApplicationFailure, Context } from '@temporalio/activity';
import type { MikroORM } from '@mikro-orm/postgresql';
import type { Logger } from 'pino';
import { revokeEndedKey, sweepEndedKeys } from '../services/api-keys';
import { EngineDataError, type EnginePool } from '../services/engine-pool';
import { pruneIdempotencyRecords } from '../services/idempotency';
import { activityLogger } from '../services/temporal/activity-logging';
import { pruneRequestLog } from '../services/request-log';
import { fitAndStoreVersion, foldPendingOutcomes, type FitRequest } from '../services/training';

export interface ActivityDeps {
  orm: MikroORM;
  logger: Logger;
  enginePool: EnginePool;
}

const HEARTBEAT_EVERY_MS = 2000;

/**
 * Activities close over their dependencies (built once by the worker). Each forks its own
 * EntityManager and is idempotent: Temporal may run it more than once.
 */
export function createActivities(deps: ActivityDeps) {
  return {
    async revokeEndedKey(keyId: string): Promise<boolean> {
      const revoked = await revokeEndedKey(deps.orm.em.fork(), keyId, new Date());
      activityLogger(deps.logger).info({ keyId, revoked }, 'rotation grace ended');
      return revoked;
    },

    /** The periodic sweep: ended keys, idempotency records past 24 h, request log past 30 days. */
    async sweepEndedKeys(): Promise<{ expired: number; ended: number; idempotencyPruned: number; requestLogPruned: number }> {
      const now = new Date();
      const result = await sweepEndedKeys(deps.orm.em.fork(), now);
      const idempotencyPruned = await pruneIdempotencyRecords(deps.orm.em.fork(), now);
      const requestLogPruned = await pruneRequestLog(deps.orm.em.fork(), now);
      const swept = { ...result, idempotencyPruned, requestLogPruned };
      if (Object.values(swept).some((n) => n > 0)) activityLogger(deps.logger).info(swept, 'sweep');
      return swept;
    },

    /** Fits and stores a version in the engine pool, heartbeating so that a lost worker is noticed. */
    async fitVersion(request: FitRequest): Promise<{ versionId: string; number: number }> {
      const ctx = Context.current();
      let progress = { done: 0, total: 0 };
      ctx.heartbeat(progress);
      const beat = setInterval(() => ctx.heartbeat(progress), HEARTBEAT_EVERY_MS);
      try {
        return await fitAndStoreVersion(deps.orm.em.fork(), deps.enginePool, request, {
          onProgress: (p) => {
            progress = p;
          },
          signal: ctx.cancellationSignal,
        });
      } catch (err) {
        if (err instanceof EngineDataError) {
          throw ApplicationFailure.nonRetryable(err.message, 'EngineDataError', { code: err.code });
        }
        throw err;
      } finally {
        clearInterval(beat);
      }
    },

    async foldOutcomes(modelId: string): Promise<{ number: number; folded: number }> {
      return foldPendingOutcomes(deps.orm.em.fork(), modelId);
    },
  };
}

export type Activities = ReturnType<typeof createActivities>;
