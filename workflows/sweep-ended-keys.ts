import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import { ParentClosePolicy, proxyActivities, startChild } from '@temporalio/workflow';
import { integration } from './integration';
import type { Activities } from '../activities';
import { deleteAccount } from './delete-account';
import { trainModel } from './train-model';

const { sweepEndedKeys, strandedTrainings, strandedIntegrations, strandedDeletions } = proxyActivities<Activities>({
  startToCloseTimeout: '1 minute',
  retry: { maximumAttempts: 3 },
});
// Up to SUBSCRIPTION_RECONCILE_BATCH reads from Stripe, each bounded by the SDK's timeout and retries.
const { reconcileLapsedSubscriptions } = proxyActivities<Activities>({
  startToCloseTimeout: '3 minutes',
  retry: { maximumAttempts: 1 },
});

export interface SweepResult {
  expired: number;
  ended: number;
  idempotencyPruned: number;
  requestLogPruned: number;
  predictionsPruned: number;
  webhookDeliveriesPruned: number;
  webhookEventsPruned: number;
  oauthStatesPruned: number;
  oauthCodesPruned: number;
  signInChallengesPruned: number;
  refreshTokensPruned: number;
  sessionsPruned: number;
  /** Budget counters (rate_limits) whose window ended more than an hour ago. */
  rateLimitsPruned: number;
  /** Allowances left by deleted accounts in months before this one (services/closed-allowances.ts). */
  closedAllowancesPruned: number;
  reservationsReleased: number;
  /** Settled or released credit reservations closed more than 30 days ago. */
  reservationsPruned: number;
  trainingsResumed: number;
  integrationsStarted: number;
  deletionsStarted: number;
  /** credits.low alerts recorded by the sweep (their charging process died first). */
  creditAlerts: number;
  /** Live subscriptions past their period with no event from Stripe, read from Stripe and applied. */
  subscriptionsReconciled: number;
}

/**
 * Run by the `sweep-ended-keys` Schedule: marks keys past `expires_at` (and overdue rotations)
 * revoked, releases credit reservations whose call died, prunes records past their retention (expired
 * sign-in records included), and
 * starts `train/<mdl>` for a model whose creating call died before starting it (the stored context
 * is all the fit needs; a workflow already running or done keeps its id and is not started twice),
 * and `integrate/<mdl>` for an auto-updated model whose outcomes wait because their signal was lost,
 * and `delete-account/<acc>` for an account whose deletion was asked but whose erasure never started;
 * last, reads from Stripe the subscriptions still live here past their period's end (their renewal or
 * end never reported) and applies them.
 */
export async function sweepEndedKeysWorkflow(): Promise<SweepResult> {
  const swept = await sweepEndedKeys();
  const stranded = await strandedTrainings();
  let trainingsResumed = 0;
  for (const model of stranded) {
    try {
      await startChild(trainModel, {
        workflowId: model.workflowId,
        args: [{ modelId: model.modelId, accountId: model.accountId, heartbeatTimeoutMs: model.heartbeatTimeoutMs }],
        parentClosePolicy: ParentClosePolicy.ABANDON,
      });
      trainingsResumed += 1;
    } catch (err) {
      if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
    }
  }
  let integrationsStarted = 0;
  for (const model of await strandedIntegrations()) {
    try {
      await startChild(integration, {
        workflowId: model.workflowId,
        args: [{ modelId: model.modelId, accountId: model.accountId, heartbeatTimeoutMs: model.heartbeatTimeoutMs, pendingAtStart: 1 }],
        parentClosePolicy: ParentClosePolicy.ABANDON,
      });
      integrationsStarted += 1;
    } catch (err) {
      if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
    }
  }
  let deletionsStarted = 0;
  for (const account of await strandedDeletions()) {
    try {
      await startChild(deleteAccount, { workflowId: account.workflowId, args: [{ accountId: account.accountId }], parentClosePolicy: ParentClosePolicy.ABANDON });
      deletionsStarted += 1;
    } catch (err) {
      if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
    }
  }
  const subscriptionsReconciled = await reconcileLapsedSubscriptions();
  return { ...swept, trainingsResumed, integrationsStarted, deletionsStarted, subscriptionsReconciled };
}
