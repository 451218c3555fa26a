import type { MessagePort } from 'node:worker_threads';
import type { Model, ModelVersion } from '../db/entities';
import { fromCarried, type CarriedError } from './errors';
import { bufferOf } from './bytes';
import type { AnalysedTrainingSet } from './models';
import type { TrainingFields } from './training-body';
import type { SeriesFields } from './series-body';
import type { PackedSeries } from './series-checks';
import type { BacktestAnswer } from './backtest-rows';
import type { ValidationReport } from './validation-rows';

/**
 * What a staged prediction's thread reads: a JSON body (as the route reads it, fingerprinted for its
 * Idempotency-Key there), or an uploaded file (as datasetRows reads it; its call fingerprinted it).
 */
export type StagedPredictionSource =
  | { kind: 'json'; bytes: Uint8Array; method: string; path: string }
  | { kind: 'file'; name: string | null; mimetype: string | null; content: Uint8Array };

/** What the API asks of the thread that holds a call's rows. */
export type StageRequest =
  | { kind: 'check'; model: Pick<Model, 'featureColumns' | 'target'>; report: ModelVersion['report'] }
  | { kind: 'score'; versionId: string; artefact?: string; ids: string[] }
  | { kind: 'end' };

/** What the thread answers: the first message after parsing, then one for each request. */
export type StageReply =
  | { kind: 'staged'; count: number; fingerprint: string }
  | { kind: 'checked' }
  | { kind: 'miss' }
  | { kind: 'scored'; outputs: Array<Record<string, unknown>>; featuresJson: Uint8Array }
  | { kind: 'refused'; error: CarriedError };

/** How long a thread holding a call's rows waits for the API's next request before it lets them go. */
export const STAGED_IDLE_MS = 60_000;

/**
 * The rows of a large prediction body, parsed, validated and held by one engine thread for the
 * length of the call (EnginePool.stagePredictBody): the API's event loop never parses them, never
 * walks them and never receives them back. It asks the thread to check them against the model, then
 * to score them, and gets the answer's rows and the features' JSON in UTF-8 (what the call stores,
 * handed to PostgreSQL as they are) in return.
 * The thread is the call's until `end()` (or STAGED_IDLE_MS without a request): it answers every
 * request by a message and never ends on its own, so that its task's end always means it gave up.
 */
export class StagedRows implements StagedBody {
  private readonly inbox: StageReply[] = [];
  private waiter: ((reply: StageReply) => void) | null = null;
  private ended = false;
  private staged: { count: number; fingerprint: string } | null = null;

  private constructor(
    private readonly port: MessagePort,
    /** The thread's task: settles when the thread lets the rows go, rejects if it failed. */
    private readonly task: Promise<unknown>,
  ) {
    // Its failure is read by the next wait for an answer; never an unhandled rejection meanwhile.
    task.catch(() => undefined);
    port.on('message', (reply: StageReply) => this.receive(reply));
  }

  /** Waits for the thread's first answer: the rows staged, or the body's refusal (thrown). */
  static async open(port: MessagePort, task: Promise<unknown>): Promise<StagedRows> {
    const rows = new StagedRows(port, task);
    const first = await rows.next();
    if (first.kind !== 'staged') {
      rows.end();
      throw replyError(first);
    }
    rows.staged = { count: first.count, fingerprint: first.fingerprint };
    return rows;
  }

  /** How many rows the body holds. */
  get count(): number {
    return this.staged?.count ?? 0;
  }

  /** The Idempotency-Key fingerprint of the body (services/idempotency.ts requestFingerprint). */
  get fingerprint(): string {
    return this.staged?.fingerprint ?? '';
  }

  /** The body's fields besides its rows: a prediction has none. */
  get body(): Record<string, never> {
    return {};
  }

  /** The column checks of checkPredictionRows; COLUMN_MISMATCH or SCHEMA_MISMATCH thrown. */
  async check(model: Pick<Model, 'featureColumns' | 'target'>, version: Pick<ModelVersion, 'report'>): Promise<void> {
    const reply = await this.ask({ kind: 'check', model: { featureColumns: model.featureColumns, target: model.target }, report: version.report });
    if (reply.kind !== 'checked') throw replyError(reply);
  }

  /** Scores the rows with a version (its artefact read only when the thread has not cached it); the thread then lets them go. */
  async score(versionId: string, artefact: () => Promise<string>, ids: string[]): Promise<{ outputs: Array<Record<string, unknown>>; featuresJson: Buffer }> {
    let reply = await this.ask({ kind: 'score', versionId, ids });
    if (reply.kind === 'miss') reply = await this.ask({ kind: 'score', versionId, ids, artefact: await artefact() });
    this.end();
    if (reply.kind !== 'scored') throw replyError(reply);
    return { outputs: reply.outputs, featuresJson: bufferOf(reply.featuresJson) };
  }

  /** Lets the thread go (idempotent); every call that staged rows ends them, whatever happened. */
  end(): void {
    if (this.ended) return;
    this.ended = true;
    this.port.postMessage({ kind: 'end' } satisfies StageRequest);
  }

  private receive(reply: StageReply): void {
    const wake = this.waiter;
    this.waiter = null;
    if (wake) wake(reply);
    else this.inbox.push(reply);
  }

  private async ask(request: StageRequest): Promise<StageReply> {
    if (this.ended) throw new Error('the staged rows were already let go');
    this.port.postMessage(request);
    return this.next();
  }

  private async next(): Promise<StageReply> {
    const queued = this.inbox.shift();
    if (queued) return queued;
    return Promise.race([
      new Promise<StageReply>((resolve) => (this.waiter = resolve)),
      // A thread that failed or gave up answers nothing more: its task's end is the answer.
      this.task.then(() => {
        throw new Error('the engine thread let the staged rows go before answering');
      }),
    ]);
  }
}

function replyError(reply: StageReply): Error {
  if (reply.kind === 'refused') return fromCarried(reply.error);
  return new Error(`unexpected answer from the engine thread: ${reply.kind}`);
}

/**
 * A large body read on an engine thread for its route (RouteDef `stagedBody`): the validated fields
 * the handler gets as its body, the fingerprint the Idempotency-Key is claimed with, and `end()`,
 * which every call runs whatever happened.
 */
export interface StagedBody {
  readonly body: unknown;
  readonly fingerprint: string;
  end(): void;
}

/** A new model's large body, read, checked and analysed by a thread (services/training-body.ts): nothing is held there. */
export class StagedTrainingSet implements StagedBody {
  constructor(
    readonly body: TrainingFields,
    readonly dataset: AnalysedTrainingSet,
    readonly fingerprint: string,
  ) {}

  end(): void {}
}

/** A validation's large body, read and validated by a thread as free work (services/validation-body.ts): its report. */
export class StagedValidation implements StagedBody {
  constructor(
    readonly body: TrainingFields,
    readonly report: ValidationReport,
    readonly fingerprint: string,
  ) {}

  end(): void {}
}

/** A forecast's large body, read, checked and prepared by a thread (services/series-body.ts): its series come back packed. */
export class StagedForecast implements StagedBody {
  constructor(
    readonly body: SeriesFields,
    readonly prepared: PackedSeries,
    readonly fingerprint: string,
  ) {}

  end(): void {}
}

/** A backtest's large body, read and backtested by a thread as free work (services/series-body.ts): its answer. */
export class StagedBacktest implements StagedBody {
  constructor(
    readonly body: SeriesFields,
    readonly answer: BacktestAnswer,
    readonly fingerprint: string,
  ) {}

  end(): void {}
}
