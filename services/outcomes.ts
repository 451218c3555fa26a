import type { EntityManager } from '@mikro-orm/postgresql';
import { classLabelReader, MAX_TARGET_MAGNITUDE, toNumber } from '../engines/tabular';
import type { Logger } from 'pino';
import { pendingOutcomesBytesLimit, pendingOutcomesLimit, type PlanName } from '../config/plans';
import { ContextChunkSchema, ModelVersionSchema, OutcomeSchema, type Model, type ModelVersion } from '../db/entities';
import type { Row } from './datasets';
import { AppError, quoted, validationError } from './errors';
import { idPattern, newId, RUN_STEM_LENGTH } from './ids';
import { getModel } from './models';
import { checkPredictionRows } from './prediction-rows';
import type { TemporalGateway } from './temporal/gateway';

export interface OutcomeInput {
  actual: string | number | boolean;
  request_id?: string;
  features?: Row;
}

export function assertServing(model: Model): void {
  if (model.status === 'archived') throw new AppError('MODEL_ARCHIVED', 409, 'The model is archived; restore it first.');
  if (model.status !== 'serving') throw new AppError('MODEL_NOT_TRAINED', 409, 'The model is not trained yet.');
}

/**
 * An outcome's `actual` must fit the frozen task: one of the training classes for a classification
 * (a binary model never grows a third class), a number within ±MAX_TARGET_MAGNITUDE for a regression
 * (the refresh trains on it, and a larger one's square overflows). A regression's numeric text is read
 * by the engine's own rule (toNumber), not JavaScript's Number(), which also reads "0x10", "0b101" and
 * "0o17": the refresh's engine found such a target non-numeric, so every later refresh of the model
 * failed (422) and the performance route could not cast it (503). A class is read by the engine's
 * label rule too (classLabelReader: "TRUE" names true, "1.0" names 1). Answers the checker of a
 * batch, which gives the value to store: a regression's actual as the number the engine reads, a
 * class as the label the model predicts.
 */
function actualChecker(model: Model, version: ModelVersion): (actual: OutcomeInput['actual'], i: number) => OutcomeInput['actual'] {
  if (model.task === 'regression') {
    return (actual, i) => {
      const value = typeof actual === 'boolean' ? NaN : toNumber(actual);
      if (!(Math.abs(value) <= MAX_TARGET_MAGNITUDE)) {
        throw validationError(`Invalid body.outcomes.${i}.actual: this regression model needs a number within ±${MAX_TARGET_MAGNITUDE}; got ${quoted(actual)}.`);
      }
      return value;
    };
  }
  const classes = ((version.report as { classes?: unknown[] }).classes ?? []).map(String);
  const labelOf = classLabelReader(classes);
  return (actual, i) => {
    const label = labelOf(actual);
    if (label === null) {
      throw validationError(`Invalid body.outcomes.${i}.actual: this ${model.task} model knows the classes ${classes.slice(0, 10).map((c) => quoted(c)).join(', ')}${classes.length > 10 ? ` and ${classes.length - 10} more` : ''}; got ${quoted(actual)}.`);
    }
    return label;
  };
}

export interface ReportedOutcomes {
  ids: string[];
  pending: number;
  integrationStarted: boolean;
}

/**
 * Records one batch and, for a model with auto_update, signals its integration. The batch is stored
 * first and never twice: when the signal cannot be sent, the sweep starts the integration of a model
 * whose outcomes wait too long. The batch is checked and stored under a share lock of the model's row.
 */
export async function reportOutcomes(
  em: EntityManager,
  deps: { temporal: TemporalGateway; logger: Logger },
  caller: { workspaceId: string; plan: PlanName },
  modelId: string,
  outcomes: OutcomeInput[],
): Promise<ReportedOutcomes> {
  // The model's row is share-locked until the batch commits: an archive or a deletion made at the same
  // moment comes after it (and purges it) or before it (409 or 404), never between the check and the
  // insert (a batch inserted after a deletion's purge stayed pending for ever, features included).
  const { model, recorded } = await em.transactional(async (tx) => {
    const locked = await getModel(tx, caller.workspaceId, modelId, { lock: 'share' });
    await refuseBeyondPendingLimit(tx, locked, outcomes.length, pendingOutcomesLimit(caller.plan));
    return { model: locked, recorded: await recordOutcomes(tx, locked, outcomes, pendingOutcomesBytesLimit(caller.plan)) };
  });
  let integrationStarted = false;
  if (model.autoUpdate) {
    try {
      await deps.temporal.signalIntegration(model.id, model.account.id, recorded.ids.length);
      integrationStarted = true;
    } catch (err) {
      deps.logger.error({ err, modelId: model.id }, 'could not signal the integration workflow; the sweep will start it');
    }
  }
  return { ...recorded, integrationStarted };
}

/**
 * 409 TOO_MANY_PENDING_OUTCOMES when the batch would take the model's outcomes waiting for a refresh
 * past `limit`. Counted under a transaction-scoped advisory lock of the model's outcomes, so the
 * batches of one model are checked one after the other and concurrent ones cannot pass it together
 * (the model's share lock lets them run at once). Outcomes are free: an eighth probe reported one
 * prediction 300,000 times in 30 batches, and the refresh that folded them held its process's event
 * loop 12 s (a /health took 12.5 s) to fit on a context whose newest rows, all it kept, were one row.
 */
async function refuseBeyondPendingLimit(tx: EntityManager, model: Model, batch: number, limit: number): Promise<void> {
  await tx.getConnection().execute(`select pg_advisory_xact_lock(hashtextextended(?, 0))`, [`outcomes:${model.id}`], 'all', tx.getTransactionContext());
  const pending = await pendingCount(tx, model);
  if (pending + batch > limit) {
    throw new AppError(
      'TOO_MANY_PENDING_OUTCOMES',
      409,
      `A model holds at most ${limit.toLocaleString('en-US')} outcomes waiting for a refresh (the most its plan trains on); ${pending.toLocaleString('en-US')} are waiting. Refresh the model first.`,
      { limit, pending },
    );
  }
}

/** Serving models with auto_update whose outcomes wait since before `olderThan` (a lost signal). */
export async function strandedIntegrations(em: EntityManager, olderThan: Date, notBefore: Date): Promise<Array<{ id: string; accountId: string }>> {
  return em.getConnection().execute<Array<{ id: string; accountId: string }>>(
    `select distinct m.id, m.account_id as "accountId" from models m join outcomes o on o.model_id = m.id
      where m.status = 'serving' and m.auto_update and o.status = 'pending' and o.created_at < ? and o.created_at >= ?
      limit 100`,
    [olderThan, notBefore],
  );
}

/**
 * The features of a model's scored rows by request_id. A request_id is its call's row id (the first 22
 * characters) and its position in 4 base62 digits (services/ids.ts newIdRun): the call is found by its
 * primary key, the row by its position; an id of another shape or position finds nothing. Read in the
 * caller's transaction: on a connection of its own, ten batches of one model waiting on the lock of
 * the one in progress held the pool's ten connections while it waited for an eleventh, and the API
 * stopped answering every account for a minute or two (a twenty-fourth probe).
 */
export async function scoredFeatures(em: EntityManager, modelId: string, requestIds: string[]): Promise<Array<{ id: string; features: Row }>> {
  if (requestIds.length === 0) return [];
  // Each call's features (one json array, stored out of line, whose rows' key order is kept) are read
  // and walked once, not once per request_id: `->` on the stored json read and parsed the whole array
  // again for each, so 10,000 outcomes of one 10,000-row call took 18 s (a twenty-sixth probe).
  return em.getConnection().execute<Array<{ id: string; features: Row }>>(
    `with r as materialized (
       select r.id, left(r.id, ${RUN_STEM_LENGTH}) as call_id, prediction_position(r.id) as pos
         from unnest(array[?]::text[]) as r(id) where r.id ~ ?
     ),
     e as materialized (
       select c.id as call_id, c.first_index + x.n - 1 as pos, x.value as features
         from prediction_calls c, lateral json_array_elements(c.features) with ordinality as x(value, n)
        where c.id in (select call_id from r) and c.model_id = ?
     )
     select r.id, e.features from r join e on e.call_id = r.call_id and e.pos = r.pos`,
    [requestIds, idPattern('request'), modelId],
    'all',
    em.getTransactionContext(),
  );
}

/**
 * Records one batch of outcomes as pending. Each names its prediction (`request_id`: the features are
 * looked up) or carries the full feature set; the whole batch is refused if one is invalid.
 */
export async function recordOutcomes(em: EntityManager, model: Model, outcomes: OutcomeInput[], maxPendingBytes: number): Promise<{ ids: string[]; pending: number }> {
  assertServing(model);
  const requestIds = [...new Set(outcomes.map((o) => o.request_id).filter((id): id is string => id !== undefined))];
  const byId = new Map((await scoredFeatures(em, model.id, requestIds)).map((p) => [p.id, p]));
  const version = await em.findOneOrFail(ModelVersionSchema, { model: model.id, number: model.currentVersion ?? 0 });
  const now = new Date();
  const checkedActual = actualChecker(model, version);
  const rows = outcomes.map((o, i) => {
    let features: Row;
    let predictionId: string | null = null;
    if (o.request_id !== undefined) {
      const prediction = byId.get(o.request_id);
      if (!prediction) {
        throw new AppError('VALIDATION_ERROR', 400, `Invalid body.outcomes.${i}.request_id: no prediction of this model has request_id ${o.request_id}.`);
      }
      predictionId = prediction.id;
      features = o.features ?? prediction.features;
    } else {
      features = o.features ?? {};
    }
    const actual = checkedActual(o.actual, i);
    // Features must fit the training columns and types, or every later refresh would fail on them.
    checkPredictionRows(model, version, [features], i);
    return { id: newId('outcome'), model_id: model.id, workspace_id: model.workspace.id, prediction_id: predictionId, features, actual };
  });
  await refuseBeyondPendingBytes(em, model, rows.reduce((sum, r) => sum + Buffer.byteLength(JSON.stringify(r.features)), 0), maxPendingBytes);
  await insertOutcomes(em, rows, now);
  return { ids: rows.map((r) => r.id), pending: await pendingCount(em, model) };
}

/**
 * 409 TOO_MANY_PENDING_OUTCOMES when the batch's features would take what the model's pending outcomes
 * weigh past `limit` bytes (pendingOutcomesBytesLimit). Under the batch's advisory lock, as the count.
 */
async function refuseBeyondPendingBytes(em: EntityManager, model: Model, batchBytes: number, limit: number): Promise<void> {
  const [row] = await em
    .getConnection()
    .execute<Array<{ bytes: string }>>(
      `select coalesce(sum(octet_length(features::text)), 0)::bigint as bytes from outcomes where model_id = ? and status = 'pending'`,
      [model.id],
      'all',
      em.getTransactionContext(),
    );
  const pending = Number(row?.bytes ?? 0);
  if (pending + batchBytes > limit) {
    const mb = (n: number) => `${(n / 1_048_576).toFixed(1)} MB`;
    throw new AppError(
      'TOO_MANY_PENDING_OUTCOMES',
      409,
      `The outcomes a model holds waiting for a refresh weigh at most ${mb(limit)} together (what a training set of its plan may); ${mb(pending)} are waiting and this batch adds ${mb(batchBytes)}. Refresh the model first, or send shorter values.`,
      { limit_bytes: limit, pending_bytes: pending },
    );
  }
}

/**
 * One statement for the batch, its rows as one JSON parameter. Not the ORM's insert: it walks every
 * value as a possible query parameter, and a row whose columns are named `constructor`, `__entity` or
 * `__reference` (a model may be trained on such columns) read as an ObjectId, an entity or a reference
 * there and failed with 500 (a ninth probe): such a model could never be given an outcome.
 */
async function insertOutcomes(
  em: EntityManager,
  rows: Array<{ id: string; model_id: string; workspace_id: string; prediction_id: string | null; features: Row; actual: OutcomeInput['actual'] }>,
  createdAt: Date,
): Promise<void> {
  await em.getConnection().execute(
    `insert into outcomes (id, model_id, workspace_id, prediction_id, features, actual, status, folded_in_version, created_at)
     select r.id, r.model_id, r.workspace_id, r.prediction_id, r.features, r.actual, 'pending', null, ?
       from jsonb_to_recordset(?::jsonb) as r(id text, model_id text, workspace_id text, prediction_id text, features jsonb, actual jsonb)`,
    [createdAt, JSON.stringify(rows)],
    'run',
    em.getTransactionContext(),
  );
}

/** Outcomes waiting for a refresh: pending ones, plus any folded into a chunk not yet fitted. */
export async function pendingCount(em: EntityManager, model: Model): Promise<number> {
  const pending = await em.count(OutcomeSchema, { modelId: model.id, status: 'pending' });
  const unfitted = await em.find(ContextChunkSchema, { model: model.id, versionNumber: { $gt: model.currentVersion ?? 0 } }, { fields: ['rowCount'] });
  return pending + unfitted.reduce((sum, c) => sum + c.rowCount, 0);
}
