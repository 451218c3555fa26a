import { LockMode } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import { PLANS } from '../config/plans';
import { ContextChunkSchema, ModelSchema, OutcomeSchema, type Outcome } from '../db/entities';
import { TABULAR_ENGINE } from '../engines/tabular';
import { gzipJson, gzipText } from './compression';
import type { Row } from './datasets';
import type { EnginePool } from './engine-pool';
import { newId } from './ids';
import { loadContext, storeVersion } from './models';

/** Fixed so that the same data and settings always give the same artefact. */
export const TRAINING_SEED = 42;

export interface FitRequest {
  modelId: string;
  number: number;
  trigger: 'train' | 'refresh';
  outcomesFolded: number;
}

/**
 * Fits version `number` of a model from its context and stores it (idempotent: an existing version is
 * returned as is). The fit runs in the engine pool; progress is reported through `onProgress`.
 */
export async function fitAndStoreVersion(
  em: EntityManager,
  pool: EnginePool,
  request: FitRequest,
  options: { onProgress?: (p: { done: number; total: number }) => void; signal?: AbortSignal } = {},
): Promise<{ versionId: string; number: number } | null> {
  const model = await em.findOneOrFail(ModelSchema, { id: request.modelId }, { populate: ['account'] });
  const done = await em.getConnection().execute<Array<{ id: string }>>('select id from model_versions where model_id = ? and number = ?', [
    request.modelId,
    request.number,
  ]);
  if (done[0]) return { versionId: done[0].id, number: request.number };
  if (model.status === 'deleted') return null;

  const rows = await loadContext(em, request.modelId, request.number, PLANS[model.account.plan].maxTrainingRows);
  const trained = await pool.train(
    {
      rows,
      target: model.target,
      task: model.task === 'regression' ? 'regression' : 'classification',
      explain: model.explain,
      seed: TRAINING_SEED,
    },
    options,
  );
  const version = await storeVersion(em.fork(), request.modelId, request.number, {
    artefact: await gzipText(trained.artefact),
    engineId: TABULAR_ENGINE.id,
    engineVersion: TABULAR_ENGINE.version,
    formatVersion: trained.formatVersion,
    report: trained.report as unknown as Record<string, unknown>,
    validation: trained.validation,
    topFactors: trained.topFactors,
    featureColumns: trained.featureColumns,
    contextRows: rows.length,
    outcomesFolded: request.outcomesFolded,
    trigger: request.trigger,
  });
  return version ? { versionId: version.id, number: version.number } : null;
}

export const outcomeToRow = (outcome: Pick<Outcome, 'features' | 'actual'>, target: string): Row => ({
  ...outcome.features,
  [target]: outcome.actual as Row[string],
});

/**
 * Folds every pending outcome into the context as the chunk of the next version, and marks them
 * folded, in one transaction. Idempotent: when the next version's chunk already exists (a retried
 * activity), it is reused. Null, and nothing changed, when there is nothing to fold (a racing
 * refresh took the outcomes) or the model no longer serves (archived or deleted meanwhile).
 */
export async function foldPendingOutcomes(em: EntityManager, modelId: string): Promise<{ number: number; folded: number } | null> {
  return em.transactional(async (tx) => {
    const model = await tx.findOneOrFail(ModelSchema, { id: modelId }, { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true });
    const number = (model.currentVersion ?? 0) + 1;
    const existing = await tx.findOne(ContextChunkSchema, { model: modelId, versionNumber: number });
    if (existing) return { number, folded: existing.rowCount };
    if (model.status !== 'serving') return null;
    const pending = await tx.find(OutcomeSchema, { modelId, status: 'pending' }, { orderBy: { createdAt: 'asc', id: 'asc' } });
    if (pending.length === 0) return null;
    const data = await gzipJson(pending.map((o) => outcomeToRow(o, model.target)));
    tx.create(ContextChunkSchema, {
      id: newId('event'),
      model,
      versionNumber: number,
      rowCount: pending.length,
      data,
      createdAt: new Date(),
    });
    for (const outcome of pending) {
      outcome.status = 'folded';
      outcome.foldedInVersion = number;
    }
    await tx.flush();
    return { number, folded: pending.length };
  });
}

/**
 * A refresh whose context the engine refused (EngineDataError): the chunk it folded for version
 * `number` is removed and the outcomes in it are set aside as `refused` (kept, never folded again),
 * so the next refresh folds only what was reported after. The chunk used to stay and be fitted again
 * by every later refresh (an existing chunk is reused), which failed the same way for good: an eighth
 * probe's batch reporting one prediction 10,000 times left a context whose newest rows, all a plan
 * trains on, were that row, and the model could never be refreshed again. Nothing is done when the
 * version exists (the fit did store it). Answers how many outcomes were set aside.
 */
export async function setAsideRefusedFold(em: EntityManager, modelId: string, number: number): Promise<number> {
  return em.transactional(async (tx) => {
    await tx.findOneOrFail(ModelSchema, { id: modelId }, { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true });
    const connection = tx.getConnection();
    const context = tx.getTransactionContext();
    const stored = await connection.execute<Array<{ id: string }>>('select id from model_versions where model_id = ? and number = ?', [modelId, number], 'all', context);
    if (stored.length > 0) return 0;
    await connection.execute('delete from model_context_chunks where model_id = ? and version_number = ?', [modelId, number], 'run', context);
    const refused = await connection.execute<Array<{ id: string }>>(
      `update outcomes set status = 'refused', folded_in_version = null where model_id = ? and status = 'folded' and folded_in_version = ? returning id`,
      [modelId, number],
      'all',
      context,
    );
    return refused.length;
  });
}
