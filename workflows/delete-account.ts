import { getExternalWorkflowHandle, proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../activities';
import { workflowIds } from '../services/temporal/ids';

const { accountModelIds, eraseAccountStep } = proxyActivities<Activities>({
  startToCloseTimeout: '2 minutes',
  retry: { initialInterval: '1 second', maximumInterval: '1 minute' },
});

export interface DeleteAccountResult {
  modelsStopped: number;
  rowsErased: number;
}

/**
 * `delete-account/<acc>`: stops the running work of every model of the account, then erases its
 * rows batch by batch (models with their artefacts, outcomes, predictions, keys, sessions, logs,
 * ledger, workspaces) and finally the account. Every step is idempotent, so a worker restart
 * resumes where the history stands.
 */
export async function deleteAccount(input: { accountId: string }): Promise<DeleteAccountResult> {
  const modelIds = await accountModelIds(input.accountId);
  for (const modelId of modelIds) {
    for (const workflowId of [workflowIds.train(modelId), workflowIds.refresh(modelId), workflowIds.integrate(modelId)]) {
      try {
        await getExternalWorkflowHandle(workflowId).cancel();
      } catch {
        // Not running (finished, or never started): nothing to stop.
      }
    }
  }
  let rowsErased = 0;
  for (;;) {
    const step = await eraseAccountStep(input.accountId);
    rowsErased += step.erased;
    if (step.done) break;
  }
  return { modelsStopped: modelIds.length, rowsErased };
}
