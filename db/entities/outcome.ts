import { EntitySchema } from '@mikro-orm/core';

/**
 * An observed outcome: `pending` until a refresh folds it into the context as part of a new version;
 * `refused` when the refresh that folded it failed because the engine refused that context.
 */
export interface Outcome {
  id: string;
  modelId: string;
  workspaceId: string;
  predictionId: string | null;
  features: Record<string, unknown>;
  actual: unknown;
  status: 'pending' | 'folded' | 'refused';
  foldedInVersion: number | null;
  createdAt: Date;
}

export const OutcomeSchema = new EntitySchema<Outcome>({
  name: 'Outcome',
  tableName: 'outcomes',
  indexes: [{ properties: ['modelId', 'status'] }, { properties: ['predictionId'] }],
  properties: {
    id: { type: 'string', primary: true, length: 40 },
    modelId: { type: 'string', length: 40 },
    workspaceId: { type: 'string', length: 40 },
    predictionId: { type: 'string', length: 40, nullable: true },
    features: { type: 'json' },
    actual: { type: 'json' },
    status: { type: 'string', length: 20 },
    foldedInVersion: { type: 'integer', nullable: true },
    createdAt: { type: 'datetime', defaultRaw: 'now()' },
  },
});
