import { Client, ScheduleAlreadyRunning, ScheduleOverlapPolicy, type ScheduleOptions } from '@temporalio/client';
import type { Duration } from '@temporalio/common';
import { scheduleIds } from './ids';

/**
 * Creates the service's Temporal Schedules, or brings existing ones to the configured spec and task
 * queue (called at every worker start; several workers starting together converge on the same state).
 */
export async function ensureSchedules(client: Client, taskQueue: string, options: { keySweepEvery: Duration; staleModelsEvery?: Duration }): Promise<void> {
  const desired: ScheduleOptions[] = [
    {
      scheduleId: scheduleIds.sweepEndedKeys,
      spec: { intervals: [{ every: options.keySweepEvery }] },
      action: { type: 'startWorkflow', workflowType: 'sweepEndedKeysWorkflow', taskQueue, args: [], workflowRunTimeout: '5 minutes' },
      // A sweep is short and idempotent: a new one replaces a run that is stuck (e.g. left on the queue
      // of a worker that is gone) instead of being skipped behind it forever.
      policies: { overlap: ScheduleOverlapPolicy.TERMINATE_OTHER, catchupWindow: '1 minute' },
    },
    {
      // model.stale: once a day; a run still going when the next is due is left to finish.
      scheduleId: scheduleIds.markStaleModels,
      spec: { intervals: [{ every: options.staleModelsEvery ?? '1 day' }] },
      action: { type: 'startWorkflow', workflowType: 'markStaleModelsWorkflow', taskQueue, args: [], workflowRunTimeout: '2 hours' },
      policies: { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: '1 hour' },
    },
    {
      // The allowance period is the calendar month in UTC. A run missed while Temporal was down is
      // caught up within the day; the lazy reset at the first charge covers the rest.
      scheduleId: scheduleIds.resetAllowances,
      spec: { calendars: [{ dayOfMonth: 1, hour: 0, minute: 0 }], timezone: 'UTC' },
      action: { type: 'startWorkflow', workflowType: 'resetAllowancesWorkflow', taskQueue, args: [], workflowRunTimeout: '1 hour' },
      policies: { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: '1 day' },
    },
  ];
  for (const schedule of desired) await ensureSchedule(client, schedule);
}

async function ensureSchedule(client: Client, desired: ScheduleOptions): Promise<void> {
  try {
    await client.schedule.create(desired);
  } catch (err) {
    if (!(err instanceof ScheduleAlreadyRunning)) throw err;
    await client.schedule.getHandle(desired.scheduleId).update((previous) => ({
      ...previous,
      spec: desired.spec,
      action: desired.action,
      policies: { ...previous.policies, ...desired.policies },
    }));
  }
}
