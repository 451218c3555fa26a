import { paginationSchema } from './common';
import { z } from '../zod';

export const engineSchema = z
  .object({
    id: z.string().min(1),
    version: z.string().min(1),
    kind: z.enum(['tabular', 'forecast']),
    tasks: z.array(z.enum(['binary', 'multiclass', 'regression', 'forecast'])).min(1),
    credit_price_per_row: z.number().int().min(0).openapi({ description: 'Credits per scored row (tabular) or per forecast point (horizon × series).' }),
    priced_per: z.enum(['scored_row', 'forecast_point']),
    description: z.string(),
    default: z.boolean(),
  })
  .openapi('Engine');

export const engineListSchema = z.object({ data: z.array(engineSchema), pagination: paginationSchema }).openapi('EngineList');
