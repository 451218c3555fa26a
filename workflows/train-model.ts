import { ActivityFailure, ApplicationFailure, patched, proxyActivities, workflowInfo } from '@temporalio/workflow';
import type { Activities } from '../activities';
import { fitTaskQueue } from '../services/temporal/task-queues';

export interface TrainModelInput {
  modelId: string;
  /** Heartbeat timeout of the fit: how soon a lost worker's fit is retried elsewhere. */
  heartbeatTimeoutMs: number;
  /**
   * The model's account: the fairness key of its fits, so that the fits' queue serves accounts in turn
   * rather than first come, first served. Absent in runs started before it was passed.
   */
  accountId?: string;
}

/**
 * Fits are scheduled on a task queue of their own, polled by workers that take only as many as they
 * have engine threads: fits waiting for a thread wait in Temporal, holding neither one of the
 * worker's activity slots (which webhook deliveries, purchases and sweeps need) nor a context in
 * memory. On the shared queue a flood of fits (an account creating or refreshing its 200 models at
 * once) took every slot and held each context while it waited. Histories from before keep the
 * shared queue on replay. Each fit carries its account as fairness key (with Temporal's fairness
 * enabled, waiting fits are dispatched account by account).
 */
function fitActivities(input: TrainModelInput) {
  const ownQueue = patched('fits-on-their-own-task-queue');
  return proxyActivities<Activities>({
    ...(ownQueue ? { taskQueue: fitTaskQueue(workflowInfo().taskQueue) } : {}),
    ...(input.accountId !== undefined ? { priority: { fairnessKey: input.accountId } } : {}),
    startToCloseTimeout: '2 hours',
    heartbeatTimeout: input.heartbeatTimeoutMs,
    retry: { initialInterval: '1 second', maximumInterval: '30 seconds', maximumAttempts: 5, nonRetryableErrorTypes: ['EngineDataError'] },
  });
}

const { abandonTraining, setAsideRefusedFold } = proxyActivities<Activities>({ startToCloseTimeout: '1 minute', retry: { maximumInterval: '30 seconds' } });

/**
 * The fold is PostgreSQL's work (about a minute for a million pending outcomes, bench/api/fold.ts) and sends
 * no heartbeat: it had the fit's heartbeat timeout, so a fold longer than that failed every attempt.
 */
const { foldOutcomes } = proxyActivities<Activities>({
  startToCloseTimeout: '15 minutes',
  retry: { initialInterval: '1 second', maximumInterval: '30 seconds', maximumAttempts: 5 },
});

/** The engine refused the data (non-retryable EngineDataError), as opposed to a failure of the fit itself. */
const isDataRefusal = (err: unknown): boolean => err instanceof ActivityFailure && err.cause instanceof ApplicationFailure && err.cause.type === 'EngineDataError';

/**
 * `train/<mdl>`: fits version 1 from the stored context; the model serves once it is stored. A fit
 * that fails for good gives the model up here, durably, so it never stays `training` holding a quota
 * slot, whoever started the workflow (the route, or the sweep for a model whose route died).
 */
export async function trainModel(input: TrainModelInput): Promise<{ versionId: string; number: number } | null> {
  const { fitVersion } = fitActivities(input);
  try {
    return await fitVersion({ modelId: input.modelId, number: 1, trigger: 'train', outcomesFolded: 0 });
  } catch (err) {
    await abandonTraining(input.modelId);
    throw err;
  }
}

/** A refresh's answer: the version it made, or when the model's refresh budget frees up (nothing was folded). */
export type RefreshResult = { versionId: string; number: number; folded: number } | { deferredUntil: string; limit: number };

/**
 * `refresh/<mdl>`: folds the pending outcomes into the context, then fits the next version (a context
 * the engine refuses sets those outcomes aside as refused, and the refresh fails with the refusal). Nothing
 * to fold (a racing refresh took them, or the model stopped serving) makes no version: null. A model
 * that has spent its plan's refreshes of the last 24 hours folds nothing either: the answer says when
 * to try again.
 */
export async function refreshModel(input: TrainModelInput): Promise<RefreshResult | null> {
  const { fitVersion } = fitActivities(input);
  const folded = await foldOutcomes(input.modelId);
  if (!folded) return null;
  if ('deferredUntil' in folded) return folded;
  try {
    const version = await fitVersion({ modelId: input.modelId, number: folded.number, trigger: 'refresh', outcomesFolded: folded.folded });
    return version ? { ...version, folded: folded.folded } : null;
  } catch (err) {
    // A context the engine refuses would be refused again by every later refresh (the folded chunk
    // is reused): its outcomes are set aside, and the refusal still reaches the caller (422).
    if (isDataRefusal(err)) await setAsideRefusedFold(input.modelId, folded.number);
    throw err;
  }
}
