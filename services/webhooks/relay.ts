import { WorkflowExecutionAlreadyStartedError, WorkflowIdReusePolicy, type Client } from '@temporalio/client';
import type { MikroORM } from '@mikro-orm/postgresql';
import pLimit from 'p-limit';
import type { Logger } from 'pino';
import { WEBHOOKS } from '../../config/webhooks';
import { workflowStarts } from '../metrics';
import { workflowIds } from '../temporal/ids';
import { deliveryTaskQueue } from '../temporal/task-queues';
import type { webhookDelivery } from '../../workflows';

/** Workflow starts one relay pass has in flight at once (each a round trip to Temporal). */
const RELAY_STARTS_AT_ONCE = 8;

export interface RelaySettings {
  everyMs: number;
  delaysMs: number[];
  attemptTimeoutMs: number;
}

/**
 * The outbox relay: starts `delivery/<dlv>` for every committed delivery whose workflow has not
 * started. Emitters only write rows in their own transaction; whatever dies between that commit and
 * the start (an API process, a worker), the next pass of any worker's relay starts it. A delivery is
 * claimed for a lease first, so relays of several workers do not start the same ones; a relay that
 * dies after claiming leaves them to another after the lease. Temporal refuses a second start of the
 * same id (REJECT_DUPLICATE), so a delivery never runs twice.
 */
export class DeliveryRelay {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> = Promise.resolve();
  private stopped = false;

  constructor(
    private readonly orm: MikroORM,
    private readonly client: Client,
    private readonly taskQueue: string,
    private readonly settings: RelaySettings,
    private readonly logger: Logger,
  ) {}

  start(): void {
    const tick = () => {
      this.running = this.dispatch()
        .then(() => undefined)
        .catch((err: unknown) => this.logger.warn({ err }, 'webhook relay pass failed'))
        .finally(() => {
          if (!this.stopped) this.timer = setTimeout(tick, this.settings.everyMs);
        });
    };
    tick();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.running;
  }

  /**
   * One pass: claims up to 100 undispatched deliveries, workspace by workspace in turn (each one's
   * oldest first), and starts their workflows, several at once. First come, first served, one
   * workspace's 150 test events delayed another account's event by 20 s (a twenty-sixth probe).
   */
  async dispatch(): Promise<number> {
    const em = this.orm.em.fork();
    const claimed = await em.getConnection().execute<Array<{ id: string; workspace_id: string; account_id: string | null }>>(
      `update webhook_deliveries set dispatch_claimed_until = now() + make_interval(secs => ?)
        where id in (select id from webhook_deliveries
                      where id in (select id from (select id, created_at, row_number() over (partition by workspace_id order by created_at) as turn
                                                     from webhook_deliveries
                                                    where dispatched_at is null and (dispatch_claimed_until is null or dispatch_claimed_until < now())) waiting
                                    order by turn, created_at limit 100)
                        and dispatched_at is null and (dispatch_claimed_until is null or dispatch_claimed_until < now())
                      for update skip locked)
        returning id, workspace_id, (select account_id from workspaces where workspaces.id = webhook_deliveries.workspace_id) as account_id`,
      [WEBHOOKS.dispatchLeaseMs / 1000],
    );
    const started: string[] = [];
    const limit = pLimit(RELAY_STARTS_AT_ONCE);
    const queue = deliveryTaskQueue(this.taskQueue);
    await Promise.all(claimed.map(({ id, workspace_id: workspaceId, account_id: accountId }) => limit(async () => {
      try {
        // On the deliveries' own queue, account by account: a backlog of deliveries waiting for attempt
        // slots wakes often, and on the service's queue an account's 500 test events at receivers that
        // never answer delayed every account's trainings by a minute and its paid purchases' settlement
        // by two (a twenty-seventh probe), and other accounts' deliveries by minutes.
        await this.client.workflow.start<typeof webhookDelivery>('webhookDelivery', {
          taskQueue: queue,
          workflowId: workflowIds.delivery(id),
          workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
          ...(accountId ? { priority: { fairnessKey: accountId } } : {}),
          args: [{ deliveryId: id, delaysMs: this.settings.delaysMs, attemptTimeoutMs: this.settings.attemptTimeoutMs, workspaceId, attemptsTaskQueue: queue }],
        });
        workflowStarts.inc({ workflow_type: 'webhookDelivery' });
      } catch (err) {
        if (!(err instanceof WorkflowExecutionAlreadyStartedError)) {
          this.logger.warn({ err, deliveryId: id }, 'could not start a webhook delivery; the relay will retry after the lease');
          return;
        }
      }
      started.push(id);
    })));
    if (started.length) {
      await em.getConnection().execute(`update webhook_deliveries set dispatched_at = now() where id in (${started.map(() => '?').join(',')})`, started);
    }
    return started.length;
  }
}
