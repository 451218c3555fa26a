import { Context } from '@temporalio/activity';
import type { ActivityInterceptorsFactory } from '@temporalio/worker';
import type { Logger } from 'pino';

type ActivityInfo = Context['info'];

/** The fields that make an activity's log line findable next to its workflow in the Temporal UI. */
export function activityFields(info: ActivityInfo): Record<string, string | number | undefined> {
  return {
    workflowId: info.workflowExecution?.workflowId,
    workflowType: info.workflowType,
    activityType: info.activityType,
    activityId: info.activityId,
    attempt: info.attempt,
  };
}

/** The logger of the activity running now (inside an activity), else the base logger. */
export function activityLogger(base: Logger): Logger {
  try {
    return base.child(activityFields(Context.current().info));
  } catch {
    // Not inside an activity (e.g. a service called from a test): no activity fields to add.
    return base;
  }
}

/**
 * Logs each activity's end (debug) or failure (warn) with its workflow and activity ids, so an
 * operator can go from a log line to the workflow and back.
 */
export function activityLoggingInterceptor(base: Logger): ActivityInterceptorsFactory {
  return (ctx) => ({
    inbound: {
      async execute(input, next) {
        const logger = base.child(activityFields(ctx.info));
        const started = performance.now();
        try {
          const result = await next(input);
          logger.debug({ durationMs: Math.round(performance.now() - started) }, 'activity completed');
          return result;
        } catch (err) {
          logger.warn({ err, durationMs: Math.round(performance.now() - started) }, 'activity failed');
          throw err;
        }
      },
    },
  });
}
