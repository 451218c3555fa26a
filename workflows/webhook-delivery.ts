import { patched, proxyActivities, sleep, workflowInfo } from '@temporalio/workflow';
import type { Activities } from '../activities';
import { WEBHOOKS } from '../config/webhooks';
import { deliveryTaskQueue } from '../services/temporal/task-queues';

export interface WebhookDeliveryInput {
  deliveryId: string;
  /** Wait before each attempt (Standard Webhooks' schedule: 0, 5 s, 5 min, 30 min, 2 h, … 24 h). */
  delaysMs: number[];
  /** Bound of one attempt's HTTP exchange; the activity gets a margin on top for its database work. */
  attemptTimeoutMs: number;
  /** The delivery's workspace: the fairness key of its attempts. Absent in runs started before it was passed. */
  workspaceId?: string;
  /**
   * The queue of its attempts, named by the relay: the deliveries' own, where the delivery workflow
   * itself now runs too. Absent in runs started before (on the service's queue), which derive it.
   */
  attemptsTaskQueue?: string;
}

/** Jitter from the delivery id and attempt number: deterministic on replay, different per delivery. */
export function jittered(delayMs: number, deliveryId: string, attempt: number, ratio = 0.1): number {
  if (delayMs <= 0) return 0;
  let hash = 0x811c9dc5;
  for (const char of `${deliveryId}:${attempt}`) hash = Math.imul(hash ^ char.charCodeAt(0), 0x01000193) >>> 0;
  return Math.round(delayMs * (1 - ratio + (2 * ratio * hash) / 0xffffffff));
}

/**
 * `delivery/<dlv>`: attempts the delivery on the retry schedule until a 2xx, a 410, the endpoint's
 * disabling or the last attempt. A 429 or 503 with Retry-After sets the next wait instead of the
 * schedule. Every attempt is recorded by the activity; a worker lost mid-attempt has the activity
 * retried by Temporal (the receiver may then see the same webhook-id twice, as Standard Webhooks allows).
 */
export async function webhookDelivery(input: WebhookDeliveryInput): Promise<{ outcome: string; attempts: number }> {
  // Attempts run on a task queue of their own (services/temporal/worker.ts): an attempt may wait out
  // its timeout on a receiver that never answers, and on the shared queue a workspace that pointed its
  // endpoints at such a receiver and sent test events held every activity slot of the worker, so the
  // refreshes, purchases, key expiries and erasures of every account waited behind it (a sixteenth
  // probe: a refresh of another account took 88 s instead of 0.3 s). Histories from before keep the
  // shared queue on replay. The workspace is the fairness key of its attempts.
  // Runs started since the workflows themselves moved to that queue (services/webhooks/relay.ts) are
  // told it; their histories never hold the marker below, which changes nothing for them.
  const ownQueue = input.attemptsTaskQueue === undefined && patched('deliveries-on-their-own-task-queue');
  const attemptsQueue = input.attemptsTaskQueue ?? (ownQueue ? deliveryTaskQueue(workflowInfo().taskQueue) : undefined);
  const { attemptDelivery } = proxyActivities<Activities>({
    ...(attemptsQueue !== undefined ? { taskQueue: attemptsQueue } : {}),
    ...(input.workspaceId !== undefined ? { priority: { fairnessKey: input.workspaceId } } : {}),
    startToCloseTimeout: input.attemptTimeoutMs + WEBHOOKS.attemptMarginMs,
    retry: { initialInterval: '1 second', maximumInterval: '5 minutes', maximumAttempts: 50 },
  });
  let wait = input.delaysMs[0] ?? 0;
  for (let i = 0; i < input.delaysMs.length; i += 1) {
    if (wait > 0) await sleep(wait);
    const attempt = { deliveryId: input.deliveryId, number: i + 1, lastAttempt: i === input.delaysMs.length - 1 };
    let result = await attemptDelivery(attempt);
    // Every slot of the account or the endpoint was taken (services/webhooks/attempt-slots.ts): nothing
    // was sent or recorded, and the same attempt is made again later, the waits doubling up to a minute.
    // Histories from before never hold a `busy` answer, so they replay as they ran.
    for (let refusals = 0; result.outcome === 'busy'; refusals += 1) {
      await sleep(jittered(Math.min(WEBHOOKS.firstBusyWaitMs * 2 ** refusals, WEBHOOKS.maxBusyWaitMs), input.deliveryId, -(refusals + 1)));
      result = await attemptDelivery(attempt);
    }
    if (result.outcome !== 'retry') return { outcome: result.outcome, attempts: i + 1 };
    const scheduled = jittered(input.delaysMs[i + 1] ?? 0, input.deliveryId, i + 1);
    // A Retry-After is a least wait, not a replacement: a short one sent at every attempt spent the
    // whole schedule in seconds (a twenty-third probe). Histories recorded before keep their waits.
    if (result.retryAfterMs === null) wait = scheduled;
    else wait = patched('retry-after-is-a-least-wait') ? Math.max(result.retryAfterMs, scheduled) : result.retryAfterMs;
  }
  return { outcome: 'failed', attempts: input.delaysMs.length };
}
