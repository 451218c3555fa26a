import os from 'node:os';
import path from 'node:path';
import { MessageChannel } from 'node:worker_threads';
import { Piscina } from 'piscina';
import { LRUCache } from 'lru-cache';
import { predictRows, type DataReport, type Prediction, type TabularModel } from '../engines/tabular';
import { AppError, fromCarried, unservableVersion } from './errors';
import { bufferOf, movable } from './bytes';
import { FreeWorkQueue, type FreeCall } from './free-work';
import { stagedBodies, watchEnginePool } from './metrics';
import { StagedBacktest, StagedForecast, StagedRows, StagedTrainingSet, StagedValidation, type StagedPredictionSource } from './staged-bodies';
import type { PlanName } from '../config/plans';
import type { Row } from './datasets';
import type { SeriesForecast } from '../engines/forecast';
import type { Carried, Outcome, SeriesRequest, TrainOutput, TrainTask } from './engine-worker';
import type { ReadTrainingBody } from './training-body';
import type { ReadValidationBody } from './validation-body';
import type { ValidationReport, ValidationRequest } from './validation-rows';
import type { ReadBacktestBody, ReadForecastBody } from './series-body';
import type { BacktestAnswer, BacktestRequest } from './backtest-rows';
import type { PackedSeries, SeriesColumns } from './series-checks';

/** Batches up to this many rows are scored on the main thread once the version is loaded there. */
export const INLINE_MAX_ROWS = 16;

/**
 * Batches of at least this many rows are spread over the threads: scoring costs about 14 µs a row
 * (adult), so a part this size outweighs the thread hop (about 0.1 ms) it adds.
 */
export const SPLIT_MIN_ROWS = 128;

/** An uploaded file, as the pool moves it to a thread. */
export type UploadedFileBytes = { name: string | null; mimetype: string | null; content: Buffer };

/** Cuts rows into at most `parts` contiguous runs of nearly equal length (order kept). */
export function splitEvenly<T>(rows: T[], parts: number): T[][] {
  const n = Math.max(1, Math.min(parts, rows.length));
  const out: T[][] = [];
  for (let i = 0; i < n; i++) out.push(rows.slice(Math.floor((i * rows.length) / n), Math.floor(((i + 1) * rows.length) / n)));
  return out;
}

/** An engine refusal that crossed the thread boundary (errors are cloned, not their classes). */
export class EngineDataError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** A worker function's Carried answer: its value, or the AppError it carried, thrown. */
async function answerOf<T>(task: Promise<unknown>): Promise<T> {
  const outcome = (await task) as Carried<T>;
  if (!outcome.ok) throw fromCarried(outcome.error);
  return outcome.value;
}

function unwrap<T>(outcome: Outcome<T>): T {
  if (!outcome.ok) throw new EngineDataError(outcome.code, outcome.message);
  return outcome.value;
}


/**
 * The worker-thread pool that runs engine code. From sources (development, tests) each thread loads
 * the TypeScript worker through tsx (engine-worker-entry.cjs); compiled output needs nothing.
 */
export class EnginePool {
  private readonly pool: Piscina;
  private readonly unwatch: () => void;
  /**
   * Models also loaded on this (the main) thread, to score small batches without a thread hop: one
   * row costs microseconds, while handing it to a thread and back costs two thread wake-ups, which
   * dominated a one-row call. Bounded in bytes like each thread's cache; filled in the background from
   * a thread's loaded copy (structured clone), never by parsing an artefact here.
   */
  private readonly inlineModels: LRUCache<string, { model: TabularModel; bytes: number }>;
  private readonly adopting = new Set<string>();
  /**
   * The free calls' engine work runs on at most threads - 1 threads (at least one), the rest waiting
   * in turns by account, bounded per account and in total (free-work.ts): a backtest or a
   * validation's trial is free and may run for a minute, and a seventh probe's two concurrent free
   * backtests of 5,000 small series, from two accounts, held both threads of a 2-thread pool for 20 s,
   * during which another account's paid forecast of one series waited as long. A paid call now always
   * finds a thread that no free work can take (its parts queue for it in order).
   */
  readonly freeWork: FreeWorkQueue;

  constructor(
    readonly threads = Math.max(1, os.availableParallelism()),
    minThreads = 1,
    /** Budget of each thread's cache of loaded models. */
    modelCacheBytes = 256 * 1024 * 1024,
  ) {
    const fromSource = __filename.endsWith('.ts');
    this.pool = new Piscina({
      filename: path.resolve(__dirname, fromSource ? 'engine-worker-entry.cjs' : 'engine-worker.js'),
      execArgv: [],
      minThreads: Math.min(minThreads, threads),
      maxThreads: threads,
      idleTimeout: 60_000,
      workerData: { modelCacheBytes },
    });
    this.inlineModels = new LRUCache({ maxSize: modelCacheBytes, sizeCalculation: (entry) => Math.max(1, entry.bytes) });
    this.freeWork = new FreeWorkQueue(Math.max(1, threads - 1));
    this.unwatch = watchEnginePool(() => ({ queueSize: this.pool.queueSize, utilization: this.pool.utilization, threads: this.pool.threads.length }));
  }

  async train(
    task: Omit<TrainTask, 'progressPort'>,
    options: { onProgress?: (p: { done: number; total: number }) => void; signal?: AbortSignal } = {},
  ): Promise<TrainOutput> {
    const channel = new MessageChannel();
    channel.port1.on('message', (p: { done: number; total: number }) => options.onProgress?.(p));
    try {
      return unwrap(
        (await this.pool.run(
          { ...task, progressPort: channel.port2 },
          { name: 'train', transferList: [channel.port2], signal: options.signal },
        )) as Outcome<TrainOutput>,
      );
    } finally {
      channel.port1.close();
    }
  }

  /**
   * Scores rows with a version. The artefact (often megabytes) crosses to a thread only when that
   * thread has not cached the version yet, and is read at most once per call. A large batch is cut
   * into one contiguous part per thread: rows are scored independently, so the answers are those of
   * one thread scoring them all, in the time of the slowest part when the other threads are free.
   */
  async predict(versionId: string, artefact: () => Promise<string>, rows: Row[]): Promise<Prediction[]> {
    if (rows.length <= INLINE_MAX_ROWS) {
      const inline = this.inlineModels.get(versionId);
      if (inline) return predictRows(inline.model, rows);
    }
    let read: Promise<string> | undefined;
    const artefactOnce = () => (read ??= artefact());
    const parts = rows.length >= SPLIT_MIN_ROWS ? splitEvenly(rows, this.threads) : [rows];
    const answers = await Promise.all(parts.map((part) => this.predictOnThread(versionId, artefactOnce, part)));
    if (rows.length <= INLINE_MAX_ROWS) this.adoptInline(versionId, artefact);
    return answers.length === 1 ? answers[0]! : answers.flat();
  }

  private async predictOnThread(versionId: string, artefact: () => Promise<string>, rows: Row[]): Promise<Prediction[]> {
    type Answer = Prediction[] | { miss: true } | { unservable: string };
    let answer = (await this.pool.run({ versionId, rows }, { name: 'predict' })) as Answer;
    if (!Array.isArray(answer) && 'miss' in answer) answer = (await this.pool.run({ versionId, artefact: await artefact(), rows }, { name: 'predict' })) as Answer;
    if (Array.isArray(answer)) return answer;
    if ('unservable' in answer) throw unservableVersion(answer.unservable);
    throw new Error('the engine worker asked twice for the artefact');
  }

  /**
   * Reads a large prediction body on a thread, which keeps its rows for the call (StagedRows): the
   * bytes are moved there, not copied, and the rows never come back. A refused body is thrown.
   */
  async stagePredictBody(body: Buffer, request: { method: string; path: string }): Promise<StagedRows> {
    const bytes = movable(body);
    return this.stagePrediction({ kind: 'json', bytes, ...request }, bytes);
  }

  /**
   * The same for an uploaded file (CSV or JSON rows, read as datasetRows reads it): its rows are
   * parsed on the thread and stay there, where a parsed file's rows came back by structured clone.
   */
  async stagePredictFile(file: UploadedFileBytes): Promise<StagedRows> {
    const content = movable(file.content);
    return this.stagePrediction({ kind: 'file', name: file.name, mimetype: file.mimetype, content }, content);
  }

  /** `bytes`: the source's bytes, moved to the thread. */
  private async stagePrediction(source: StagedPredictionSource, bytes: Uint8Array): Promise<StagedRows> {
    const channel = new MessageChannel();
    // A call's port alone never keeps the process alive.
    channel.port1.unref();
    const task = this.pool.run(
      { source, port: channel.port2 },
      { name: 'stagePredictBody', transferList: [channel.port2, bytes.buffer as ArrayBuffer] },
    );
    try {
      const staged = await StagedRows.open(channel.port1, task);
      stagedBodies.inc({ outcome: 'staged' });
      return staged;
    } catch (err) {
      if (err instanceof AppError) stagedBodies.inc({ outcome: 'refused' });
      throw err;
    }
  }

  /** Reads a large training body on a thread (services/training-body.ts): its fields, its rows gzipped for the context, or its refusal (thrown). */
  async stageTrainingBody(body: Buffer, request: { method: string; path: string; plan: PlanName }): Promise<StagedTrainingSet> {
    const { fields, dataset, fingerprint } = await this.stageBody<ReadTrainingBody>('stageTrainingBody', body, request);
    return new StagedTrainingSet(fields, { ...dataset, context: bufferOf(dataset.context) }, fingerprint);
  }

  /**
   * Reads and validates a large validation body on a thread (services/validation-body.ts), as free work:
   * its fields and its report, or its refusal (thrown).
   */
  async stageValidationBody(call: FreeCall, body: Buffer, request: { method: string; path: string; plan: PlanName }): Promise<StagedValidation> {
    const { fields, report, fingerprint } = await this.freeWork.run(call, () => this.stageBody<ReadValidationBody>('stageValidationBody', body, request));
    return new StagedValidation(fields, report, fingerprint);
  }

  /** Reads a large forecast body on a thread (services/series-body.ts): its fields and its series prepared, or its refusal (thrown). */
  async stageForecastBody(body: Buffer, request: { method: string; path: string }): Promise<StagedForecast> {
    const { fields, prepared, fingerprint } = await this.stageBody<ReadForecastBody>('stageForecastBody', body, { ...request, parts: this.threads });
    return new StagedForecast(fields, prepared, fingerprint);
  }

  /** Reads a forecast's large uploaded file on a thread (services/series-body.ts): its series prepared, or its refusal (thrown). */
  async stageForecastFile(file: UploadedFileBytes, columns: SeriesColumns): Promise<PackedSeries> {
    return this.stageFile<PackedSeries>('stageForecastFile', file, { columns, parts: this.threads });
  }

  /** Reads and backtests a large backtest body on a thread (services/series-body.ts), as free work: its fields and its answer, or its refusal (thrown). */
  async stageBacktestBody(call: FreeCall, body: Buffer, request: { method: string; path: string }): Promise<StagedBacktest> {
    const { fields, answer, fingerprint } = await this.freeWork.run(call, () => this.stageBody<ReadBacktestBody>('stageBacktestBody', body, request));
    return new StagedBacktest(fields, answer, fingerprint);
  }

  /** Backtests a large uploaded file on the thread that parses it (services/series-body.ts), as free work; its refusal thrown. */
  async backtestFile(call: FreeCall, file: UploadedFileBytes, request: BacktestRequest): Promise<BacktestAnswer> {
    return this.freeWork.run(call, () => this.stageFile<BacktestAnswer>('backtestFile', file, { request }));
  }

  /** Backtests rows on a thread (services/backtest-rows.ts), as free work; its refusal thrown. */
  async backtest(call: FreeCall, rows: Row[], request: BacktestRequest): Promise<BacktestAnswer> {
    return this.freeWork.run(call, () => answerOf<BacktestAnswer>(this.pool.run({ rows, request }, { name: 'backtest' })));
  }

  /** Validates a validation's large uploaded file on the thread that parses it (services/validation-body.ts), as free work; its refusal thrown. */
  async validateFile(call: FreeCall, file: UploadedFileBytes, request: ValidationRequest): Promise<ValidationReport> {
    return this.freeWork.run(call, () => this.stageFile<ValidationReport>('validateFile', file, { request }));
  }

  /** Validates rows on a thread (services/validation-rows.ts), as free work; its refusal thrown. */
  async validate(call: FreeCall, rows: Row[], request: ValidationRequest): Promise<ValidationReport> {
    return this.freeWork.run(call, () => answerOf<ValidationReport>(this.pool.run({ rows, request }, { name: 'validate' })));
  }

  /** Moves an uploaded file's bytes to a thread that reads it as its route does (`name`, a staging function of the worker); counted by outcome. */
  private async stageFile<T>(name: string, file: UploadedFileBytes, task: object): Promise<T> {
    const content = movable(file.content);
    return this.staging<T>(this.pool.run({ file: { name: file.name, mimetype: file.mimetype, content }, ...task }, { name, transferList: [content.buffer as ArrayBuffer] }));
  }

  /** Moves a large body's bytes to a thread that reads it as its route does (`name`, a staging function of the worker); counted by outcome. */
  private async stageBody<T>(name: string, body: Buffer, request: object): Promise<T> {
    const bytes = movable(body);
    return this.staging<T>(this.pool.run({ body: bytes, ...request }, { name, transferList: [bytes.buffer as ArrayBuffer] }));
  }

  /** A staging task's answer, or its refusal thrown; counted by outcome. */
  private async staging<T>(task: Promise<unknown>): Promise<T> {
    const outcome = (await task) as Carried<T>;
    if (!outcome.ok) {
      stagedBodies.inc({ outcome: 'refused' });
      throw fromCarried(outcome.error);
    }
    stagedBodies.inc({ outcome: 'staged' });
    return outcome.value;
  }

  /** Whether small batches of this version are scored on the main thread (what the tests observe). */
  scoresInline(versionId: string): boolean {
    return this.inlineModels.has(versionId);
  }

  /** Copies a thread's loaded model to the main thread, once at a time per version, off the call's path. */
  private adoptInline(versionId: string, artefact: () => Promise<string>): void {
    if (this.adopting.has(versionId) || this.inlineModels.has(versionId)) return;
    this.adopting.add(versionId);
    const adopt = async () => {
      type Exported = { model: TabularModel; bytes: number } | { miss: true } | { unservable: string };
      let exported = (await this.pool.run({ versionId }, { name: 'exportModel' })) as Exported;
      if ('miss' in exported) exported = (await this.pool.run({ versionId, artefact: await artefact() }, { name: 'exportModel' })) as Exported;
      if ('model' in exported) this.inlineModels.set(versionId, exported);
    };
    // A failed copy only leaves the version to the threads; the next small call tries again.
    adopt()
      .catch(() => undefined)
      .finally(() => this.adopting.delete(versionId));
  }

  async analyse(rows: Row[], target: string, task?: 'classification' | 'regression'): Promise<DataReport> {
    return unwrap((await this.pool.run({ rows, target, task }, { name: 'analyse' })) as Outcome<DataReport>);
  }

  /** Parses an uploaded dataset file on a thread; its refusals come back as the same AppErrors. */
  async parseUpload(file: UploadedFileBytes, textColumns?: readonly string[]): Promise<Row[]> {
    return answerOf<Row[]>(this.pool.run({ name: file.name, mimetype: file.mimetype, content: file.content, textColumns: textColumns ? [...textColumns] : undefined }, { name: 'parseUpload' }));
  }

  /** Checks the rows of a forecast request and prepares its series (services/series-checks.ts checkedSeries, on a thread: parsing many rows is work); its refusals thrown. */
  async prepareForecast(request: SeriesRequest): Promise<PackedSeries> {
    return answerOf<PackedSeries>(this.pool.run({ ...request, parts: this.threads }, { name: 'prepareForecast' }));
  }

  /**
   * Forecasts packed series over the pool's threads, one part each (contiguous parts of about equal
   * points), answered in the request's order. Each series is forecast from its own history only, so the
   * answers are those of one thread doing them all.
   */
  async forecastPrepared(packed: PackedSeries, options: { horizon: number; quantiles: number[]; seasonLength?: number }): Promise<SeriesForecast[]> {
    const answers = await Promise.all(
      packed.parts.map(async (part) => unwrap((await this.pool.run({ part, ...options }, { name: 'forecastPrepared' })) as Outcome<SeriesForecast[]>)),
    );
    return answers.flat();
  }

  /**
   * Runs a small forecast on every thread, off any call's path: a thread's first large forecast runs
   * cold code (the 100 × 200 daily call took 2.9 s on fresh threads against 1.6 s on warm ones,
   * bench/api/forecast-pool.ts). Answers the ids of the threads that warmed.
   */
  async warmUp(seriesPerThread: number): Promise<number[]> {
    const started = new SharedArrayBuffer(4);
    return (await Promise.all(
      Array.from({ length: this.threads }, () => this.pool.run({ started, tasks: this.threads, series: seriesPerThread }, { name: 'warmUp' })),
    )) as number[];
  }

  async close(): Promise<void> {
    this.unwatch();
    await this.pool.destroy();
  }
}
