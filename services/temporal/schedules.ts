import { Client, ScheduleAlreadyRunning, ScheduleOverlapPolicy } from '@temporalio/client';
import type { Duration } from '@temporalio/common';
import { scheduleIds } from './ids';

/**
 * Creates the service's Temporal Schedules if they do not exist yet (called at worker start-up;
 * idempotent, so several workers starting together are fine).
 */
export async function ensureSchedules(client: Client, taskQueue: string, options: { keySweepEvery: Duration }): Promise<void> {
  try {
    await client.schedule.create({
      scheduleId: scheduleIds.sweepEndedKeys,
      spec: { intervals: [{ every: options.keySweepEvery }] },
      action: { type: 'startWorkflow', workflowType: 'sweepEndedKeysWorkflow', taskQueue, args: [] },
      policies: { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: '1 minute' },
    });
  } catch (err) {
    if (!(err instanceof ScheduleAlreadyRunning)) throw err;
  }
}
