import { Client, WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import type { keyGraceExpiry } from '../../workflows';
import { workflowIds } from './ids';

/**
 * What the API needs from Temporal, in domain terms. Routes never build workflow ids or options
 * themselves, so ids, queues and conflict policies live in one place.
 */
export class TemporalGateway {
  constructor(
    readonly client: Client,
    readonly taskQueue: string,
  ) {}

  async startKeyGrace(keyId: string, graceMs: number): Promise<void> {
    try {
      await this.client.workflow.start<typeof keyGraceExpiry>('keyGraceExpiry', {
        taskQueue: this.taskQueue,
        workflowId: workflowIds.keyGrace(keyId),
        args: [{ keyId, graceMs }],
      });
    } catch (err) {
      // A retried rotation finds its timer already running: that is the outcome we wanted.
      if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
    }
  }

  /** Answers when the frontend service is reachable; throws otherwise. */
  async ping(timeoutMs: number): Promise<void> {
    await this.client.connection.withDeadline(Date.now() + timeoutMs, () =>
      this.client.workflowService.getSystemInfo({}),
    );
  }
}
