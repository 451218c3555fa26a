import {
  archiveModel,
  createModel,
  deleteModelAndWork,
  getModel,
  listModels,
  refreshModel,
  renameModel,
  restoreModel,
  versionsPage,
  withServingVersions,
} from '../../services/models';
import { reportOutcomes } from '../../services/outcomes';
import { modelPerformance } from '../../services/performance';
import { predict, predictionHistory } from '../../services/predictions';
import { callStores } from '../../services/credits';
import type { AppDeps } from '../app';
import { answersForReplay, holdCredits } from '../middleware/idempotency';
import { REMAINING_HEADER } from '../middleware/errors';
import { loggerOf } from '../middleware/request-logger';
import { presentModel, presentVersion } from '../presenters';
import { route, type AnyRoute } from '../route';
import { pageQuerySchema, paginated, pagination } from '../schemas/common';
import {
  modelIdParamsSchema,
  modelListQuerySchema,
  modelListSchema,
  modelSchema,
  outcomesInputSchema,
  outcomesResultSchema,
  patchModelSchema,
  performanceQuerySchema,
  performanceResultSchema,
  predictInputSchema,
  predictResultSchema,
  predictionHistoryQuerySchema,
  predictionHistorySchema,
  refreshResultSchema,
  trainingInputSchema,
  versionListSchema,
} from '../schemas/models';
import { datasetRows, predictBodyRows, predictionRows, requireAuth, requireUsageKey } from './helpers';
import { StagedRows, StagedTrainingSet } from '../../services/staged-bodies';

const NOT_FOUND: [number, string] = [404, 'NOT_FOUND'];

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
      stagedBody: 'training',
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
      ],
      async handler(ctx, { body, auth, upload, staged }) {
        const a = requireAuth(auth);
        const rows = staged instanceof StagedTrainingSet ? staged.dataset : await datasetRows(deps.enginePool, body.data, upload, 'data');
        const { model, version } = await createModel(
          em(),
          { pool: deps.enginePool, temporal: deps.temporal },
          {
            workspaceId: a.workspaceId,
            accountId: a.accountId,
            plan: a.plan,
            engine: body.engine,
            target: body.target,
            task: body.task,
            name: body.name,
            explain: body.explain,
            autoUpdate: body.auto_update,
            rows,
          },
        );
        ctx.status = 201;
        ctx.body = presentModel(model, version);
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
        const fork = em();
        const { items, total } = await listModels(fork, requireAuth(auth).workspaceId, query);
        ctx.body = paginated((await withServingVersions(fork, items)).map((m) => presentModel(m.model, m.version)), total, query);
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
        const [found] = await withServingVersions(fork, [await getModel(fork, requireAuth(auth).workspaceId, params.id)]);
        ctx.body = presentModel(found!.model, found!.version);
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
        const [renamed] = await withServingVersions(fork, [await renameModel(fork, requireAuth(auth).workspaceId, params.id, body)]);
        ctx.body = presentModel(renamed!.model, renamed!.version);
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
        await deleteModelAndWork(em(), deps.temporal, requireAuth(auth).workspaceId, params.id);
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
        const [restored] = await withServingVersions(fork, [await restoreModel(fork, requireAuth(auth).workspaceId, params.id)]);
        ctx.body = presentModel(restored!.model, restored!.version);
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
      query: pageQuerySchema(),
      responses: { 200: { description: 'A page of the versions.', schema: versionListSchema } },
      errors: [NOT_FOUND],
      async handler(ctx, { params, query, auth }) {
        const { model, items, total } = await versionsPage(em(), requireAuth(auth).workspaceId, params.id, query);
        ctx.body = paginated(items.map((v) => presentVersion(v, model)), total, query);
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
      stagedBody: 'predict',
      idempotent: true,
      usageKeyOnly: true,
      keyCheckedByCharge: true,
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
        [413, 'TOO_MANY_ROWS'],
        [413, 'DATASET_TOO_LARGE'],
        [413, 'FILE_TOO_LARGE'],
      ],
      async handler(ctx, { params, body, auth, upload, staged, requestId }) {
        const a = requireUsageKey(auth);
        const rows = staged instanceof StagedRows ? staged : await predictionRows(deps.enginePool, predictBodyRows(body), upload);
        const result = await predict(callStores(deps.orm, deps.callPool), deps.enginePool, {
          modelId: params.id,
          rows,
          accountId: a.accountId,
          workspaceId: a.workspaceId,
          httpRequestId: requestId,
          holdSeconds: deps.config.CREDIT_HOLD_SECONDS,
          settleWithAnswer: !answersForReplay(ctx, true),
          unreadKey: a.type === 'api_key' && a.confirm ? { id: a.keyId, confirm: a.confirm } : null,
        });
        holdCredits(ctx, result.reservationId, result.storeWithAnswer);
        ctx.state.creditsCharged = result.charged;
        ctx.set(REMAINING_HEADER, String(result.remaining));
        ctx.body = {
          model_id: result.modelId,
          version: result.version,
          predictions: result.predictions,
          credits_charged: result.charged,
          credits_remaining: result.remaining,
        };
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
        const page = await predictionHistory(fork, model, query);
        // The page's entries arrive as JSON text (see predictionHistory): passed on, not parsed again.
        ctx.type = 'application/json';
        ctx.body = `{"data":${page.itemsJson},"pagination":${JSON.stringify(pagination(page.count, page.total, query))}}`;
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
      errors: [NOT_FOUND, [400, 'COLUMN_MISMATCH'], [400, 'SCHEMA_MISMATCH'], [409, 'MODEL_ARCHIVED'], [409, 'MODEL_NOT_TRAINED'], [409, 'TOO_MANY_PENDING_OUTCOMES']],
      async handler(ctx, { params, body, auth }) {
        const reported = await reportOutcomes(em(), { temporal: deps.temporal, logger: loggerOf(ctx, deps.logger) }, requireAuth(auth), params.id, body.outcomes);
        ctx.status = 201;
        ctx.body = { accepted: reported.ids.length, pending: reported.pending, outcome_ids: reported.ids, integration_started: reported.integrationStarted };
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
        const refreshed = await refreshModel(em(), deps.temporal, requireAuth(auth).workspaceId, params.id);
        ctx.status = 201;
        ctx.body = { model_id: refreshed.model.id, version: presentVersion(refreshed.version, refreshed.model), outcomes_folded: refreshed.folded };
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
      responses: { 200: { description: 'Observed performance; observed is null until an outcome matches a prediction.', schema: performanceResultSchema } },
      errors: [NOT_FOUND, [503, 'PERFORMANCE_UNAVAILABLE']],
      async handler(ctx, { params, query, auth }) {
        const fork = em();
        ctx.body = await modelPerformance(fork, await getModel(fork, requireAuth(auth).workspaceId, params.id), query.days);
      },
    }),
  ];
}

