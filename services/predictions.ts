import type { EntityManager, Knex } from '@mikro-orm/postgresql';
import { MAX_PREDICT_ROWS_PER_CALL, PREDICTION_RETENTION_DAYS } from '../config/plans';
import { ModelVersionSchema, type Model, type ModelVersion } from '../db/entities';
import { findEngine } from '../engines/catalogue';
import { gunzipText } from './compression';
import { answeredCallChargerFor } from './charge-batch';
import { callExpired, chargeCall, knownToAfford, noteCharged, releaseReservation, settleSql, type CallStores } from './credits';
import type { Row } from './datasets';
import { INLINE_MAX_ROWS, type EnginePool } from './engine-pool';
import { AppError, notFound } from './errors';
import { checkPredictionRows, predictionOutputs } from './prediction-rows';
import type { StagedRows } from './staged-bodies';
import { newIdRun } from './ids';
import { OrmParams, sql, SqlParams, type Queryable } from './sql';
import { LRUCache } from 'lru-cache';
import { isServable } from './models';

/**
 * One call's scored rows, stored as one row of `prediction_calls` keyed by `stem`; row i's request_id
 * is `outputs[i].request_id` (the stem and its position, services/ids.ts newIdRun).
 */
export interface ScoredRows {
  stem: string;
  features: Row[];
  outputs: Array<Record<string, unknown>>;
}

/**
 * A staged body's scored rows (services/staged-bodies.ts): the features arrive as the JSON its thread
 * wrote, in UTF-8, and go to PostgreSQL as a binary parameter (a json value's binary form is its text),
 * so the event loop never encodes or copies them as a string.
 */
interface StagedScoredRows {
  stem: string;
  featuresJson: Buffer;
  outputs: Array<Record<string, unknown>>;
}

/** A call's rows: parsed here, or staged in an engine thread (a large body, never parsed on the event loop). */
type CallRows = Row[] | StagedRows;

const rowCount = (rows: CallRows): number => (Array.isArray(rows) ? rows.length : rows.count);

/** One call's scored rows, as stored. */
interface ScoredBatch {
  modelId: string;
  workspaceId: string;
  versionNumber: number;
  httpRequestId: string;
  rows: ScoredRows | StagedScoredRows;
}

/**
 * The scored rows as a CTE (`stored`): with `onlyAfter`, written only if that CTE of the same
 * statement (the charge's `led`, a settlement) has a row. A call's rows are one row of
 * `prediction_calls` (migration 20261124130000: a 1,000-row call costs one table row, not 1,000).
 */
const storedRows =
  (batch: ScoredBatch, onlyAfter: string | null) =>
  (p: SqlParams | OrmParams): string =>
    `stored as (
  insert into prediction_calls (id, model_id, workspace_id, version_number, http_request_id, first_index, row_count, features, output, created_at)
  select ${p.add(batch.rows.stem)}, ${p.add(batch.modelId)}, ${p.add(batch.workspaceId)}, ${p.add(batch.versionNumber)}, ${p.add(batch.httpRequestId)}, 0,
         ${p.add(batch.rows.outputs.length)}, ${p.add('featuresJson' in batch.rows ? batch.rows.featuresJson : JSON.stringify(batch.rows.features))}::json, ${p.add(JSON.stringify(batch.rows.outputs))}::json, now()
   ${onlyAfter ? `where exists (select 1 from ${onlyAfter})` : ''}
)`;

/** The rows of a call that was charged before scoring (its reservation held), settled with them. */
export async function storeWithSettlement(callPool: Queryable, reservationId: string, batch: ScoredBatch): Promise<void> {
  const p = new SqlParams();
  const reservation = p.add(reservationId);
  // The answer and its credits in one statement: the rows are stored only if the reservation is
  // still held (the sweep has not given it back), and storing them settles it.
  const text = `with settled as (${settleSql(reservation)}), ${storedRows(batch, 'settled')(p)}
select id from settled`;
  if ((await sql(callPool, text, p.values)).length !== 1) throw callExpired();
}

/**
 * The rows of a call whose answer is stored for replay (Idempotency-Key), written in the transaction
 * that settles its credits and stores that answer: a call that then expires or whose key a retry took
 * over keeps no rows, as it keeps no credits.
 */
const storedInTransaction =
  (batch: ScoredBatch) =>
  async (tx: EntityManager): Promise<void> => {
    const p = new OrmParams();
    const text = `with ${storedRows(batch, null)(p)} select 1`;
    // Through knex with its bindings as parameters: the ORM's execute writes every value into the
    // statement's text, a large call's features (a staged body's bytes included) escaped on the event loop.
    const statement = tx.getConnection().getKnex().raw(text, p.values as Knex.RawBinding[]);
    const transaction = tx.getTransactionContext<Knex.Transaction>();
    await (transaction ? statement.transacting(transaction) : statement);
  };

/** Versions never change once stored: their metadata is cached (the engine threads cache the models). */
const versionCache = new LRUCache<string, ModelVersion>({ max: 256 });

async function servingVersion(stores: Pick<CallStores, 'em'>, modelId: string, number: number): Promise<ModelVersion> {
  const key = `${modelId}:${number}`;
  const hit = versionCache.get(key);
  if (hit) return hit;
  const version = await stores.em.findOneOrFail(ModelVersionSchema, { model: modelId, number });
  versionCache.set(key, version);
  return version;
}

/**
 * The artefact, read only when an engine thread has not cached this version yet. Only a deletion
 * empties a version's artefact (deleteModel), so a call that finds none raced its model's deletion:
 * 404, as for a call that comes after it.
 */
async function artefactOf(em: EntityManager, version: ModelVersion): Promise<string> {
  const loaded = await em.findOneOrFail(ModelVersionSchema, { id: version.id }, { populate: ['artefact'] });
  if (!loaded.artefact) throw notFound('The model');
  return gunzipText(loaded.artefact);
}

export interface PredictResult {
  modelId: string;
  version: { id: string; number: number };
  predictions: Array<Record<string, unknown>>;
  charged: number;
  remaining: number;
  /** Held until the caller stores the answer (settle) or the sweep gives it back; null when settled here. */
  reservationId: string | null;
  /** With a held reservation: the rows, to store in the transaction that settles it with the answer. */
  storeWithAnswer: ((tx: EntityManager) => Promise<void>) | null;
}

/** What scoring needs of a model. */
export type ScoringModel = Pick<Model, 'id' | 'status' | 'currentVersion' | 'featureColumns' | 'target'>;

/**
 * The model a call scores with, in one lean statement (no ORM entity: this runs on every call);
 * another workspace's or a deleted model is 404.
 */
async function readScoringModel(callPool: Queryable, workspaceId: string, modelId: string): Promise<ScoringModel> {
  const [row] = await sql<{ id: string; status: Model['status']; current_version: number | null; feature_columns: string[]; target: string }>(
    callPool,
    `select id, status, current_version, feature_columns, target from models where id = $1 and workspace_id = $2 and status <> 'deleted'`,
    [modelId, workspaceId],
  );
  if (!row) throw notFound('The model');
  return { id: row.id, status: row.status, currentVersion: row.current_version, featureColumns: row.feature_columns, target: row.target };
}

/**
 * Serving models as last read by this process. Never trusted alone: every charge made with one is
 * guarded by the model still serving that version (chargeCall's `model`), and a refusal found with
 * one is checked again against a fresh read.
 */
const servingModels = new LRUCache<string, ScoringModel>({ max: 10_000 });

/**
 * Calls of at most this many rows may be charged in the statement that stores them: that statement
 * holds the account's row lock while it writes the rows, which must stay short for the account's
 * other calls; larger calls reserve first and store their rows in a statement of their own.
 */
const CHARGED_WITH_ANSWER_MAX_ROWS = INLINE_MAX_ROWS;

/** Calls a model may still be changing under: after this many fresh reads the call gives up (503). */
const MAX_MODEL_READS = 4;

/** The checks before any charge; the version scored and the credits it costs. */
async function priced(stores: Pick<CallStores, 'em'>, model: ScoringModel, rows: CallRows): Promise<{ version: ModelVersion; cost: number }> {
  if (model.status === 'archived') throw new AppError('MODEL_ARCHIVED', 409, 'The model is archived; restore it to predict.');
  if (model.status !== 'serving' || model.currentVersion === null) {
    throw new AppError('MODEL_NOT_TRAINED', 409, 'The model is not trained yet.');
  }
  const count = rowCount(rows);
  if (count === 0) throw new AppError('VALIDATION_ERROR', 400, 'Send at least one row to score.');
  if (count > MAX_PREDICT_ROWS_PER_CALL) {
    throw new AppError('TOO_MANY_ROWS', 413, `One call scores at most ${MAX_PREDICT_ROWS_PER_CALL} rows; got ${count}.`, {
      limit: MAX_PREDICT_ROWS_PER_CALL,
      rows: count,
    });
  }
  const version = await servingVersion(stores, model.id, model.currentVersion);
  if (!isServable(version)) {
    throw new AppError(
      'ENGINE_MISMATCH',
      409,
      `Version ${version.number} was trained by engine ${version.engineId} ${version.engineVersion}, which this deployment no longer serves; refresh the model to train it on the current engine.`,
    );
  }
  if (Array.isArray(rows)) checkPredictionRows(model, version, rows);
  else await rows.check(model, version);
  const price = findEngine(version.engineId)?.creditPricePerRow ?? 1;
  return { version, cost: price * count };
}

async function score(pool: EnginePool, stores: Pick<CallStores, 'em'>, version: ModelVersion, rows: CallRows): Promise<ScoredRows | StagedScoredRows> {
  if (!Array.isArray(rows)) {
    const { stem, ids } = newIdRun('request', rows.count);
    const scored = await rows.score(version.id, () => artefactOf(stores.em, version), ids);
    return { stem, featuresJson: scored.featuresJson, outputs: scored.outputs };
  }
  return scoreHere(pool, stores, version, rows);
}

async function scoreHere(pool: EnginePool, stores: Pick<CallStores, 'em'>, version: ModelVersion, rows: Row[]): Promise<ScoredRows> {
  const scored = await pool.predict(version.id, () => artefactOf(stores.em, version), rows);
  const { stem, ids } = newIdRun('request', scored.length);
  return { stem, features: rows, outputs: predictionOutputs(scored, ids) };
}

/**
 * Scores rows with a workspace's model (predictNow); staged rows are let go when the call ends,
 * whatever happened (their thread is the call's until then).
 */
export async function predict(...args: Parameters<typeof predictNow>): Promise<PredictResult> {
  try {
    return await predictNow(...args);
  } finally {
    const { rows } = args[2];
    if (!Array.isArray(rows)) rows.end();
  }
}

/**
 * Scores rows with a workspace's model: checks the model and the columns, charges the credits and
 * stores one prediction per row (its id is the request_id for outcomes). Nothing is ever answered
 * without its charge committed, nor charged without its answer:
 * - a small call (CHARGED_WITH_ANSWER_MAX_ROWS) of an account this process last saw able to pay,
 *   whose answer is not stored for replay: the rows are scored first and charged in the statement
 *   that stores them, one statement for the calls that arrive together (charge-batch.ts; both or
 *   neither for each call; an account that ran dry meanwhile costs one small computation, then
 *   takes the path below);
 * - otherwise the credits are reserved before any computation (402 first) and settled with the
 *   stored rows, or stay held for the caller to settle with its stored answer and the rows (Idempotency-Key); a
 *   failure here releases them at once, and a process that dies leaves them to the sweep.
 */
async function predictNow(
  stores: CallStores,
  pool: EnginePool,
  input: {
    workspaceId: string;
    modelId: string;
    /** Parsed here, or staged in an engine thread (a large body: StagedRows). */
    rows: CallRows;
    accountId: string;
    httpRequestId: string;
    holdSeconds: number;
    /** Settle with the stored rows (no Idempotency-Key: nothing else must commit with the answer). */
    settleWithAnswer: boolean;
    /**
     * The API key, when the call was admitted without reading it (auth.ts `confirm`): its charge checks
     * it, and any other path confirms it before charging.
     */
    unreadKey: { id: string; confirm: () => Promise<void> } | null;
  },
): Promise<PredictResult> {
  // `stores.em` is read only where it is needed: the small path's cached version, scoring and
  // shared charge never fork an entity manager (callStores forks on first use).
  const { callPool } = stores;
  const { rows, workspaceId } = input;
  let unreadKey = input.unreadKey;
  const confirmKey = async (): Promise<void> => {
    if (!unreadKey) return;
    await unreadKey.confirm();
    unreadKey = null;
  };
  const cacheKey = `${workspaceId}:${input.modelId}`;
  let model = servingModels.get(cacheKey);
  let reads = 0;
  const readFresh = async (): Promise<ScoringModel> => {
    if (reads >= MAX_MODEL_READS) throw new AppError('SERVICE_UNAVAILABLE', 503, 'The model changed during the call; retry it.');
    reads += 1;
    const fresh = await readScoringModel(callPool, workspaceId, input.modelId);
    if (fresh.status === 'serving') servingModels.set(cacheKey, fresh);
    else servingModels.delete(cacheKey);
    return fresh;
  };
  model ??= await readFresh();
  for (;;) {
    let checked;
    try {
      checked = await priced(stores, model, rows);
    } catch (err) {
      // A refusal seen through the cache is confirmed on a fresh read before it is answered.
      if (reads === 0) {
        model = await readFresh();
        continue;
      }
      throw err;
    }
    const { version, cost } = checked;
    const modelId = model.id;
    const spec = {
      accountId: input.accountId,
      workspaceId,
      amount: cost,
      operation: 'models.predict',
      reference: input.httpRequestId,
      holdSeconds: input.holdSeconds,
      model: { id: modelId, version: version.number },
    };
    const batch = (scored: ScoredRows | StagedScoredRows): ScoredBatch => ({ modelId, workspaceId, versionNumber: version.number, httpRequestId: input.httpRequestId, rows: scored });
    const result = (scored: ScoredRows | StagedScoredRows, remaining: number, reservationId: string | null = null): PredictResult => ({
      modelId,
      version: { id: version.id, number: version.number },
      predictions: scored.outputs,
      charged: cost,
      remaining,
      reservationId,
      storeWithAnswer: reservationId === null ? null : storedInTransaction(batch(scored)),
    });

    if (input.settleWithAnswer && Array.isArray(rows) && rows.length <= CHARGED_WITH_ANSWER_MAX_ROWS && knownToAfford(input.accountId, cost)) {
      const scored = await scoreHere(pool, stores, version, rows);
      const shared = await answeredCallChargerFor(callPool).charge({ ...spec, rows: scored, keyId: unreadKey?.id ?? null });
      if (shared.kind === 'key_refused') {
        // Throws the key's 401; a key that may call after all (its end passed between the clocks) is charged again.
        await confirmKey();
        continue;
      }
      if (shared.kind === 'model_changed') {
        model = await readFresh();
        continue;
      }
      if (shared.kind === 'charged') {
        await noteCharged(stores, input.accountId, shared.remaining);
        return result(scored, shared.remaining);
      }
      // The account could not cover its calls of that statement together: this call alone decides
      // between its charge and 402, as any single charge (a month to open included).
      await confirmKey();
      const charged = await chargeCall(stores, { ...spec, state: 'settled' }, storedRows(batch(scored), 'led'));
      if (charged.kind === 'model_changed') {
        model = await readFresh();
        continue;
      }
      return result(scored, charged.reservation.remaining);
    }

    await confirmKey();
    const held = await chargeCall(stores, { ...spec, state: 'held' });
    if (held.kind === 'model_changed') {
      model = await readFresh();
      continue;
    }
    const { reservation } = held;
    try {
      const scored = await score(pool, stores, version, rows);
      if (!input.settleWithAnswer) return result(scored, reservation.remaining, reservation.id);
      await storeWithSettlement(callPool, reservation.id, batch(scored));
      return result(scored, reservation.remaining);
    } catch (err) {
      // Gives the credits back now rather than at the sweep; the sweep stays the guarantee.
      await releaseReservation(stores.em, reservation.id);
      throw err;
    }
  }
}

/** Drops scored rows past their retention (with their outcomes' link kept as is); run by the sweep. */
export async function prunePredictions(em: EntityManager, now: Date): Promise<number> {
  const cutoff = new Date(now.getTime() - PREDICTION_RETENTION_DAYS * 86_400_000);
  const rows = await em
    .getConnection()
    .execute<Array<{ n: number }>>(`with gone as (delete from prediction_calls where created_at < ? returning row_count) select coalesce(sum(row_count), 0)::float8 as n from gone`, [cutoff]);
  return rows[0]?.n ?? 0;
}

/**
 * A page of the prediction history as its answer's `data` array, already in JSON (`itemsJson`), with the
 * number of entries in it. Each entry is `{request_id, version_number, features, output, outcome?,
 * created_at}`, the features and outputs as they were stored.
 */
export interface PredictionHistoryPage {
  itemsJson: string;
  count: number;
  total: number;
}

/**
 * A page of a model's scored rows, newest first (calls by time, a call's rows from its last), each with
 * the outcome last reported for it. Only the calls that hold the page's rows are unpacked: the running
 * sum of the calls' row counts says which ones.
 *
 * PostgreSQL writes the page's JSON, and the API passes the text on: the features are stored as the
 * JSON text they were sent as, and reading them into objects only to write them out again held the
 * API's event loop (every other call of the process) for the whole page, for free and as often as the
 * rate limit allows: about 0.35 s for a page of 500 rows of 1,000 features (0.1 s now), 1.5 s for 5,000
 * (a thirteenth probe).
 */
export async function predictionHistory(em: EntityManager, model: Pick<Model, 'id'>, page: { limit: number; offset: number }): Promise<PredictionHistoryPage> {
  try {
    const connection = em.getConnection();
    const [counted] = await connection.execute<Array<{ n: number }>>(`select coalesce(sum(row_count), 0)::float8 as n from prediction_calls where model_id = ?`, [model.id]);
    const entry = (withOutcome: boolean): string =>
      `json_build_object('request_id', g.id, 'version_number', g.version_number, 'features', g.features, 'output', g.output,${withOutcome ? " 'outcome', o.actual," : ''}
                         'created_at', to_char(g.created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))`;
    const [built] = await connection.execute<Array<{ items: string; n: number }>>(
      `with calls as (
         select id, row_count, sum(row_count) over (order by created_at desc, id desc) as upto
           from prediction_calls where model_id = ?
       ), picked as (
         select id, upto - row_count as before from calls where upto > ? and upto - row_count < ?
       ), numbered as (
         select p.*, k.before + row_number() over (partition by p.call_id order by p.id desc) - 1 as position
           from picked k join predictions p on p.call_id = k.id
       ), page as (
         select * from numbered where position >= ? and position < ?
       )
       select coalesce(json_agg(case when o.actual is null then ${entry(false)} else ${entry(true)} end order by g.position), '[]'::json)::text as items,
              count(*)::int as n
         from page g
         left join lateral (select actual from outcomes where prediction_id = g.id order by created_at desc, id desc limit 1) o on true`,
      [model.id, page.offset, page.offset + page.limit, page.offset, page.offset + page.limit],
    );
    return { itemsJson: built?.items ?? '[]', count: built?.n ?? 0, total: counted?.n ?? 0 };
  } catch (err) {
    throw new AppError('PREDICTION_HISTORY_UNAVAILABLE', 503, 'The prediction history cannot be read right now; retry later.', {}, err);
  }
}
