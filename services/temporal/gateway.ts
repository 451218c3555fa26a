import { Client, WorkflowExecutionAlreadyStartedError, WorkflowFailedError, WorkflowIdConflictPolicy } from '@temporalio/client';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import type { creditPurchase, deleteAccount, integration, keyGraceExpiry, refreshModel, trainModel } from '../../workflows';
import type { RefreshResult } from '../../workflows/train-model';
import type { PurchaseSignal } from '../billing';
import { AppError } from '../errors';
import { workflowFailures, workflowStarts } from '../metrics';
import { workflowIds } from './ids';

/** The engine's data refusal, carried through a failed workflow, back as the contract's 422. */
function dataRefusal(err: unknown): AppError | null {
  if (!(err instanceof WorkflowFailedError)) return null;
  let cause: unknown = err.cause;
  while (cause && !(cause instanceof ApplicationFailure)) cause = (cause as { cause?: unknown }).cause;
  if (cause instanceof ApplicationFailure && cause.type === 'EngineDataError') {
    const code = (cause.details?.[0] as { code?: string } | undefined)?.code ?? 'DATA_INVALID';
    return new AppError('DATA_VALIDATION_FAILED', 422, cause.message, { report: { valid: false, errors: [{ code, message: cause.message }] } });
  }
  return null;
}

/**
 * A training or refresh cancelled under the caller: only a deletion (of the model, or of its account)
 * cancels them (cancelModelWork, the account's erasure), so the caller gets what a call after the
 * deletion gets, 404.
 */
function cancelledByDeletion(err: unknown, what: string): AppError | null {
  if (!(err instanceof WorkflowFailedError)) return null;
  for (let cause: unknown = err.cause; cause; cause = (cause as { cause?: unknown }).cause) {
    if (cause instanceof CancelledFailure) return new AppError('NOT_FOUND', 404, `The model was deleted while it ${what}.`);
  }
  return null;
}

/**
 * What the API needs from Temporal, in domain terms. Routes never build workflow ids or options
 * themselves, so ids, queues and conflict policies live in one place.
 */
export class TemporalGateway {
  constructor(
    readonly client: Client,
    readonly taskQueue: string,
    readonly fitHeartbeatTimeoutMs = 30_000,
  ) {}

  async startKeyGrace(keyId: string, graceMs: number): Promise<void> {
    try {
      await this.client.workflow.start<typeof keyGraceExpiry>('keyGraceExpiry', {
        taskQueue: this.taskQueue,
        workflowId: workflowIds.keyGrace(keyId),
        args: [{ keyId, graceMs }],
      });
      workflowStarts.inc({ workflow_type: 'keyGraceExpiry' });
    } catch (err) {
      // A retried rotation finds its timer already running: that is the outcome we wanted.
      if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
    }
  }

  /** Starts the erasure of an account marked deleted; a start that finds it running is what we wanted. */
  async startAccountDeletion(accountId: string): Promise<void> {
    try {
      await this.client.workflow.start<typeof deleteAccount>('deleteAccount', {
        taskQueue: this.taskQueue,
        workflowId: workflowIds.deleteAccount(accountId),
        args: [{ accountId }],
      });
      workflowStarts.inc({ workflow_type: 'deleteAccount' });
    } catch (err) {
      if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
    }
  }

  /** Starts `train/<mdl>` and waits for the trained version (the route answers 201 with it). */
  async trainModel(modelId: string, accountId: string): Promise<{ versionId: string; number: number }> {
    const handle = await this.client.workflow.start<typeof trainModel>('trainModel', {
      taskQueue: this.taskQueue,
      workflowId: workflowIds.train(modelId),
      args: [{ modelId, accountId, heartbeatTimeoutMs: this.fitHeartbeatTimeoutMs }],
    });
    workflowStarts.inc({ workflow_type: 'trainModel' });
    let trained;
    try {
      trained = await handle.result();
    } catch (err) {
      workflowFailures.inc({ workflow_type: 'trainModel' });
      throw dataRefusal(err) ?? cancelledByDeletion(err, 'trained') ?? err;
    }
    if (!trained) throw new AppError('NOT_FOUND', 404, 'The model was deleted while it trained.');
    return trained;
  }

  /**
   * Cancels the training, refresh and integration of a deleted model. Best effort: a fit that still
   * finishes finds the model deleted and stores nothing.
   */
  async cancelModelWork(modelId: string): Promise<void> {
    const ids = [workflowIds.train(modelId), workflowIds.refresh(modelId), workflowIds.integrate(modelId)];
    await Promise.all(ids.map((id) => this.client.workflow.getHandle(id).cancel().catch(() => undefined)));
  }

  /** Runs `refresh/<mdl>`; a refresh already running answers 409 (id conflict policy FAIL). */
  async refreshModel(modelId: string, accountId: string): Promise<RefreshResult | null> {
    let handle;
    try {
      handle = await this.client.workflow.start<typeof refreshModel>('refreshModel', {
        taskQueue: this.taskQueue,
        workflowId: workflowIds.refresh(modelId),
        workflowIdConflictPolicy: WorkflowIdConflictPolicy.FAIL,
        args: [{ modelId, accountId, heartbeatTimeoutMs: this.fitHeartbeatTimeoutMs }],
      });
    } catch (err) {
      if (err instanceof WorkflowExecutionAlreadyStartedError) {
        throw new AppError('UPDATE_IN_PROGRESS', 409, 'An update of this model is already running; retry when it has finished.');
      }
      throw err;
    }
    workflowStarts.inc({ workflow_type: 'refreshModel' });
    try {
      return await handle.result();
    } catch (err) {
      workflowFailures.inc({ workflow_type: 'refreshModel' });
      throw dataRefusal(err) ?? cancelledByDeletion(err, 'refreshed') ?? err;
    }
  }

  /** Signals (starting it when needed) `integrate/<mdl>` that an outcomes batch arrived. */
  async signalIntegration(modelId: string, accountId: string, count: number): Promise<void> {
    await this.client.workflow.signalWithStart<typeof integration, [{ count: number }]>('integration', {
      taskQueue: this.taskQueue,
      workflowId: workflowIds.integrate(modelId),
      args: [{ modelId, accountId, heartbeatTimeoutMs: this.fitHeartbeatTimeoutMs }],
      signal: 'outcomesReceived',
      signalArgs: [{ count }],
    });
    workflowStarts.inc({ workflow_type: 'integration' });
  }

  /** Starts `purchase/<pur>`, which waits `waitMs` for its settlement before asking Stripe. */
  async startPurchase(purchaseId: string, waitMs: number): Promise<void> {
    await this.client.workflow.start<typeof creditPurchase>('creditPurchase', {
      taskQueue: this.taskQueue,
      workflowId: workflowIds.purchase(purchaseId),
      args: [{ purchaseId, waitMs }],
    });
    workflowStarts.inc({ workflow_type: 'creditPurchase' });
  }

  /**
   * Tells `purchase/<pur>` how its payment ended, starting it when it is not running (its start was
   * lost, or it already ended: a new run settles nothing twice).
   */
  async signalPurchase(purchaseId: string, signal: PurchaseSignal, waitMs: number): Promise<void> {
    await this.client.workflow.signalWithStart<typeof creditPurchase, [PurchaseSignal]>('creditPurchase', {
      taskQueue: this.taskQueue,
      workflowId: workflowIds.purchase(purchaseId),
      args: [{ purchaseId, waitMs }],
      signal: 'purchaseOutcome',
      signalArgs: [signal],
    });
  }

  /** Answers when the frontend service is reachable; throws otherwise. */
  async ping(timeoutMs: number): Promise<void> {
    await this.client.connection.withDeadline(Date.now() + timeoutMs, () =>
      this.client.workflowService.getSystemInfo({}),
    );
  }
}
