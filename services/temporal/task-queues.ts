/**
 * The task queue of the fit activity (`fitVersion`) beside the service's task queue: a name derived
 * from it, so that one setting (TEMPORAL_TASK_QUEUE) names both and a workflow finds it from its own.
 * Imported by workflows: no Node.js module here.
 */
export const fitTaskQueue = (taskQueue: string): string => `${taskQueue}-fits`;

/** The task queue of webhook delivery attempts (`attemptDelivery`), named the same way. */
export const deliveryTaskQueue = (taskQueue: string): string => `${taskQueue}-deliveries`;
