import { EntitySchema } from '@mikro-orm/core';

/**
 * One scored row, kept for the prediction history and to match reported outcomes by `id` (request_id).
 * Stored one call per row in `prediction_calls`; `predictions` is the view that shows them row by row
 * (migration 20261124130000). Read-only: the services write calls with SQL (predictions.ts).
 */
export interface Prediction {
  id: string;
  modelId: string;
  workspaceId: string;
  versionNumber: number;
  /** The HTTP request that scored this row. */
  httpRequestId: string;
  features: Record<string, unknown>;
  output: Record<string, unknown>;
  createdAt: Date;
}

export const PredictionSchema = new EntitySchema<Prediction>({
  name: 'Prediction',
  tableName: 'predictions',
  properties: {
    id: { type: 'string', primary: true, length: 40 },
    modelId: { type: 'string', length: 40 },
    workspaceId: { type: 'string', length: 40 },
    versionNumber: { type: 'integer' },
    httpRequestId: { type: 'string', length: 40 },
    features: { type: 'json', columnType: 'json' },
    output: { type: 'json', columnType: 'json' },
    createdAt: { type: 'datetime', defaultRaw: 'now()' },
  },
});
