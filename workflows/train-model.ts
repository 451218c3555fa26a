import { proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../activities';

export interface TrainModelInput {
  modelId: string;
  /** Heartbeat timeout of the fit: how soon a lost worker's fit is retried elsewhere. */
  heartbeatTimeoutMs: number;
}

function fitActivities(heartbeatTimeoutMs: number) {
  return proxyActivities<Activities>({
    startToCloseTimeout: '2 hours',
    heartbeatTimeout: heartbeatTimeoutMs,
    retry: { initialInterval: '1 second', maximumInterval: '30 seconds', maximumAttempts: 5, nonRetryableErrorTypes: ['EngineDataError'] },
  });
}

/** `train/<mdl>`: fits version 1 from the stored context; the model serves once it is stored. */
export async function trainModel(input: TrainModelInput): Promise<{ versionId: string; number: number }> {
  const { fitVersion } = fitActivities(input.heartbeatTimeoutMs);
  return fitVersion({ modelId: input.modelId, number: 1, trigger: 'train', outcomesFolded: 0 });
}

/** `refresh/<mdl>`: folds the pending outcomes into the context, then fits the next version. */
export async function refreshModel(input: TrainModelInput): Promise<{ versionId: string; number: number; folded: number }> {
  const { fitVersion, foldOutcomes } = fitActivities(input.heartbeatTimeoutMs);
  const folded = await foldOutcomes(input.modelId);
  const version = await fitVersion({ modelId: input.modelId, number: folded.number, trigger: 'refresh', outcomesFolded: folded.folded });
  return { ...version, folded: folded.folded };
}
