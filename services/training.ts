import { LockMode } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import { FITS_PER_DAY, PLANS, type PlanName } from '../config/plans';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import { ContextChunkSchema, ModelSchema } from '../db/entities';
import { TABULAR_ENGINE } from '../engines/tabular';
import { gzipText } from './compression';
import { fitBudgetFreesAt } from './fit-budgets';
import type { EnginePool } from './engine-pool';
import { TRAINING_SEED } from './datasets';
import { newId } from './ids';
import { contextChunks, storeVersion, unfoldUnlessServing } from './models';

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
  // archived since its fold: nothing is fitted, the folded outcomes wait again (unless restored meanwhile)
  if (request.trigger === 'refresh' && model.status !== 'serving' && (await unfoldUnlessServing(em.fork(), request.modelId, request.number))) return null;

  // The chunks go to the engine thread as stored: their rows (up to a plan's million) are read there,
  // not on this process's event loop, which also runs every workflow.
  const maxRows = PLANS[model.account.plan].maxTrainingRows;
  const chunks = await contextChunks(em, request.modelId, request.number, maxRows);
  const trained = await pool.train(
    {
      rows: { chunks, maxRows },
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
    contextRows: trained.rowCount,
    outcomesFolded: request.outcomesFolded,
    trigger: request.trigger,
  });
  return version ? { versionId: version.id, number: version.number } : null;
}

/** How many outcomes one fetch of a fold's cursor reads: a few megabytes of JSON text at most. */
const FOLD_PAGE_ROWS = 5_000;

/**
 * A pending outcome as its context row, written by PostgreSQL as JSON text: its features, then the
 * target column with the actual value, as `{...features, [target]: actual}` would be (parsed, the same
 * keys in the same order: jsonb's order, then the target).
 */
const OUTCOME_ROW_JSON = `case when features = '{}'::jsonb then '{' else left(features::text, -1) || ', ' end || to_jsonb(?::text)::text || ': ' || actual::text || '}'`;

/** A fold's answer: the next version's number and the outcomes folded into it, or when the model's refresh budget frees up. */
export type FoldResult = { number: number; folded: number } | { deferredUntil: string; limit: number };

/**
 * Folds every pending outcome into the context as the chunk of the next version, and marks them
 * folded, in one transaction. Idempotent: when the next version's chunk already exists (a retried
 * activity), it is reused. Null, and nothing changed, when there is nothing to fold (a racing
 * refresh took the outcomes) or the model no longer serves (archived or deleted meanwhile); nothing
 * changed either, and the time to try again, when the model has spent its plan's refreshes of the
 * last 24 hours (`deferredUntil`).
 *
 * The rows are written as JSON by PostgreSQL and read through a cursor, a page at a time, into a
 * gzip stream, and one statement marks them folded: a model may hold a plan's training rows of
 * pending outcomes (up to 1,000,000), and reading them as ORM entities, building the rows in
 * JavaScript and flushing one update per outcome took 25 s, 850 MB and blocked the worker's event
 * loop (which also runs every workflow) for 6 s at a time for 100,000 of them.
 */
export async function foldPendingOutcomes(em: EntityManager, modelId: string): Promise<FoldResult | null> {
  return em.transactional(async (tx) => {
    // The model's row, locked: outcomes are stored under a share lock of it, so none arrives while
    // the fold reads and marks them.
    const model = await tx.findOneOrFail(ModelSchema, { id: modelId }, { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true });
    const number = (model.currentVersion ?? 0) + 1;
    const existing = await tx.findOne(ContextChunkSchema, { model: modelId, versionNumber: number });
    if (existing) return { number, folded: existing.rowCount };
    if (model.status !== 'serving') return null;
    const connection = tx.getConnection();
    const context = tx.getTransactionContext();
    // the plan's refreshes of the last 24 hours, counted on the versions they made
    const [owner] = await connection.execute<Array<{ plan: PlanName }>>('select plan from accounts where id = ?', [model.account.id], 'all', context);
    const limit = FITS_PER_DAY[owner?.plan ?? 'free'];
    const countedSql = `select created_at from model_versions where created_at > ? and model_id = ? and trigger = 'refresh'`;
    const deferredUntil = await fitBudgetFreesAt(tx, countedSql, [modelId], limit, new Date());
    if (deferredUntil) return { deferredUntil: deferredUntil.toISOString(), limit };
    const cursor = `fold_${number}`;
    await connection.execute(
      `declare ${cursor} no scroll cursor for select ${OUTCOME_ROW_JSON} as row from outcomes where model_id = ? and status = 'pending' order by created_at, id`,
      [model.target, modelId],
      'run',
      context,
    );
    let folded = 0;
    async function* rowsAsJson(): AsyncGenerator<string> {
      for (;;) {
        const page = await connection.execute<Array<{ row: string }>>(`fetch forward ${FOLD_PAGE_ROWS} from ${cursor}`, [], 'all', context);
        if (page.length === 0) break;
        yield (folded === 0 ? '[' : ',') + page.map((r) => r.row).join(',');
        folded += page.length;
      }
      if (folded > 0) yield ']';
    }
    const compressed: Buffer[] = [];
    await pipeline(Readable.from(rowsAsJson()), createGzip({ level: 6 }), async (gzipped: AsyncIterable<Buffer>) => {
      for await (const part of gzipped) compressed.push(part);
    });
    await connection.execute(`close ${cursor}`, [], 'run', context);
    if (folded === 0) return null;
    tx.create(ContextChunkSchema, {
      id: newId('event'),
      model,
      versionNumber: number,
      rowCount: folded,
      data: Buffer.concat(compressed),
      createdAt: new Date(),
    });
    const [marked] = await connection.execute<Array<{ n: number }>>(
      `with marked as (update outcomes set status = 'folded', folded_in_version = ? where model_id = ? and status = 'pending' returning 1) select count(*)::int as n from marked`,
      [number, modelId],
      'all',
      context,
    );
    // the lock keeps new outcomes out, so every row marked is a row written
    if (marked?.n !== folded) throw new Error(`fold of ${modelId} read ${folded} pending outcomes and marked ${marked?.n ?? 0}`);
    await tx.flush();
    return { number, folded };
  });
}

/**
 * A refresh whose context the engine refused (EngineDataError): the chunk it folded for version
 * `number` is removed and the outcomes in it are deleted, so the next refresh folds only what was
 * reported after. They were kept as `refused` until 2026-11-29, where no bound counted them: a
 * twenty-first probe's free model refused six folds of 10,000 outcomes of 9.2 MB, 43 → 415 MB of
 * database, and a deletion of the model left them. The chunk used to stay and be fitted again
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
    const [refused] = await connection.execute<Array<{ n: number }>>(
      `with refused as (delete from outcomes where model_id = ? and status = 'folded' and folded_in_version = ? returning 1) select count(*)::int as n from refused`,
      [modelId, number],
      'all',
      context,
    );
    return refused?.n ?? 0;
  });
}
