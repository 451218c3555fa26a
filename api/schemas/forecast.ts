import { MAX_SEASON_LENGTH } from '../../engines/forecast';
import { z } from '../zod';
import { datasetRowsSchema } from './common';

export const DEFAULT_HORIZON = 12;
export const MAX_QUANTILES = 99;

const horizonField = z.number().int('horizon must be an integer').min(1, 'horizon must be at least 1').max(1000, 'horizon must be at most 1000');

// one rule for forecast and backtest (the same body): the document says uniqueItems, the server checks it
const quantilesField = z
  .array(z.number().gt(0, 'each quantile must be strictly between 0 and 1').lt(1, 'each quantile must be strictly between 0 and 1'))
  .max(MAX_QUANTILES)
  .refine((qs) => new Set(qs).size === qs.length, 'each quantile may be asked for once')
  .openapi({ uniqueItems: true });

export const forecastInputSchema = z
  .object({
    target: z.string().min(1).openapi({ description: 'Numeric value column.' }),
    horizon: horizonField.optional().openapi({ description: `Future steps, an integer from 1 to 1000 (default ${DEFAULT_HORIZON}).` }),
    prediction_length: horizonField.optional().openapi({ description: 'Alias of horizon.' }),
    data: datasetRowsSchema().optional().openapi({ description: 'One object per row; or a CSV/JSON file in the multipart field `file`.' }),
    timestamp: z.string().min(1).optional().openapi({ description: 'Timestamp column: dates (any year from 1 to 9999) or integer positions with a regular step (1, 2, 3, …); inferred when omitted (a date column first, else an integer one).' }),
    quantiles: quantilesField.optional().openapi({ description: 'Quantile levels, each strictly between 0 and 1, each once; one quantile_<q> column each.' }),
    item_id: z.string().min(1).optional().openapi({ description: 'Column identifying several series; each is forecast from its own history only.' }),
    point_estimate: z.enum(['mean', 'median']).default('mean').openapi({ description: 'Statistic served in <target>_prediction.' }),
    season_length: z
      .number()
      .int()
      .min(1)
      .max(MAX_SEASON_LENGTH)
      .optional()
      .openapi({
        description:
          'Our addition: steps per seasonal cycle (e.g. 12 for monthly data, 24 for hourly). Inferred from the calendar when omitted; a series given by integer positions has no season unless this names one.',
      }),
  })
  .strict()
  .openapi('ForecastInput');

export type ForecastInput = z.infer<typeof forecastInputSchema>;

export const backtestResultSchema = z
  .object({
    horizon: z.number().int(),
    windows: z.number().int(),
    baseline: z.string(),
    mase: z.number(),
    naive_mase: z.number(),
    verdict: z.object({ level: z.enum(['usable', 'no_signal']), message: z.string() }),
    by_window: z.array(
      z.object({ window: z.number().int(), item_id: z.string().optional(), start: z.string(), end: z.string(), mase: z.number(), naive_mase: z.number() }),
    ),
    series: z
      .array(z.object({ item_id: z.string().nullable(), windows: z.number().int(), mase: z.number(), naive_mase: z.number(), verdict: z.object({ level: z.enum(['usable', 'no_signal']), message: z.string() }) }))
      .optional()
      .openapi({ description: 'Per series, when item_id groups several.' }),
  })
  .openapi('BacktestResult', { description: 'Scores of replayed history windows (MASE against the naive baseline, seasonal when seasonal); never forecast values.' });
