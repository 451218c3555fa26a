import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import { condition, continueAsNew, defineSignal, executeChild, setHandler, sleep, workflowInfo } from '@temporalio/workflow';
import { refreshModel, type TrainModelInput } from './train-model';

export const outcomesReceived = defineSignal<[{ count: number }]>('outcomesReceived');

/** Quiet time after the last outcomes batch before refreshing, so bursts make one version. */
const QUIET_MS = 5_000;
const RETRY_WHEN_BUSY_MS = 30_000;

/**
 * `integrate/<mdl>` (signal-with-start from POST /outcomes when auto_update is on): gathers outcome
 * batches, then runs `refresh/<mdl>` as a child. A refresh already running (started by a caller) is
 * waited out and tried again; batches arriving meanwhile make another refresh.
 */
export interface IntegrationInput extends TrainModelInput {
  /** Batches already waiting when it starts (the sweep's start for a lost signal, or continue-as-new). */
  pendingAtStart?: number;
  /** Quiet time after the last batch (default 5 s). */
  quietMs?: number;
  /** Wait before trying again when a refresh is already running (default 30 s). */
  retryWhenBusyMs?: number;
}

/** A long-lived integration starts afresh after this many refreshes, so its history stays small. */
const REFRESHES_PER_RUN = 50;

export async function integration(input: IntegrationInput): Promise<{ refreshes: number }> {
  let pendingBatches = input.pendingAtStart ?? 0;
  setHandler(outcomesReceived, () => {
    pendingBatches += 1;
  });
  let refreshes = 0;
  while (pendingBatches > 0 || (await condition(() => pendingBatches > 0, '1 minute'))) {
    // Debounce: wait until no batch arrived for QUIET_MS.
    let seen = -1;
    while (seen !== pendingBatches) {
      seen = pendingBatches;
      await sleep(input.quietMs ?? QUIET_MS);
    }
    pendingBatches = 0;
    try {
      const refreshed = await executeChild(refreshModel, { workflowId: `refresh/${input.modelId}`, args: [input] });
      if (refreshed && 'deferredUntil' in refreshed) {
        // The model spent its plan's refreshes of the last 24 hours: its outcomes wait, and so does
        // this integration, until a version leaves the window.
        pendingBatches += 1;
        await sleep(Math.max(1_000, Date.parse(refreshed.deferredUntil) - Date.now()));
      } else {
        refreshes += 1;
      }
    } catch (err) {
      if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
      pendingBatches += 1;
      await sleep(input.retryWhenBusyMs ?? RETRY_WHEN_BUSY_MS);
    }
    if (refreshes >= REFRESHES_PER_RUN || workflowInfo().continueAsNewSuggested) {
      await continueAsNew<typeof integration>({ ...input, pendingAtStart: pendingBatches });
    }
  }
  return { refreshes };
}
