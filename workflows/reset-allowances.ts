import { proxyActivities, workflowInfo } from '@temporalio/workflow';
import type { Activities } from '../activities';

const { resetAllowances } = proxyActivities<Activities>({
  startToCloseTimeout: '30 minutes',
  retry: { initialInterval: '5 seconds', maximumInterval: '5 minutes' },
});

/**
 * Run by the `reset-allowances` Schedule on the 1st of each month (UTC): opens the month for every
 * account, one ledger row each. The month is the run's own start time as Temporal records it
 * (deterministic, and skipped along with time on the test server), not the activity's clock.
 * `accountIds` limits a run to some accounts (an operator's run; tests that share a database).
 */
export async function resetAllowancesWorkflow(input: { accountIds?: string[] } = {}): Promise<{ period: string; reset: number }> {
  const period = workflowInfo().runStartTime.toISOString().slice(0, 7);
  return { period, reset: await resetAllowances(period, input.accountIds) };
}
