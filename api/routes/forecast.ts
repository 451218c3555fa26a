import { BacktestBudget } from '../../services/free-budgets';
import type { Row } from '../../services/datasets';
import { MAX_FORECAST_ANSWER_VALUES, runBacktest, runForecast } from '../../services/forecasting';
import { inRouteCode } from '../../services/series-body';
import { horizonDefaulted, horizonOf, type PackedSeries, type SeriesColumns, type SeriesRefusalCode } from '../../services/series-checks';
import { StagedBacktest, StagedForecast, type StagedBody } from '../../services/staged-bodies';
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

/** A series route's rows as datasetRows reads them (the item_id column kept as text); a VALIDATION_ERROR in the route's `code`. */
async function seriesRows(pool: EnginePool, body: ForecastInput, upload: UploadedFile | null, code: SeriesRefusalCode): Promise<Row[]> {
  try {
    // the series' identifiers as the file wrote them: "007" and "7" are two series, named so in the answer
    return await datasetRows(pool, body.data, upload, 'data', { textColumns: body.item_id ? [body.item_id] : [] });
  } catch (err) {
    throw inRouteCode(err, code);
  }
}

const columnsOf = (body: ForecastInput): SeriesColumns => ({ target: body.target, timestamp: body.timestamp, itemId: body.item_id });

/**
 * A forecast's series, checked, prepared and packed: by the thread that read a large body (StagedForecast) or
 * parses a large file, or on a thread from the body's rows or small file.
 */
async function forecastSeriesOf(pool: EnginePool, body: ForecastInput, upload: UploadedFile | null, staged: StagedBody | null): Promise<PackedSeries> {
  if (staged instanceof StagedForecast) return staged.prepared;
  const file = fileForThread(body.data, upload);
  if (file) return pool.stageForecastFile(file, columnsOf(body));
  return pool.prepareForecast({ rows: await seriesRows(pool, body, upload, 'INVALID_INPUT'), ...columnsOf(body) });
}

export function forecastRoutes(deps: AppDeps): AnyRoute[] {
  const backtestBudget = new BacktestBudget(deps.callPool);
  return [
    route({
      method: 'post',
      path: '/v1/forecast',
      summary: 'Forecast one or several series zero-shot (horizon × series credits); answers CSV',
      tag: 'Prediction',
      auth: 'key_or_session',
      operation: 'forecast',
      bodyKind: 'dataset',
      stagedBody: 'forecast',
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
            prepared: await forecastSeriesOf(deps.enginePool, body, upload, staged),
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
      stagedBody: 'backtest',
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
        if (staged instanceof StagedBacktest) {
          ctx.body = await backtestBudget.admit(a, staged.answer);
          return;
        }
        ctx.body = await backtestBudget.run(a, async () => {
          const request = { ...columnsOf(body), horizon: horizonOf(body, DEFAULT_HORIZON, 'VALIDATION_ERROR'), horizonDefaulted: horizonDefaulted(body), seasonLength: body.season_length };
          // a file large enough to be parsed on a thread is backtested there, its rows never coming back
          const file = fileForThread(body.data, upload);
          const source = file ? { file } : { rows: await seriesRows(deps.enginePool, body, upload, 'VALIDATION_ERROR') };
          return runBacktest(deps.enginePool, source, request, freeCallOf(ctx, a));
        });
      },
    }),
  ];
}
