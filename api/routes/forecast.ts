import { AppError } from '../../services/errors';
import { MAX_FORECAST_ANSWER_VALUES, preparedSeries, runBacktest, runForecast } from '../../services/forecasting';
import { horizonDefaulted, horizonOf, type PreparedRequest, type SeriesRefusalCode } from '../../services/series-checks';
import { StagedSeries, type StagedBody } from '../../services/staged-bodies';
import { callStores } from '../../services/credits';
import type { EnginePool } from '../../services/engine-pool';
import type { AppDeps } from '../app';
import type { UploadedFile } from '../middleware/body';
import { holdCredits } from '../middleware/idempotency';
import { REMAINING_HEADER } from '../middleware/errors';
import { route, type AnyRoute } from '../route';
import { backtestResultSchema, DEFAULT_HORIZON, forecastInputSchema, type ForecastInput } from '../schemas/forecast';
import { datasetRows, fileForThread, freeCallOf, requireAuth, requireUsageKey } from './helpers';
import { z } from '../zod';

/**
 * The request's series, prepared: by the thread that read a large body (StagedSeries) or parses a large
 * file, or from the body's rows or small file here. `code` is the route's refusal code.
 */
async function seriesOf(pool: EnginePool, body: ForecastInput, upload: UploadedFile | null, staged: StagedBody | null, code: SeriesRefusalCode): Promise<PreparedRequest> {
  if (staged instanceof StagedSeries) return staged.prepared;
  const columns = { target: body.target, timestamp: body.timestamp, itemId: body.item_id };
  const file = fileForThread(body.data, upload);
  if (file) return pool.stageSeriesFile(file, columns, code);
  let rows;
  try {
    // the series' identifiers as the file wrote them: "007" and "7" are two series, named so in the answer
    rows = await datasetRows(pool, body.data, upload, 'data', { textColumns: body.item_id ? [body.item_id] : [] });
  } catch (err) {
    if (err instanceof AppError && err.code === 'VALIDATION_ERROR' && code !== 'VALIDATION_ERROR') throw new AppError(code, 400, err.detail);
    throw err;
  }
  return preparedSeries(pool, rows, columns, code);
}

export function forecastRoutes(deps: AppDeps): AnyRoute[] {
  return [
    route({
      method: 'post',
      path: '/v1/forecast',
      summary: 'Forecast one or several series zero-shot (horizon × series credits); answers CSV',
      tag: 'Prediction',
      auth: 'key_or_session',
      operation: 'forecast',
      bodyKind: 'dataset',
      stagedBody: 'series',
      idempotent: true,
      usageKeyOnly: true,
      validationCode: 'INVALID_INPUT',
      body: forecastInputSchema,
      responses: {
        200: {
          description:
            `CSV, one row per series and future step: the timestamp column, the item_id column (when given), \`<target>_prediction\` (the point estimate), then one \`quantile_<q>\` column per requested quantile. At most ${MAX_FORECAST_ANSWER_VALUES} numbers (series × horizon × (1 + quantiles)) a call: 400 INVALID_INPUT, reason ANSWER_TOO_LARGE, beyond.`,
          contentType: 'text/csv',
          schema: z.string().openapi({ example: 'date,sales_prediction,quantile_0.1,quantile_0.9\n2026-12-01,104.2,96.8,111.5\n' }),
          headers: { [REMAINING_HEADER]: { description: 'Credits left (monthly allowance + purchased balance).', schema: { type: 'integer' } } },
        },
      },
      errors: [
        [400, 'INVALID_INPUT'],
        [400, 'CSV_UNREADABLE'],
        [402, 'CREDITS_EXHAUSTED'],
        [403, 'ADMIN_KEY_CANNOT_PREDICT'],
        [413, 'DATASET_TOO_LARGE'],
        [413, 'FILE_TOO_LARGE'],
        [422, 'FORECAST_FAILED'],
      ],
      async handler(ctx, { body, auth, upload, staged, requestId }) {
        const a = requireUsageKey(auth);
        const horizon = horizonOf(body, DEFAULT_HORIZON, 'INVALID_INPUT');
        const quantiles = body.quantiles ?? [];
        const result = await runForecast(
          callStores(deps.orm, deps.callPool),
          deps.enginePool,
          {
            prepared: await seriesOf(deps.enginePool, body, upload, staged, 'INVALID_INPUT'),
            target: body.target,
            horizon,
            horizonDefaulted: horizonDefaulted(body),
            itemId: body.item_id,
            quantiles,
            pointEstimate: body.point_estimate,
            seasonLength: body.season_length,
          },
          { accountId: a.accountId, workspaceId: a.workspaceId, httpRequestId: requestId, holdSeconds: deps.config.CREDIT_HOLD_SECONDS },
        );
        holdCredits(ctx, result.reservationId);
        ctx.state.creditsCharged = result.charged;
        ctx.set(REMAINING_HEADER, String(result.remaining));
        ctx.type = 'text/csv; charset=utf-8';
        ctx.body = result.csv;
      },
    }),
    route({
      method: 'post',
      path: '/v1/forecast/backtest',
      summary: 'Free: replay history windows and judge whether the series can be forecast; creates nothing',
      tag: 'Prediction',
      auth: 'key_or_session',
      operation: 'forecast.backtest',
      bodyKind: 'dataset',
      stagedBody: 'series',
      body: forecastInputSchema,
      responses: { 200: { description: 'Verdict and per-window scores, never forecast values.', schema: backtestResultSchema } },
      errors: [
        [400, 'VALIDATION_ERROR'],
        [400, 'CSV_UNREADABLE'],
        [413, 'DATASET_TOO_LARGE'],
        [413, 'FILE_TOO_LARGE'],
        [422, 'FORECAST_FAILED'],
      ],
      async handler(ctx, { body, auth, upload, staged }) {
        const a = requireAuth(auth);
        const horizon = horizonOf(body, DEFAULT_HORIZON, 'VALIDATION_ERROR');
        ctx.body = await runBacktest(
          deps.enginePool,
          {
            prepared: await seriesOf(deps.enginePool, body, upload, staged, 'VALIDATION_ERROR'),
            target: body.target,
            horizon,
            horizonDefaulted: horizonDefaulted(body),
            itemId: body.item_id,
            seasonLength: body.season_length,
          },
          freeCallOf(ctx, a),
        );
      },
    }),
  ];
}
