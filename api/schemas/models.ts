import { datasetRowSchema, datasetRowsSchema, displayName, isoDateTime, pageQuerySchema, paginationSchema, queryInteger } from './common';
import { z } from '../zod';

const rowSchema = datasetRowSchema;

export const trainingInputSchema = z
  .object({
    target: z.string().min(1).max(500).openapi({ description: 'Column to predict.' }),
    engine: z.string().min(1).optional().openapi({ description: 'Engine id from GET /v1/engines; required when creating a model.' }),
    name: displayName().optional(),
    task: z.enum(['classification', 'regression']).optional().openapi({ description: 'Inferred from the target when omitted.' }),
    explain: z.boolean().default(false).openapi({ description: 'Compute version.top_factors (permutation importance on held-out rows). Training then takes longer: 1.0-1.5 times as long on the benchmark datasets measured, about 1.7 times with 26 classes.' }),
    auto_update: z.boolean().default(false).openapi({ description: 'Each POST /outcomes triggers an integration (a refresh).' }),
    data: datasetRowsSchema().optional().openapi({ description: 'Rows; or send a CSV/JSON file in the multipart field `file`.' }),
  })
  .strict()
  .openapi('TrainingInput');

export type TrainingInput = z.infer<typeof trainingInputSchema>;

export const versionSchema = z
  .object({
    id: z.string().openapi({ example: 'ver_5mX0aQ9wT2bL7rK1cJ8dPz' }),
    number: z.number().int(),
    engine: z.object({ id: z.string(), version: z.string() }),
    format_version: z.number().int(),
    trigger: z.enum(['train', 'refresh']),
    serving: z.boolean(),
    context_rows: z.number().int(),
    outcomes_folded: z.number().int(),
    validation: z.object({ metric: z.string(), score: z.number(), higher_is_better: z.boolean(), baseline_score: z.number() }).passthrough(),
    top_factors: z.array(z.object({ feature: z.string(), importance: z.number() })).optional().openapi({ description: 'Only when the model was trained with explain: true (permutation importance on held-out rows).' }),
    created_at: isoDateTime,
  })
  .openapi('ModelVersion');

export const modelSchema = z
  .object({
    id: z.string().openapi({ example: 'mdl_7Qm2Lx0aZ9pW3kT8rB1cVd' }),
    name: z.string(),
    target: z.string(),
    task: z.enum(['binary', 'multiclass', 'regression']),
    engine: z.string(),
    status: z.enum(['training', 'serving', 'archived']),
    feature_columns: z.array(z.string()),
    explain: z.boolean(),
    auto_update: z.boolean(),
    version: versionSchema.nullable(),
    versions_count: z.number().int(),
    workspace_id: z.string(),
    created_at: isoDateTime,
    updated_at: isoDateTime,
    archived_at: isoDateTime.nullable(),
  })
  .openapi('Model');

export const modelListSchema = z.object({ data: z.array(modelSchema), pagination: paginationSchema }).openapi('ModelList');
export const versionListSchema = z.object({ data: z.array(versionSchema), pagination: paginationSchema }).openapi('ModelVersionList');

export const modelListQuerySchema = pageQuerySchema().extend({
  status: z
    .enum(['serving', 'archived'])
    .optional()
    .openapi({ description: 'archived lists archived models; serving, or no status, lists serving models (models still training are not listed).' }),
});

export const modelIdParamsSchema = z.object({ id: z.string().min(1).max(64) });

export const patchModelSchema = z
  .object({
    name: displayName().optional(),
    target: z.string().optional().openapi({ description: 'Frozen once trained: a different value answers 409.' }),
    task: z.string().optional().openapi({ description: 'Frozen once trained: a different value answers 409.' }),
  })
  .strict()
  .openapi('PatchModel');

export const predictInputSchema = z
  .object({
    rows: datasetRowsSchema().optional().openapi({ description: 'Rows to score; or a CSV/JSON file in the multipart field `file`.' }),
    data: datasetRowsSchema().optional().openapi({ description: 'Alias of rows.' }),
  })
  .strict()
  .openapi('PredictInput');

export const predictionRowSchema = z
  .object({ request_id: z.string(), prediction: z.union([z.string(), z.number(), z.boolean()]) })
  .catchall(z.number())
  .openapi('PredictionRow', { description: 'prediction, plus one proba_<class> per class for classification, and the request_id to report its outcome.' });

export const predictResultSchema = z
  .object({
    model_id: z.string(),
    version: z.object({ id: z.string(), number: z.number().int() }),
    predictions: z.array(predictionRowSchema),
    credits_charged: z.number().int(),
    credits_remaining: z.number().int(),
  })
  .openapi('PredictResult');

export const predictionHistoryQuerySchema = pageQuerySchema(500, 50);
export const predictionHistorySchema = z
  .object({
    data: z.array(
      z.object({
        request_id: z.string(),
        version_number: z.number().int(),
        features: rowSchema,
        output: z.record(z.string(), z.unknown()),
        outcome: z.unknown().optional(),
        created_at: isoDateTime,
      }),
    ),
    pagination: paginationSchema,
  })
  .openapi('PredictionHistory');

export const outcomesInputSchema = z
  .object({
    outcomes: z
      .array(
        z
          .object({
            actual: z.union([z.string(), z.number(), z.boolean()]).openapi({ description: 'The value actually observed.' }),
            request_id: z.string().min(1).optional().openapi({ description: 'request_id of the prediction (its features are looked up).' }),
            features: rowSchema.optional().openapi({ description: 'The full feature set of the row.' }),
          })
          .strict()
          .refine((o) => o.request_id !== undefined || o.features !== undefined, { message: 'each outcome needs request_id or features' }),
      )
      .min(1)
      .max(10_000),
  })
  .strict()
  .openapi('OutcomesInput');

export const outcomesResultSchema = z
  .object({ accepted: z.number().int(), pending: z.number().int(), outcome_ids: z.array(z.string()), integration_started: z.boolean() })
  .openapi('OutcomesResult');

export const refreshResultSchema = z
  .object({ model_id: z.string(), version: versionSchema, outcomes_folded: z.number().int() })
  .openapi('RefreshResult');

export const performanceQuerySchema = z.object({ days: queryInteger(1, 365).default(30) });

const scoreSchema = z.number().nullable();

export const performanceResultSchema = z
  .object({
    model_id: z.string(),
    days: z.number().int(),
    from: isoDateTime,
    predictions: z.number().int().openapi({ description: 'Rows scored in the window.' }),
    expected: z
      .object({ version: z.number().int(), metric: z.string(), score: scoreSchema, higher_is_better: z.boolean(), baseline_score: scoreSchema })
      .nullable()
      .openapi({ description: 'The serving version\'s validation score, what the observed score is compared with.' }),
    observed: z
      .object({ matched: z.number().int(), metric: z.string(), score: scoreSchema })
      .nullable()
      .openapi({ description: 'Null until an outcome matches a prediction of the window.' }),
    verdict: z.enum(['holding', 'weak', 'dropped']).nullable(),
    thresholds: z
      .object({ holding_gap: z.number(), weak_gap: z.number(), holding_ratio: z.number(), weak_ratio: z.number() })
      .openapi({ description: 'Holding within holding_gap of the expected score (higher is better) or holding_ratio times it (lower is better); weak within weak_gap or weak_ratio while beating the lazy baseline; dropped beyond.' }),
  })
  .openapi('PerformanceResult');
