import { proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../activities';

const { sweepEndedKeys } = proxyActivities<Activities>({
  startToCloseTimeout: '1 minute',
  retry: { maximumAttempts: 3 },
});

/**
 * Run by the `sweep-ended-keys` Schedule: marks keys past `expires_at` (and overdue rotations)
 * revoked, and prunes idempotency records and request-log entries past their retention.
 */
export async function sweepEndedKeysWorkflow(): Promise<{ expired: number; ended: number; idempotencyPruned: number; requestLogPruned: number }> {
  return sweepEndedKeys();
}
