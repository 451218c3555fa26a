import { ApplicationFailure, Context } from '@temporalio/activity';
import type { MikroORM } from '@mikro-orm/postgresql';
import type { Logger } from 'pino';
import { accountWorkflowIds, endSubscriptionOf, eraseAccountStep, strandedDeletions } from '../services/account-deletion';
import { revokeEndedKey, sweepEndedKeys } from '../services/api-keys';
import { EngineDataError, type EnginePool } from '../services/engine-pool';
import { closePurchase, reconcileLapsedSubscriptions, reconcilePurchase, reconcileSubscriptionCheckouts, settlePurchase } from '../services/billing';
import { pruneClosedReservations, releaseLapsedReservations, resetAllowances } from '../services/credits';
import type { Stripe } from '../services/stripe';
import { pruneIdempotencyRecords } from '../services/idempotency';
import { pruneSignInRecords } from '../services/auth/pruning';
import { abandonTraining, strandedTrainings } from '../services/models';
import { strandedIntegrations } from '../services/outcomes';
import { prunePredictions } from '../services/predictions';
import { pruneWebhookHistory } from '../services/webhooks/events';
import { activityLogger } from '../services/temporal/activity-logging';
import { pruneRequestLog } from '../services/request-log';
import { pruneRateLimitCounters } from '../services/rate-limits';
import { pruneClosedAllowances } from '../services/closed-allowances';
import { workflowIds } from '../services/temporal/ids';
import { fitAndStoreVersion, foldPendingOutcomes, setAsideRefusedFold, type FitRequest, type FoldResult } from '../services/training';
import { sweepCreditAlerts } from '../services/credit-alerts';
import { markStaleModels } from '../services/model-staleness';
import { attemptDelivery, type AttemptResult, type DeliverySettings } from '../services/webhooks/delivery';

export interface ActivityDeps {
  orm: MikroORM;
  logger: Logger;
  enginePool: EnginePool;
  /** A model still `training` this long after its creation may have lost its workflow. */
  strandedAfterMs: number;
  fitHeartbeatTimeoutMs: number;
  webhooks: DeliverySettings;
  /** Null when billing is not configured: a purchase past its deadline then simply expires. */
  stripe: Stripe | null;
}

const HEARTBEAT_EVERY_MS = 2000;

/**
 * Activities close over their dependencies (built once by the worker). Each forks its own
 * EntityManager and is idempotent: Temporal may run it more than once.
 */
/** A model whose workflow the sweep (re)starts: a training that never started, or outcomes whose signal was lost. */
export interface StrandedModel {
  modelId: string;
  /** The fairness key of its fits (workflows/train-model.ts). */
  accountId: string;
  workflowId: string;
  heartbeatTimeoutMs: number;
}

export function createActivities(deps: ActivityDeps) {
  return {
    async revokeEndedKey(keyId: string): Promise<boolean> {
      const revoked = await revokeEndedKey(deps.orm.em.fork(), keyId, new Date());
      activityLogger(deps.logger).info({ keyId, revoked }, 'rotation grace ended');
      return revoked;
    },

    /**
     * The periodic sweep: ended keys, credit reservations held past their deadline (and closed ones past 30 days), idempotency
     * records past 24 h, request log, predictions and webhook deliveries and events past their retention, expired sign-in records,
     * budget counters and closed allowances of past months,
     * credits.low alerts whose charging process died before recording them.
     */
    async sweepEndedKeys() {
      const now = new Date();
      const result = await sweepEndedKeys(deps.orm.em.fork(), now);
      const reservationsReleased = await releaseLapsedReservations(deps.orm.em.fork(), now);
      const reservationsPruned = await pruneClosedReservations(deps.orm.em.fork(), now);
      const idempotencyPruned = await pruneIdempotencyRecords(deps.orm.em.fork(), now);
      const requestLogPruned = await pruneRequestLog(deps.orm.em.fork(), now);
      const predictionsPruned = await prunePredictions(deps.orm.em.fork(), now);
      const webhooks = await pruneWebhookHistory(deps.orm.em.fork(), now);
      const creditAlerts = await sweepCreditAlerts(deps.orm.em.fork(), now);
      const signIn = await pruneSignInRecords(deps.orm.em.fork(), now);
      const rateLimitsPruned = await pruneRateLimitCounters(deps.orm.em.fork(), now);
      const closedAllowancesPruned = await pruneClosedAllowances(deps.orm.em.fork(), now);
      const swept = {
        ...result,
        reservationsReleased,
        reservationsPruned,
        idempotencyPruned,
        requestLogPruned,
        predictionsPruned,
        webhookDeliveriesPruned: webhooks.deliveries,
        webhookEventsPruned: webhooks.events,
        creditAlerts,
        ...signIn,
        rateLimitsPruned,
        closedAllowancesPruned,
      };
      if (Object.values(swept).some((n) => n > 0)) activityLogger(deps.logger).info(swept, 'sweep');
      return swept;
    },

    /** Fits and stores a version in the engine pool, heartbeating so that a lost worker is noticed. */
    async fitVersion(request: FitRequest): Promise<{ versionId: string; number: number } | null> {
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

    async foldOutcomes(modelId: string): Promise<FoldResult | null> {
      return foldPendingOutcomes(deps.orm.em.fork(), modelId);
    },

    /** A refresh whose context the engine refused: its fold is undone, its outcomes set aside as refused. */
    async setAsideRefusedFold(modelId: string, number: number): Promise<number> {
      const refused = await setAsideRefusedFold(deps.orm.em.fork(), modelId, number);
      activityLogger(deps.logger).warn({ modelId, number, refused }, 'refresh refused by the engine: its outcomes are set aside');
      return refused;
    },

    /** A fit that failed for good: the model is given up so that it frees its quota slot. */
    async abandonTraining(modelId: string): Promise<void> {
      await abandonTraining(deps.orm.em.fork(), modelId);
      deps.logger.warn({ modelId }, 'training abandoned');
    },

    /**
     * One attempt of `delivery/<dlv>`. Its scheduled time is Temporal's (the clock of the 5-day disable
     * rule, and the time-skipping tests' clock); a retry after a lost worker keeps the same one.
     */
    async attemptDelivery(request: { deliveryId: string; number: number; lastAttempt: boolean }): Promise<AttemptResult> {
      const scheduledAt = new Date(Context.current().info.scheduledTimestampMs);
      const result = await attemptDelivery(deps.orm.em.fork(), deps.webhooks, { ...request, scheduledAt });
      activityLogger(deps.logger).debug({ ...request, ...result }, 'webhook attempt');
      return result;
    },

    /** The daily model.stale check (heartbeats per model so a lost worker is noticed). */
    async markStaleModels(): Promise<{ opened: number; closed: number; failed: number }> {
      const ctx = Context.current();
      const beat = setInterval(() => ctx.heartbeat(), HEARTBEAT_EVERY_MS);
      try {
        const log = activityLogger(deps.logger);
        const marked = await markStaleModels(deps.orm.em.fork(), new Date(), (modelId, err) =>
          log.warn({ err, modelId }, 'could not judge whether a model is stale: passed over until the next check'),
        );
        if (marked.opened || marked.closed || marked.failed) log.info(marked, 'stale models');
        return marked;
      } finally {
        clearInterval(beat);
      }
    },

    /** Models still `training` long after creation: the sweep (re)starts their `train/<mdl>`. */
    async strandedTrainings(): Promise<StrandedModel[]> {
      const models = await strandedTrainings(deps.orm.em.fork(), new Date(Date.now() - deps.strandedAfterMs));
      return models.map((m) => ({ modelId: m.id, accountId: m.accountId, workflowId: workflowIds.train(m.id), heartbeatTimeoutMs: deps.fitHeartbeatTimeoutMs }));
    },

    /** Auto-updated models whose outcomes wait (signal lost): the sweep starts `integrate/<mdl>`. */
    async strandedIntegrations(): Promise<StrandedModel[]> {
      const now = Date.now();
      const models = await strandedIntegrations(deps.orm.em.fork(), new Date(now - deps.strandedAfterMs), new Date(now - 86_400_000));
      return models.map((m) => ({ modelId: m.id, accountId: m.accountId, workflowId: workflowIds.integrate(m.id), heartbeatTimeoutMs: deps.fitHeartbeatTimeoutMs }));
    },

    async accountWorkflowIds(accountId: string): Promise<string[]> {
      return accountWorkflowIds(deps.orm.em.fork(), accountId);
    },

    async endSubscriptionOf(accountId: string): Promise<boolean> {
      return endSubscriptionOf(deps.orm.em.fork(), deps.stripe, accountId);
    },

    async eraseAccountStep(accountId: string): Promise<{ table: string; erased: number; done: boolean }> {
      const step = await eraseAccountStep(deps.orm.em.fork(), accountId);
      if (step.erased > 0) activityLogger(deps.logger).info({ accountId, ...step }, 'account erasure step');
      return step;
    },

    /** Accounts marked deleted whose erasure never started (the process died first): the sweep starts it. */
    async strandedDeletions(): Promise<Array<{ accountId: string; workflowId: string }>> {
      const ids = await strandedDeletions(deps.orm.em.fork(), new Date(Date.now() - deps.strandedAfterMs));
      return ids.map((accountId) => ({ accountId, workflowId: workflowIds.deleteAccount(accountId) }));
    },

    /** Credits a purchase once (a repeated settlement finds it settled and credits nothing). */
    async settlePurchase(purchaseId: string, by: string): Promise<string> {
      const state = await settlePurchase(deps.orm.em.fork(), purchaseId, by);
      activityLogger(deps.logger).info({ purchaseId, state, by }, 'credit purchase settled');
      return state;
    },

    async closePurchase(purchaseId: string, state: 'failed' | 'expired', by: string): Promise<string> {
      return closePurchase(deps.orm.em.fork(), purchaseId, state, by);
    },

    /** No verdict by the deadline: asks Stripe about the purchase's session. */
    async reconcilePurchase(purchaseId: string): Promise<string> {
      return reconcilePurchase(deps.orm.em.fork(), deps.stripe, purchaseId);
    },

    /**
     * Subscriptions still live here past their period's end whose renewal or end Stripe never reported:
     * read from Stripe and applied (a lost `customer.subscription.deleted` kept a paid plan for ever).
     */
    async reconcileLapsedSubscriptions(): Promise<number> {
      const now = new Date();
      // and the subscription Checkout Sessions whose completion (or expiry) Stripe never reported
      const read =
        (await reconcileLapsedSubscriptions(deps.orm.em.fork(), deps.stripe, activityLogger(deps.logger), now)) +
        (await reconcileSubscriptionCheckouts(deps.orm.em.fork(), deps.stripe, activityLogger(deps.logger), now));
      if (read > 0) activityLogger(deps.logger).info({ read }, 'lapsed subscriptions read from Stripe');
      return read;
    },

    /** Opens `period` for every account still in an earlier one (the monthly Schedule). */
    async resetAllowances(period: string, accountIds?: string[]): Promise<number> {
      const reset = await resetAllowances(deps.orm.em.fork(), period, new Date(), accountIds);
      activityLogger(deps.logger).info({ period, reset }, 'monthly allowances reset');
      return reset;
    },
  };
}

export type Activities = ReturnType<typeof createActivities>;
