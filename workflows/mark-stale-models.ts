import { proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../activities';

const { markStaleModels } = proxyActivities<Activities>({
  startToCloseTimeout: '30 minutes',
  heartbeatTimeout: '2 minutes',
  retry: { maximumAttempts: 3 },
});

/** Run by the `mark-stale-models` Schedule (daily): emits model.stale once per stale episode. */
export async function markStaleModelsWorkflow(): Promise<{ opened: number; closed: number; failed: number }> {
  return markStaleModels();
}
