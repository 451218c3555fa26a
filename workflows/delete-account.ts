import { getExternalWorkflowHandle, proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../activities';

const { accountWorkflowIds, endSubscriptionOf, eraseAccountStep } = proxyActivities<Activities>({
  startToCloseTimeout: '2 minutes',
  retry: { initialInterval: '1 second', maximumInterval: '1 minute' },
});

export interface DeleteAccountResult {
  workflowsStopped: number;
  subscriptionEnded: boolean;
  rowsErased: number;
}

/**
 * `delete-account/<acc>`: stops the account's running work (trainings, refreshes, integrations,
 * purchases waiting for payment) and its Stripe subscription at the end of the paid period, then
 * erases its rows batch by batch (models with their artefacts, outcomes, predictions, keys,
 * sessions, webhooks, logs, ledger, purchases, workspaces) and finally the account. Every step is
 * idempotent, so a worker restart resumes where the history stands.
 */
export async function deleteAccount(input: { accountId: string }): Promise<DeleteAccountResult> {
  const running = await accountWorkflowIds(input.accountId);
  for (const workflowId of running) {
    try {
      await getExternalWorkflowHandle(workflowId).cancel();
    } catch {
      // Not running (finished, or never started): nothing to stop.
    }
  }
  const subscriptionEnded = await endSubscriptionOf(input.accountId);
  let rowsErased = 0;
  for (;;) {
    const step = await eraseAccountStep(input.accountId);
    rowsErased += step.erased;
    if (step.done) break;
  }
  return { workflowsStopped: running.length, subscriptionEnded, rowsErased };
}
