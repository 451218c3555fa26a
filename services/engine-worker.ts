/**
 * Runs in a worker thread of the engine pool: the only place engine code executes in the service
 * processes, so the event loop of the API and of the Temporal worker never blocks on a fit or a score.
 */
import { threadId, workerData, type MessagePort } from 'node:worker_threads';
import { LRUCache } from 'lru-cache';
import {
  analyseDataset,
  featureColumns,
  loadModel,
  predictRows,
  serialiseModel,
  trainTabular,
  type DataReport,
  type Prediction,
  type TabularModel,
} from '../engines/tabular';
import { TabularDataError, TabularModelFormatError } from '../engines/tabular';
import { SeriesError, forecastSeries, prepareSeries, type SeriesForecast } from '../engines/forecast';
import { parseUploadedFile, type Row } from './datasets';
import { AppError, carriedError, unservableVersion, type CarriedError } from './errors';
import { contextRows } from './context-rows';
import { readPredictionBody } from './prediction-body';
import { readTrainingBody, type ReadTrainingBody } from './training-body';
import { readBacktestBody, readBacktestFile, readForecastBody, readForecastFile, type ReadBacktestBody, type ReadForecastBody } from './series-body';
import { backtestRows, type BacktestAnswer, type BacktestRequest } from './backtest-rows';
import { readValidationBody, readValidationFile, type ReadValidationBody } from './validation-body';
import { validateRows, type ValidationReport, type ValidationRequest } from './validation-rows';
import { checkedSeries, packSeries, unpackSeries, type PackedSeries, type SeriesColumns } from './series-checks';
import type { PlanName } from '../config/plans';
import { checkPredictionRows, predictionOutputs } from './prediction-rows';
import { STAGED_IDLE_MS, type StagedPredictionSource, type StageReply, type StageRequest } from './staged-bodies';
import { bufferOf } from './bytes';
import { syntheticDailyRows } from './synthetic-series';

/** Errors lose their class and fields across threads, so data refusals travel as values. */
export type Outcome<T> = { ok: true; value: T } | { ok: false; code: string; message: string };

function guarded<T>(run: () => T): Outcome<T> {
  try {
    return { ok: true, value: run() };
  } catch (err) {
    if (err instanceof TabularDataError || err instanceof SeriesError) return { ok: false, code: err.code, message: err.message };
    throw err;
  }
}

/** A value, or the AppError that refused it, carried as a value across the thread boundary. */
export type Carried<T> = { ok: true; value: T } | { ok: false; error: CarriedError };

function carrying<T>(run: () => T): Carried<T> {
  try {
    return { ok: true, value: run() };
  } catch (err) {
    if (err instanceof AppError) return { ok: false, error: carriedError(err) };
    throw err;
  }
}

/** A version's context as stored (gzipped chunks, services/models.ts contextChunks), read into rows on the thread. */
export interface StoredContext {
  chunks: Uint8Array[];
  maxRows: number | null;
}

export interface TrainTask {
  rows: Row[] | StoredContext;
  target: string;
  task?: 'classification' | 'regression';
  explain: boolean;
  seed: number;
  progressPort?: MessagePort;
}

export interface TrainOutput {
  artefact: string;
  /** The artefact's own format (a version's models keep the format it writes, not the newest this engine reads). */
  formatVersion: number;
  report: DataReport;
  validation: { metric: string; score: number; higher_is_better: boolean; baseline_score: number };
  topFactors: Array<{ feature: string; importance: number }> | null;
  featureColumns: string[];
  /** The rows it was trained on. */
  rowCount: number;
}

export function train(task: TrainTask): Outcome<TrainOutput> {
  return guarded(() => trainNow(task));
}

function trainNow(task: TrainTask): TrainOutput {
  let lastPost = 0;
  const rows = Array.isArray(task.rows) ? task.rows : contextRows(task.rows.chunks, task.rows.maxRows);
  const trained = trainTabular(rows, {
    target: task.target,
    task: task.task,
    explain: task.explain,
    seed: task.seed,
    onProgress: (p) => {
      const now = Date.now();
      if (task.progressPort && (now - lastPost > 500 || p.done === p.total)) {
        lastPost = now;
        task.progressPort.postMessage(p);
      }
    },
  });
  task.progressPort?.close();
  return {
    artefact: serialiseModel(trained.model),
    formatVersion: trained.model.formatVersion,
    report: trained.report,
    validation: trained.validation,
    topFactors: trained.topFactors ?? null,
    featureColumns: featureColumns(trained.model),
    rowCount: rows.length,
  };
}

/** Default budget of one thread's model cache when the pool does not give one. */
const DEFAULT_MODEL_CACHE_BYTES = 256 * 1024 * 1024;

/**
 * Loaded models by version, bounded in bytes (a model weighs about its artefact's length in memory:
 * the same typed arrays, decoded), so a thread serving many or large models never grows without end.
 */
const modelCache = new LRUCache<string, { model: TabularModel; bytes: number }>({
  maxSize: (workerData as { modelCacheBytes?: number } | null)?.modelCacheBytes ?? DEFAULT_MODEL_CACHE_BYTES,
  sizeCalculation: (entry) => Math.max(1, entry.bytes),
});

function cachedModel(versionId: string, artefact: string | undefined): TabularModel | null {
  const hit = modelCache.get(versionId);
  if (hit) return hit.model;
  if (artefact === undefined) return null;
  const model = loadModel(artefact);
  modelCache.set(versionId, { model, bytes: artefact.length });
  return model;
}

/**
 * Scores with a cached model; without the artefact and not cached, asks for it (`{ miss: true }`); an
 * artefact this engine build cannot load answers `{ unservable }`.
 */
export function predict(task: { versionId: string; artefact?: string; rows: Row[] }): Prediction[] | { miss: true } | { unservable: string } {
  let model: TabularModel | null;
  try {
    model = cachedModel(task.versionId, task.artefact);
  } catch (err) {
    if (err instanceof TabularModelFormatError) return { unservable: err.message };
    throw err;
  }
  return model ? predictRows(model, task.rows) : { miss: true };
}

/**
 * The loaded model itself (plain data and typed arrays: it crosses to the main thread by structured
 * clone) for the pool's inline scoring of small batches; the same answers as `predict` otherwise.
 */
export function exportModel(task: { versionId: string; artefact?: string }): { model: TabularModel; bytes: number } | { miss: true } | { unservable: string } {
  try {
    const model = cachedModel(task.versionId, task.artefact);
    if (!model) return { miss: true };
    return { model, bytes: modelCache.get(task.versionId)?.bytes ?? 1 };
  } catch (err) {
    if (err instanceof TabularModelFormatError) return { unservable: err.message };
    throw err;
  }
}

/** Reads a large training body on this thread (services/training-body.ts); the API's event loop never parses it. */
export function stageTrainingBody(task: { body: Uint8Array; method: string; path: string; plan: PlanName }): Carried<ReadTrainingBody> {
  return carrying(() => readTrainingBody(task.body, task));
}

/** The next request of the API on a staged call's port; null after STAGED_IDLE_MS without one. */
function nextRequest(port: MessagePort): Promise<StageRequest | null> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      port.off('message', onMessage);
      resolve(null);
    }, STAGED_IDLE_MS);
    const onMessage = (request: StageRequest) => {
      clearTimeout(timer);
      port.off('message', onMessage);
      resolve(request);
    };
    port.on('message', onMessage);
  });
}

/**
 * A large prediction body, read on this thread and held here for its call (services/staged-bodies.ts):
 * parsed and validated as the API reads a small one, then checked against the model and scored when
 * the API asks, which answers the predictions and the features' JSON the call stores. Every request
 * is answered by a message on the port; the task ends at the API's `end` (or when it goes quiet).
 */
export async function stagePredictBody(task: { source: StagedPredictionSource; port: MessagePort }): Promise<void> {
  const { port } = task;
  const reply = (message: StageReply) => port.postMessage(message);
  const refusing = (run: () => void): CarriedError | null => {
    try {
      run();
      return null;
    } catch (err) {
      if (!(err instanceof AppError)) throw err;
      const error = carriedError(err);
      reply({ kind: 'refused', error });
      return error;
    }
  };
  try {
    let rows: Row[] = [];
    const refusal = refusing(() => {
      const { source } = task;
      if (source.kind === 'json') {
        const body = readPredictionBody(source.bytes, source);
        rows = body.rows;
        reply({ kind: 'staged', count: rows.length, fingerprint: body.fingerprint });
      } else {
        rows = parseUploadedFile({ name: source.name, mimetype: source.mimetype, content: bufferOf(source.content) });
        reply({ kind: 'staged', count: rows.length, fingerprint: '' });
      }
    });
    for (let request = await nextRequest(port); request !== null && request.kind !== 'end'; request = await nextRequest(port)) {
      if (refusal) {
        reply({ kind: 'refused', error: refusal });
        continue;
      }
      if (request.kind === 'check') {
        const { model, report } = request;
        if (!refusing(() => checkPredictionRows(model, { report }, rows))) reply({ kind: 'checked' });
        continue;
      }
      let model: TabularModel | null;
      try {
        model = cachedModel(request.versionId, request.artefact);
      } catch (err) {
        if (!(err instanceof TabularModelFormatError)) throw err;
        reply({ kind: 'refused', error: carriedError(unservableVersion(err.message)) });
        continue;
      }
      if (!model) {
        reply({ kind: 'miss' });
        continue;
      }
      const outputs = predictionOutputs(predictRows(model, rows), request.ids);
      // UTF-8 here, and moved, not copied: the API hands these bytes to PostgreSQL as they are
      const featuresJson = Buffer.from(JSON.stringify(rows));
      port.postMessage({ kind: 'scored', outputs, featuresJson } satisfies StageReply, [featuresJson.buffer as ArrayBuffer]);
      rows = [];
    }
  } finally {
    port.close();
  }
}

export function analyse(task: { rows: Row[]; target: string; task?: 'classification' | 'regression' }): Outcome<DataReport> {
  return guarded(() => analyseDataset(task.rows, { target: task.target, task: task.task }));
}

/** A validation's rows (services/validation-rows.ts): its report, or its refusal as a value. */
export function validate(task: { rows: Row[]; request: ValidationRequest }): Carried<ValidationReport> {
  return carrying(() => validateRows(task.rows, task.request));
}

/** A validation's large uploaded file, read and validated on this thread (services/validation-body.ts). */
export function validateFile(task: { file: UploadedBytes; request: ValidationRequest }): Carried<ValidationReport> {
  return carrying(() => readValidationFile(fileOf(task.file), task.request));
}

/** Reads and validates a large validation body on this thread (services/validation-body.ts). */
export function stageValidationBody(task: { body: Uint8Array; method: string; path: string; plan: PlanName }): Carried<ReadValidationBody> {
  return carrying(() => readValidationBody(task.body, task));
}

export interface SeriesRequest {
  rows: Row[];
  target: string;
  timestamp?: string;
  itemId?: string;
}

/** A forecast's rows checked and their series prepared once (services/series-checks.ts), packed in `parts`; the service then forecasts them one part per thread. */
export function prepareForecast(request: SeriesRequest & { parts: number }): Carried<PackedSeries> {
  return carrying(() => packSeries(checkedSeries(request.rows, request, 'INVALID_INPUT'), request.parts));
}

/** Reads a large forecast body on this thread (services/series-body.ts), down to its prepared series. */
export function stageForecastBody(task: { body: Uint8Array; method: string; path: string; parts: number }): Carried<ReadForecastBody> {
  return carrying(() => readForecastBody(task.body, task));
}

/** Reads a forecast's large uploaded file on this thread (services/series-body.ts), down to its prepared series. */
export function stageForecastFile(task: { file: UploadedBytes; columns: SeriesColumns; parts: number }): Carried<PackedSeries> {
  return carrying(() => readForecastFile(fileOf(task.file), task.columns, task.parts));
}

/** A backtest's rows (services/backtest-rows.ts): its answer, or its refusal as a value. */
export function backtest(task: { rows: Row[]; request: BacktestRequest }): Carried<BacktestAnswer> {
  return carrying(() => backtestRows(task.rows, task.request));
}

/** Reads and backtests a large backtest body on this thread (services/series-body.ts). */
export function stageBacktestBody(task: { body: Uint8Array; method: string; path: string }): Carried<ReadBacktestBody> {
  return carrying(() => readBacktestBody(task.body, task));
}

/** Reads and backtests a backtest's large uploaded file on this thread (services/series-body.ts). */
export function backtestFile(task: { file: UploadedBytes; request: BacktestRequest }): Carried<BacktestAnswer> {
  return carrying(() => readBacktestFile(fileOf(task.file), task.request));
}

/** Forecasts one part of packed series (services/series-checks.ts); each series depends on its own history only, so any split gives the same answers. */
export function forecastPrepared(task: { part: Uint8Array; horizon: number; quantiles: number[]; seasonLength?: number }): Outcome<SeriesForecast[]> {
  return guarded(() => unpackSeries(task.part).map((s) => forecastSeries(s, { horizon: task.horizon, quantiles: task.quantiles, seasonLength: task.seasonLength })));
}

/**
 * Compiles this thread's forecast code by forecasting a few series. Every warm-up task of one call
 * first waits (at most 10 s) until all of them have started, so each runs on a thread of its own
 * (a thread runs one task at a time); answers the thread's id so that the caller can tell.
 */
export function warmUp(task: { started: SharedArrayBuffer; tasks: number; series: number }): number {
  const started = new Int32Array(task.started);
  Atomics.add(started, 0, 1);
  Atomics.notify(started, 0);
  const deadline = Date.now() + 10_000;
  for (let seen = Atomics.load(started, 0); seen < task.tasks && Date.now() < deadline; seen = Atomics.load(started, 0)) Atomics.wait(started, 0, seen, 100);
  if (task.series === 0) return threadId;
  const series = prepareSeries(syntheticDailyRows(task.series, 200), { target: 'value', timestamp: 'date', itemId: 'item' });
  for (const s of series) forecastSeries(s, { horizon: 14, quantiles: [0.1, 0.5, 0.9] });
  return threadId;
}

/** An uploaded file as it crosses to a thread: its bytes as a Uint8Array. */
export interface UploadedBytes {
  name: string | null;
  mimetype: string | null;
  content: Uint8Array;
}

const fileOf = (file: UploadedBytes) => ({ name: file.name, mimetype: file.mimetype, content: bufferOf(file.content) });

/** Parses an uploaded CSV or JSON file off the event loop (papaparse on megabytes takes seconds). */
export function parseUpload(file: UploadedBytes & { textColumns?: string[] }): Carried<Row[]> {
  return carrying(() => parseUploadedFile(fileOf(file), { textColumns: file.textColumns }));
}
