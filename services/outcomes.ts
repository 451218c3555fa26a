import type { EntityManager } from '@mikro-orm/postgresql';
import { ContextChunkSchema, OutcomeSchema, PredictionSchema, type Model } from '../db/entities';
import type { Row } from './datasets';
import { AppError } from './errors';
import { newId } from './ids';

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
 * Records one batch of outcomes as pending. Each names its prediction (`request_id`: the features are
 * looked up) or carries the full feature set; the whole batch is refused if one is invalid.
 */
export async function recordOutcomes(em: EntityManager, model: Model, outcomes: OutcomeInput[]): Promise<{ ids: string[]; pending: number }> {
  assertServing(model);
  const requestIds = [...new Set(outcomes.map((o) => o.request_id).filter((id): id is string => id !== undefined))];
  const predictions = requestIds.length
    ? await em.find(PredictionSchema, { id: { $in: requestIds }, modelId: model.id }, { fields: ['id', 'features'] })
    : [];
  const byId = new Map(predictions.map((p) => [p.id, p]));
  const expected = new Set(model.featureColumns);
  const now = new Date();
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
    const missing = model.featureColumns.filter((c) => !(c in features));
    const unexpected = Object.keys(features).filter((k) => !expected.has(k));
    if (missing.length || unexpected.length) {
      throw new AppError('COLUMN_MISMATCH', 400, `Outcome ${i}: features must hold exactly the model's feature columns.`, {
        expected_columns: model.featureColumns,
        missing_columns: missing,
        unexpected_columns: unexpected,
        row: i,
      });
    }
    return { id: newId('event'), modelId: model.id, workspaceId: model.workspace.id, predictionId, features, actual: o.actual, status: 'pending' as const, foldedInVersion: null, createdAt: now };
  });
  await em.insertMany(OutcomeSchema, rows);
  return { ids: rows.map((r) => r.id), pending: await pendingCount(em, model) };
}

/** Outcomes waiting for a refresh: pending ones, plus any folded into a chunk not yet fitted. */
export async function pendingCount(em: EntityManager, model: Model): Promise<number> {
  const pending = await em.count(OutcomeSchema, { modelId: model.id, status: 'pending' });
  const unfitted = await em.find(ContextChunkSchema, { model: model.id, versionNumber: { $gt: model.currentVersion ?? 0 } }, { fields: ['rowCount'] });
  return pending + unfitted.reduce((sum, c) => sum + c.rowCount, 0);
}
