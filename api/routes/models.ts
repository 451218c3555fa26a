import { PLANS } from '../../config/plans';
import { findEngine } from '../../engines/catalogue';
import { EngineDataError } from '../../services/engine-pool';
import { AppError, validationError } from '../../services/errors';
import {
  archiveModel,
  createModelForTraining,
  deleteModel,
  getModel,
  listModels,
  listVersions,
  presentModelWithVersion,
  presentModelsWithVersions,
  presentVersion,
  renameModel,
  restoreModel,
} from '../../services/models';
import { pendingCount, recordOutcomes, assertServing } from '../../services/outcomes';
import { modelPerformance } from '../../services/performance';
import { predict } from '../../services/predictions';
import { PredictionSchema, OutcomeSchema, ModelSchema } from '../../db/entities';
import type { AppDeps } from '../app';
import { REMAINING_HEADER } from '../middleware/idempotency';
import { loggerOf } from '../middleware/request-logger';
import { route, type AnyRoute } from '../route';
import { paginated } from '../schemas/common';
import {
  modelIdParamsSchema,
  modelListQuerySchema,
  modelListSchema,
  modelSchema,
  outcomesInputSchema,
  outcomesResultSchema,
  patchModelSchema,
  performanceQuerySchema,
  predictInputSchema,
  predictResultSchema,
  predictionHistoryQuerySchema,
  predictionHistorySchema,
  refreshResultSchema,
  trainingInputSchema,
  versionListSchema,
} from '../schemas/models';
import { datasetRows, requireAuth, requireUsageKey } from './helpers';
import { z } from '../zod';

const NOT_FOUND: [number, string] = [404, 'NOT_FOUND'];

export function dataRefusal(err: EngineDataError): AppError {
  if (err.code === 'TARGET_MISSING' || err.code === 'INVALID_OPTIONS') return new AppError('VALIDATION_ERROR', 400, err.message);
  return new AppError('DATA_VALIDATION_FAILED', 422, err.message, { report: { valid: false, errors: [{ code: err.code, message: err.message }] } });
}

export function modelRoutes(deps: AppDeps): AnyRoute[] {
  const em = () => deps.orm.em.fork();
  return [
    route({
      method: 'post',
      path: '/v1/models',
      summary: 'Create a model by training it on rows and a target column (answers once trained)',
      tag: 'Models',
      auth: 'key_or_session',
      operation: 'models.create',
      bodyKind: 'dataset',
      idempotent: true,
      body: trainingInputSchema,
      responses: { 201: { description: 'The trained model.', schema: modelSchema } },
      errors: [
        [400, 'CSV_UNREADABLE'],
        [402, 'QUOTA_MODELS_EXCEEDED'],
        [413, 'TOO_MANY_ROWS'],
        [413, 'DATASET_TOO_LARGE'],
        [413, 'FILE_TOO_LARGE'],
        [422, 'DATA_VALIDATION_FAILED'],
        [409, 'REQUEST_IN_PROGRESS'],
        [422, 'IDEMPOTENCY_KEY_REUSED'],
      ],
      async handler(ctx, { body, auth, upload }) {
        const a = requireAuth(auth);
        if (!body.engine) throw validationError('Invalid body.engine: required when creating a model (engine ids come from GET /v1/engines).');
        const engine = findEngine(body.engine);
        if (!engine || engine.kind !== 'tabular') throw validationError(`Invalid body.engine: ${body.engine} is not a tabular engine of GET /v1/engines.`);
        const rows = datasetRows(body.data, upload, 'data');
        const maxRows = PLANS[a.plan].maxTrainingRows;
        if (maxRows !== null && rows.length > maxRows) {
          throw new AppError('TOO_MANY_ROWS', 413, `Your plan trains on at most ${maxRows} rows; got ${rows.length}.`, { limit: maxRows, rows: rows.length });
        }
        let task;
        try {
          task = (await deps.enginePool.analyse(rows, body.target, body.task)).task;
        } catch (err) {
          throw err instanceof EngineDataError ? dataRefusal(err) : err;
        }
        const model = await createModelForTraining(em(), {
          workspaceId: a.workspaceId,
          accountId: a.accountId,
          name: body.name,
          target: body.target,
          task,
          engineId: engine.id,
          explain: body.explain,
          autoUpdate: body.auto_update,
          rows,
        });
        try {
          await deps.temporal.trainModel(model.id);
        } catch (err) {
          // A model that could not be trained is not left behind half-created.
          await deleteModel(em(), a.workspaceId, model.id);
          throw err;
        }
        const fresh = em();
        ctx.status = 201;
        ctx.body = await presentModelWithVersion(fresh, await getModel(fresh, a.workspaceId, model.id));
      },
    }),
    route({
      method: 'get',
      path: '/v1/models',
      summary: 'List serving models (or archived ones with status=archived)',
      tag: 'Models',
      auth: 'key_or_session',
      operation: 'models.list',
      query: modelListQuerySchema,
      responses: { 200: { description: 'A page of models, newest first.', schema: modelListSchema } },
      errors: [],
      async handler(ctx, { query, auth }) {
        const a = requireAuth(auth);
        const fork = em();
        const { items, total } = await listModels(fork, a.workspaceId, query);
        ctx.body = paginated(await presentModelsWithVersions(fork, items), total, query);
      },
    }),
    route({
      method: 'get',
      path: '/v1/models/:id',
      summary: 'A model with its serving version',
      tag: 'Models',
      auth: 'key_or_session',
      operation: 'models.get',
      params: modelIdParamsSchema,
      responses: { 200: { description: 'The model.', schema: modelSchema } },
      errors: [NOT_FOUND],
      async handler(ctx, { params, auth }) {
        const fork = em();
        ctx.body = await presentModelWithVersion(fork, await getModel(fork, requireAuth(auth).workspaceId, params.id));
      },
    }),
    route({
      method: 'patch',
      path: '/v1/models/:id',
      summary: 'Rename a model (target and task are frozen)',
      tag: 'Models',
      auth: 'key_or_session',
      operation: 'models.update',
      params: modelIdParamsSchema,
      body: patchModelSchema,
      responses: { 200: { description: 'The model.', schema: modelSchema } },
      errors: [NOT_FOUND, [409, 'MODEL_FIELD_FROZEN']],
      async handler(ctx, { params, body, auth }) {
        const fork = em();
        const model = await renameModel(fork, requireAuth(auth).workspaceId, params.id, body);
        ctx.body = await presentModelWithVersion(fork, model);
      },
    }),
    route({
      method: 'delete',
      path: '/v1/models/:id',
      summary: 'Delete a model irreversibly (artefacts and pending outcomes purged)',
      tag: 'Models',
      auth: 'key_or_session',
      operation: 'models.delete',
      params: modelIdParamsSchema,
      responses: { 204: { description: 'Deleted.' } },
      errors: [NOT_FOUND],
      async handler(ctx, { params, auth }) {
        await deleteModel(em(), requireAuth(auth).workspaceId, params.id);
        ctx.status = 204;
      },
    }),
    route({
      method: 'post',
      path: '/v1/models/:id/archive',
      summary: 'Archive a model: it stops serving and frees its quota slot; artefacts kept',
      tag: 'Models',
      auth: 'key_or_session',
      operation: 'models.archive',
      params: modelIdParamsSchema,
      responses: { 204: { description: 'Archived.' } },
      errors: [NOT_FOUND, [409, 'MODEL_NOT_TRAINED']],
      async handler(ctx, { params, auth }) {
        await archiveModel(em(), requireAuth(auth).workspaceId, params.id);
        ctx.status = 204;
      },
    }),
    route({
      method: 'post',
      path: '/v1/models/:id/restore',
      summary: 'Restore an archived model (takes a quota slot again)',
      tag: 'Models',
      auth: 'key_or_session',
      operation: 'models.restore',
      params: modelIdParamsSchema,
      responses: { 200: { description: 'The model, serving again.', schema: modelSchema } },
      errors: [NOT_FOUND, [402, 'QUOTA_MODELS_EXCEEDED'], [409, 'MODEL_DELETED']],
      async handler(ctx, { params, auth }) {
        const fork = em();
        const model = await restoreModel(fork, requireAuth(auth).workspaceId, params.id);
        ctx.body = await presentModelWithVersion(fork, model);
      },
    }),
    route({
      method: 'get',
      path: '/v1/models/:id/versions',
      summary: 'Every version of a model, newest first',
      tag: 'Models',
      auth: 'key_or_session',
      operation: 'models.versions',
      params: modelIdParamsSchema,
      responses: { 200: { description: 'The versions.', schema: versionListSchema } },
      errors: [NOT_FOUND],
      async handler(ctx, { params, auth }) {
        const fork = em();
        const model = await getModel(fork, requireAuth(auth).workspaceId, params.id);
        ctx.body = { data: (await listVersions(fork, model.id)).map((v) => presentVersion(v, model)) };
      },
    }),
    route({
      method: 'post',
      path: '/v1/models/:id/predict',
      summary: 'Score rows (engine price × rows credits)',
      tag: 'Prediction',
      auth: 'key_or_session',
      operation: 'models.predict',
      bodyKind: 'dataset',
      idempotent: true,
      params: modelIdParamsSchema,
      body: predictInputSchema,
      responses: {
        200: {
          description: 'One prediction per row, each with its request_id.',
          schema: predictResultSchema,
          headers: { [REMAINING_HEADER]: { description: 'Credits left (monthly allowance + purchased balance).', schema: { type: 'integer' } } },
        },
      },
      errors: [
        NOT_FOUND,
        [400, 'COLUMN_MISMATCH'],
        [400, 'SCHEMA_MISMATCH'],
        [400, 'CSV_UNREADABLE'],
        [402, 'CREDITS_EXHAUSTED'],
        [403, 'ADMIN_KEY_CANNOT_PREDICT'],
        [409, 'MODEL_NOT_TRAINED'],
        [409, 'MODEL_ARCHIVED'],
        [409, 'ENGINE_MISMATCH'],
        [409, 'REQUEST_IN_PROGRESS'],
        [413, 'TOO_MANY_ROWS'],
        [413, 'DATASET_TOO_LARGE'],
        [413, 'FILE_TOO_LARGE'],
        [422, 'IDEMPOTENCY_KEY_REUSED'],
      ],
      async handler(ctx, { params, body, auth, upload, requestId }) {
        const a = requireUsageKey(auth);
        const fork = em();
        const model = await getModel(fork, a.workspaceId, params.id);
        if (body.rows !== undefined && body.data !== undefined) throw validationError('Send body.rows or body.data, not both.');
        const rows = datasetRows(body.rows ?? body.data, upload, 'rows');
        const result = await predict(fork, deps.enginePool, { model, rows, accountId: a.accountId, workspaceId: a.workspaceId, httpRequestId: requestId });
        ctx.state.creditsCharged = result.charged;
        ctx.set(REMAINING_HEADER, String(result.remaining));
        ctx.body = result.body;
      },
    }),
    route({
      method: 'get',
      path: '/v1/models/:id/predictions',
      summary: 'Prediction history of a model, newest first, with matched outcomes',
      tag: 'Prediction',
      auth: 'key_or_session',
      operation: 'models.predictions',
      params: modelIdParamsSchema,
      query: predictionHistoryQuerySchema,
      responses: { 200: { description: 'The latest predictions.', schema: predictionHistorySchema } },
      errors: [NOT_FOUND, [503, 'PREDICTION_HISTORY_UNAVAILABLE']],
      async handler(ctx, { params, query, auth }) {
        const fork = em();
        const model = await getModel(fork, requireAuth(auth).workspaceId, params.id);
        try {
          const predictions = await fork.find(PredictionSchema, { modelId: model.id }, { orderBy: { createdAt: 'desc', id: 'desc' }, limit: query.limit });
          const outcomes = predictions.length
            ? await fork.find(OutcomeSchema, { predictionId: { $in: predictions.map((p) => p.id) } }, { fields: ['predictionId', 'actual'] })
            : [];
          const actualOf = new Map(outcomes.map((o) => [o.predictionId, o.actual]));
          ctx.body = {
            data: predictions.map((p) => ({
              request_id: p.id,
              version_number: p.versionNumber,
              features: p.features,
              output: p.output,
              ...(actualOf.has(p.id) ? { outcome: actualOf.get(p.id) } : {}),
              created_at: p.createdAt.toISOString(),
            })),
          };
        } catch (err) {
          loggerOf(ctx, deps.logger).error({ err }, 'prediction history unreadable');
          throw new AppError('PREDICTION_HISTORY_UNAVAILABLE', 503, 'The prediction history cannot be read right now; retry later.');
        }
      },
    }),
    route({
      method: 'post',
      path: '/v1/models/:id/outcomes',
      summary: 'Report observed outcomes (one call is one batch); they stay pending until a refresh',
      tag: 'Feedback',
      auth: 'key_or_session',
      operation: 'models.outcomes',
      idempotent: true,
      params: modelIdParamsSchema,
      body: outcomesInputSchema,
      responses: { 201: { description: 'The batch is recorded.', schema: outcomesResultSchema } },
      errors: [NOT_FOUND, [400, 'COLUMN_MISMATCH'], [409, 'MODEL_ARCHIVED'], [409, 'MODEL_NOT_TRAINED'], [409, 'REQUEST_IN_PROGRESS'], [422, 'IDEMPOTENCY_KEY_REUSED']],
      async handler(ctx, { params, body, auth }) {
        const fork = em();
        const model = await getModel(fork, requireAuth(auth).workspaceId, params.id);
        const recorded = await recordOutcomes(fork, model, body.outcomes);
        let integrationStarted = false;
        if (model.autoUpdate) {
          // The batch is stored either way: a failed signal must not make a retry record it twice.
          try {
            await deps.temporal.signalIntegration(model.id, recorded.ids.length);
            integrationStarted = true;
          } catch (err) {
            loggerOf(ctx, deps.logger).error({ err, modelId: model.id }, 'could not signal the integration workflow');
          }
        }
        ctx.status = 201;
        ctx.body = { accepted: recorded.ids.length, pending: recorded.pending, outcome_ids: recorded.ids, integration_started: integrationStarted };
      },
    }),
    route({
      method: 'post',
      path: '/v1/models/:id/refresh',
      summary: 'Fold pending outcomes into the context as a new version that serves at once',
      tag: 'Feedback',
      auth: 'key_or_session',
      operation: 'models.refresh',
      idempotent: true,
      params: modelIdParamsSchema,
      responses: { 201: { description: 'The new version.', schema: refreshResultSchema } },
      errors: [NOT_FOUND, [409, 'NO_PENDING_OUTCOMES'], [409, 'UPDATE_IN_PROGRESS'], [409, 'MODEL_ARCHIVED'], [409, 'MODEL_NOT_TRAINED'], [422, 'DATA_VALIDATION_FAILED']],
      async handler(ctx, { params, auth }) {
        const a = requireAuth(auth);
        const fork = em();
        const model = await getModel(fork, a.workspaceId, params.id);
        assertServing(model);
        if ((await pendingCount(fork, model)) === 0) {
          throw new AppError('NO_PENDING_OUTCOMES', 409, 'There is no pending outcome to fold in; report outcomes first.');
        }
        const refreshed = await deps.temporal.refreshModel(model.id);
        const after = em();
        const current = await after.findOneOrFail(ModelSchema, { id: model.id });
        const versions = await listVersions(after, model.id);
        const version = versions.find((v) => v.number === refreshed.number);
        if (!version) throw new Error(`refresh of ${model.id} reported version ${refreshed.number}, which is not stored`);
        ctx.status = 201;
        ctx.body = { model_id: model.id, version: presentVersion(version, current), outcomes_folded: refreshed.folded };
      },
    }),
    route({
      method: 'get',
      path: '/v1/models/:id/performance',
      summary: 'Predictions matched to reported outcomes, against the validation score (holding / weak / dropped)',
      tag: 'Feedback',
      auth: 'key_or_session',
      operation: 'models.performance',
      params: modelIdParamsSchema,
      query: performanceQuerySchema,
      responses: { 200: { description: 'Observed performance; observed is null until an outcome matches a prediction.', schema: z.record(z.string(), z.unknown()) } },
      errors: [NOT_FOUND, [503, 'PERFORMANCE_UNAVAILABLE']],
      async handler(ctx, { params, query, auth }) {
        const fork = em();
        const model = await getModel(fork, requireAuth(auth).workspaceId, params.id);
        try {
          ctx.body = await modelPerformance(fork, model, query.days);
        } catch (err) {
          loggerOf(ctx, deps.logger).error({ err }, 'performance unreadable');
          throw new AppError('PERFORMANCE_UNAVAILABLE', 503, 'Performance cannot be computed right now; retry later.');
        }
      },
    }),
  ];
}

