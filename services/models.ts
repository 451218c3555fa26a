import { LockMode } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import { FITS_PER_DAY, keptModelsLimit, PLANS, type PlanName } from '../config/plans';
import {
  AccountSchema,
  ContextChunkSchema,
  ModelSchema,
  ModelVersionSchema,
  OutcomeSchema,
  WorkspaceSchema,
  type Model,
  type ModelStatus,
  type ModelTask,
  type ModelVersion,
} from '../db/entities';
import { findEngine } from '../engines/catalogue';
import { gunzipJson, gzipJson } from './compression';
import { cleanDisplayName } from './display-names';
import { newestRows } from './context-rows';
import { checkedTrainingEngine, dataRefusal, type Row } from './datasets';
import { EngineDataError, type EnginePool } from './engine-pool';
import { AppError, notFound } from './errors';
import { fitBudgetFreesAt, fitBudgetSpent } from './fit-budgets';
import { assertServing, pendingCount } from './outcomes';
import type { TemporalGateway } from './temporal/gateway';
import { newId } from './ids';
import { recordEvent } from './webhooks/events';

/** Models that take a quota slot: everything not archived and not deleted. */
const QUOTA_STATUSES: ModelStatus[] = ['training', 'serving'];

export async function getModel(
  em: EntityManager,
  workspaceId: string,
  modelId: string,
  options: { includeDeleted?: boolean; lock?: boolean | 'share' } = {},
): Promise<Model> {
  // `lock` (inside a transaction): the row locked and read afresh, so that status changes made at the
  // same moment (archive, restore, delete) happen one after the other, each on the other's result;
  // `share`: the status stays as read until the transaction ends (writes that depend on it, such as
  // outcomes, do not block each other)
  const lockMode = options.lock === 'share' ? LockMode.PESSIMISTIC_READ : options.lock ? LockMode.PESSIMISTIC_WRITE : undefined;
  const model = await em.findOne(ModelSchema, { id: modelId, workspace: workspaceId }, lockMode ? { lockMode, refresh: true } : {});
  if (!model || (model.status === 'deleted' && !options.includeDeleted)) throw notFound('The model');
  return model;
}

/** 402 QUOTA_MODELS_EXCEEDED when the account holds its plan's models; answers the plan. Takes the account's row lock. */
async function assertQuotaSlot(tx: EntityManager, accountId: string): Promise<PlanName> {
  const account = await tx.findOneOrFail(AccountSchema, { id: accountId }, { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true });
  const limit = PLANS[account.plan].maxModels;
  if (limit === null) return account.plan;
  const used = await tx.count(ModelSchema, { account: accountId, status: { $in: QUOTA_STATUSES } });
  if (used >= limit) {
    throw new AppError(
      'QUOTA_MODELS_EXCEEDED',
      402,
      `The ${account.plan} plan allows ${limit} model${limit === 1 ? '' : 's'} per account (all workspaces); archive or delete one, or change plan.`,
      { limit, used },
    );
  }
  return account.plan;
}

/**
 * 402 QUOTA_MODELS_EXCEEDED when the account keeps as many models as its plan allows, archived ones
 * included (keptModelsLimit): only a new model is held to it, a restore keeps what is kept. Under the
 * account's row lock, taken by assertQuotaSlot.
 */
async function assertKeptModels(tx: EntityManager, accountId: string, plan: PlanName): Promise<void> {
  const limit = keptModelsLimit(plan);
  if (limit === null) return;
  const used = await tx.count(ModelSchema, { account: accountId, status: { $in: [...QUOTA_STATUSES, 'archived'] } });
  if (used >= limit) {
    throw new AppError(
      'QUOTA_MODELS_EXCEEDED',
      402,
      `This account keeps ${used} models, archived ones included, and the ${plan} plan keeps at most ${limit} (all workspaces); delete archived models to make room, or change plan.`,
      { limit, used },
    );
  }
}

/** A training set as a model's context stores it: its rows as gzipped JSON (what gzipJson writes), and their number. */
export interface PreparedTrainingSet {
  rowCount: number;
  context: Buffer;
}

/** A prepared training set whose task was inferred (or checked) by the engine's analysis. */
export interface AnalysedTrainingSet extends PreparedTrainingSet {
  task: ModelTask;
}

export interface NewModelInput {
  workspaceId: string;
  accountId: string;
  name: string | undefined;
  target: string;
  task: ModelTask;
  engineId: string;
  explain: boolean;
  autoUpdate: boolean;
  rows: Row[] | PreparedTrainingSet;
}

/**
 * The name of a model created without one: "Model of <target>", held to the rules of a name given
 * (at most 200 characters, no control character, no bidirectional override or isolate). A target may
 * be named in 500 characters of any kind (it is a column of the data): a ninth probe's 300-character
 * target without a name answered 500 (the name column holds 200), and a target holding U+202E named
 * the model with it.
 */
const defaultModelName = (target: string): string => cleanDisplayName(`Model of ${target}`) ?? 'Model';

/**
 * 429 RATE_LIMITED when the account created its plan's FITS_PER_DAY models in the 24 hours before `now`
 * (archived and deleted ones included: each was a fit and kept its context). Under the account's row
 * lock, as the quota.
 */
async function assertTrainingBudget(tx: EntityManager, accountId: string, plan: PlanName, now: Date): Promise<void> {
  const limit = FITS_PER_DAY[plan];
  const freesAt = await fitBudgetFreesAt(tx, 'select created_at from models where created_at > ? and account_id = ?', [accountId], limit, now);
  if (freesAt) {
    throw fitBudgetSpent(`This account created the ${limit.toLocaleString('en-US')} models its plan allows in 24 hours (archived and deleted ones count).`, limit, freesAt, now);
  }
}

/**
 * Creates the model (status `training`) with its context data as chunk 1, after the quota check;
 * the account row lock serialises concurrent creations so the quota cannot be overrun.
 */
export async function createModelForTraining(em: EntityManager, input: NewModelInput): Promise<Model> {
  const { rowCount, context } = Array.isArray(input.rows) ? { rowCount: input.rows.length, context: await gzipJson(input.rows) } : input.rows;
  return em.transactional(async (tx) => {
    const plan = await assertQuotaSlot(tx, input.accountId);
    await assertKeptModels(tx, input.accountId, plan);
    const now = new Date();
    await assertTrainingBudget(tx, input.accountId, plan, now);
    const id = newId('model');
    const model = tx.create(ModelSchema, {
      id,
      workspace: tx.getReference(WorkspaceSchema, input.workspaceId),
      account: tx.getReference(AccountSchema, input.accountId),
      name: input.name ?? defaultModelName(input.target),
      target: input.target,
      task: input.task,
      engineId: input.engineId,
      featureColumns: [],
      status: 'training',
      explain: input.explain,
      autoUpdate: input.autoUpdate,
      currentVersion: null,
      createdAt: now,
      updatedAt: now,
      archivedAt: null,
      deletedAt: null,
    });
    tx.create(ContextChunkSchema, {
      id: newId('event'),
      model,
      versionNumber: 1,
      rowCount,
      data: context,
      createdAt: now,
    });
    await tx.flush();
    return model;
  });
}

/**
 * The rows version `versionNumber` learns from: every chunk up to it, in order, capped at `maxRows`
 * (the plan's training rows) by dropping the oldest rows, so that a model fed outcomes for years
 * trains on its most recent data within its plan. Chunks are read newest first and no further than
 * needed.
 */
export async function loadContext(em: EntityManager, modelId: string, versionNumber: number, maxRows: number | null = null): Promise<Row[]> {
  const chunks = await contextChunks(em, modelId, versionNumber, maxRows);
  return newestRows((await Promise.all(chunks.map((chunk) => gunzipJson<Row[]>(chunk)))).flat(), maxRows);
}

/**
 * The gzipped chunks loadContext reads, in order, unread: an engine thread makes the same rows of them
 * (services/context-rows.ts), so that a fit's rows are never parsed on the worker's event loop.
 */
export async function contextChunks(em: EntityManager, modelId: string, versionNumber: number, maxRows: number | null): Promise<Buffer[]> {
  const sizes = await em.find(
    ContextChunkSchema,
    { model: modelId, versionNumber: { $lte: versionNumber } },
    { fields: ['id', 'rowCount', 'versionNumber', 'createdAt'], orderBy: { versionNumber: 'desc', createdAt: 'desc' } },
  );
  const needed: string[] = [];
  let count = 0;
  for (const chunk of sizes) {
    if (maxRows !== null && count >= maxRows) break;
    needed.push(chunk.id);
    count += chunk.rowCount;
  }
  const chunks = needed.length ? await em.find(ContextChunkSchema, { id: { $in: needed } }, { orderBy: { versionNumber: 'asc', createdAt: 'asc' }, populate: ['data'] }) : [];
  return chunks.map((chunk) => chunk.data);
}

/** Models still `training` since before `createdBefore`: their creating call may have died. */
export async function strandedTrainings(em: EntityManager, createdBefore: Date): Promise<Array<{ id: string; accountId: string }>> {
  return em
    .getConnection()
    .execute<Array<{ id: string; accountId: string }>>(`select id, account_id as "accountId" from models where status = 'training' and created_at < ? order by created_at limit 100`, [createdBefore]);
}

/** A model whose first fit failed for good: deleted, so it never holds a quota slot. Idempotent. */
export async function abandonTraining(em: EntityManager, modelId: string): Promise<void> {
  const model = await em.findOne(ModelSchema, { id: modelId });
  if (!model || model.status !== 'training') return;
  await deleteModel(em, model.workspace.id, modelId);
}

export interface FittedVersion {
  artefact: Buffer;
  engineId: string;
  engineVersion: string;
  formatVersion: number;
  report: Record<string, unknown>;
  validation: Record<string, unknown>;
  topFactors: Array<{ feature: string; importance: number }> | null;
  featureColumns: string[];
  contextRows: number;
  outcomesFolded: number;
  trigger: 'train' | 'refresh';
}

/**
 * Stores version `number` and makes it serve. Idempotent: a retried activity that finds the version
 * already stored changes nothing, so a model ends trained exactly once.
 */
export async function storeVersion(em: EntityManager, modelId: string, number: number, fitted: FittedVersion): Promise<ModelVersion | null> {
  return em.transactional(async (tx) => {
    const model = await tx.findOneOrFail(ModelSchema, { id: modelId }, { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true });
    const existing = await tx.findOne(ModelVersionSchema, { model: modelId, number });
    if (existing) return existing;
    // A model deleted while its fit ran gets no new artefact.
    if (model.status === 'deleted') return null;
    // Nor does a model archived while its refresh fitted: the outcomes it folded wait again.
    if (fitted.trigger === 'refresh' && model.status !== 'serving') {
      await unfold(tx, modelId, number);
      return null;
    }
    const version = tx.create(ModelVersionSchema, {
      id: newId('version'),
      model,
      number,
      engineId: fitted.engineId,
      engineVersion: fitted.engineVersion,
      formatVersion: fitted.formatVersion,
      artefact: fitted.artefact,
      artefactBytes: fitted.artefact.length,
      report: fitted.report,
      validation: fitted.validation,
      topFactors: fitted.topFactors,
      contextRows: fitted.contextRows,
      outcomesFolded: fitted.outcomesFolded,
      trigger: fitted.trigger,
      createdAt: new Date(),
    });
    model.currentVersion = Math.max(model.currentVersion ?? 0, number);
    model.featureColumns = fitted.featureColumns;
    model.engineId = fitted.engineId;
    if (model.status === 'training') model.status = 'serving';
    await tx.flush();
    // The event commits with the version it announces (outbox), or not at all.
    await recordEvent(tx, {
      workspaceId: model.workspace.id,
      type: fitted.trigger === 'train' ? 'model.trained' : 'model.refreshed',
      dedupeKey: `model.version:${version.id}`,
      data: modelVersionEventData(model, version),
    });
    return version;
  });
}

/**
 * The fold of version `number` undone (a version not stored): its chunk removed and its outcomes
 * pending again, so that the next refresh folds them. Run under the model's row lock.
 */
async function unfold(tx: EntityManager, modelId: string, number: number): Promise<void> {
  await tx.nativeDelete(ContextChunkSchema, { model: modelId, versionNumber: number });
  await tx.nativeUpdate(OutcomeSchema, { modelId, status: 'folded', foldedInVersion: number }, { status: 'pending', foldedInVersion: null });
}

/**
 * A refresh about to fit version `number` of a model that no longer serves (archived since its fold):
 * under the model's lock, when it still does not serve, the fold is undone and the fit is not to run.
 * Answers whether it was undone (false: the model serves again, restored meanwhile, and the fit goes on).
 * An archived model is never refreshed by a refresh or an integration that was already running (a
 * seventeenth probe archived one while its integration fitted: the version was stored, and the
 * model.refreshed event sent, after the archive).
 */
export async function unfoldUnlessServing(em: EntityManager, modelId: string, number: number): Promise<boolean> {
  return em.transactional(async (tx) => {
    const model = await tx.findOneOrFail(ModelSchema, { id: modelId }, { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true });
    if (model.status === 'serving' || (await tx.findOne(ModelVersionSchema, { model: modelId, number }))) return false;
    if (model.status !== 'deleted') await unfold(tx, modelId, number);
    return true;
  });
}

/** `data` of model.trained and model.refreshed (documented in OpenAPI and the README). */
export function modelVersionEventData(model: Model, version: ModelVersion): Record<string, unknown> {
  return {
    model: { id: model.id, name: model.name, target: model.target, task: model.task, status: model.status },
    version: {
      id: version.id,
      number: version.number,
      engine: { id: version.engineId, version: version.engineVersion },
      trigger: version.trigger,
      context_rows: version.contextRows,
      outcomes_folded: version.outcomesFolded,
      validation: version.validation,
      created_at: version.createdAt.toISOString(),
    },
  };
}

export async function listModels(
  em: EntityManager,
  workspaceId: string,
  query: { status?: 'serving' | 'archived'; limit: number; offset: number },
): Promise<{ items: Model[]; total: number }> {
  // Models still training are not listed: they cannot serve yet (the contract lists serving models).
  const statuses: ModelStatus[] = query.status === 'archived' ? ['archived'] : ['serving'];
  const [items, total] = await em.findAndCount(
    ModelSchema,
    { workspace: workspaceId, status: { $in: statuses } },
    { orderBy: { createdAt: 'desc', id: 'desc' }, limit: query.limit, offset: query.offset },
  );
  return { items, total };
}

export async function renameModel(em: EntityManager, workspaceId: string, modelId: string, changes: { name?: string; target?: string; task?: string }): Promise<Model> {
  const model = await getModel(em, workspaceId, modelId);
  if (changes.target !== undefined && changes.target !== model.target) {
    throw new AppError('MODEL_FIELD_FROZEN', 409, 'The target of a model is frozen once trained; create a new model for another target.');
  }
  if (changes.task !== undefined && changes.task !== model.task) {
    throw new AppError('MODEL_FIELD_FROZEN', 409, 'The task of a model is frozen once trained; create a new model for another task.');
  }
  if (changes.name !== undefined) model.name = changes.name;
  await em.flush();
  return model;
}

export async function archiveModel(em: EntityManager, workspaceId: string, modelId: string): Promise<void> {
  await em.transactional(async (tx) => {
    const model = await getModel(tx, workspaceId, modelId, { lock: true });
    if (model.status === 'training') throw new AppError('MODEL_NOT_TRAINED', 409, 'The model is still training; archive it once it serves.');
    if (model.status === 'archived') return;
    model.status = 'archived';
    model.archivedAt = new Date();
    await tx.flush();
  });
}

export async function restoreModel(em: EntityManager, workspaceId: string, modelId: string): Promise<Model> {
  return em.transactional(async (tx) => {
    const model = await getModel(tx, workspaceId, modelId, { includeDeleted: true, lock: true });
    if (model.status === 'deleted') throw new AppError('MODEL_DELETED', 409, 'The model was deleted; deletion is irreversible.');
    if (model.status !== 'archived') return model;
    await assertQuotaSlot(tx, model.account.id);
    model.status = 'serving';
    model.archivedAt = null;
    await tx.flush();
    return model;
  });
}

/**
 * Irreversible: artefacts, context data and pending outcomes (and any kept `refused` before
 * 2026-11-29) are purged; the row stays as a tombstone.
 * Outcomes a running refresh folded into a version not stored yet are pending ones too: that version
 * will never be stored (storeVersion refuses a deleted model), and they stayed, features included,
 * marked folded into a version that never existed (a tenth probe deleted a model while it refreshed).
 */
export async function deleteModel(em: EntityManager, workspaceId: string, modelId: string): Promise<void> {
  await em.transactional(async (tx) => {
    const model = await getModel(tx, workspaceId, modelId, { lock: true });
    const stored = model.currentVersion ?? 0;
    model.status = 'deleted';
    model.deletedAt = new Date();
    await tx.flush();
    await tx.nativeUpdate(ModelVersionSchema, { model: modelId }, { artefact: null });
    await tx.nativeDelete(ContextChunkSchema, { model: modelId });
    await tx.nativeDelete(OutcomeSchema, { modelId, $or: [{ status: 'pending' }, { status: 'refused' }, { status: 'folded', foldedInVersion: { $gt: stored } }] });
  });
}

/** Whether this build can still serve a version (its engine id, version and artefact format). */
export function isServable(version: Pick<ModelVersion, 'engineId' | 'engineVersion'>): boolean {
  const engine = findEngine(version.engineId);
  return engine !== undefined && engine.kind === 'tabular' && engine.servableVersions.includes(version.engineVersion);
}

/** Models with their serving versions, fetched in one query. */
export async function withServingVersions(em: EntityManager, models: Model[]): Promise<Array<{ model: Model; version: ModelVersion | null }>> {
  const wanted = models.filter((m) => m.currentVersion !== null).map((m) => ({ model: m.id, number: m.currentVersion! }));
  const versions = wanted.length ? await em.find(ModelVersionSchema, { $or: wanted }) : [];
  const byModel = new Map(versions.map((v) => [v.model.id, v]));
  return models.map((model) => ({ model, version: byModel.get(model.id) ?? null }));
}

export interface CreateModelInput {
  workspaceId: string;
  accountId: string;
  plan: PlanName;
  engine: string | undefined;
  target: string;
  task: 'classification' | 'regression' | undefined;
  name: string | undefined;
  explain: boolean;
  autoUpdate: boolean;
  /** Parsed here, or read, checked and analysed by an engine thread (a large body: services/training-body.ts). */
  rows: Row[] | AnalysedTrainingSet;
}

/**
 * Creates a model and trains it (the call answers once trained). The rows are checked against the
 * plan and the engine first; the model row and its context commit before `train/<mdl>` starts, and
 * the workflow itself gives the model up if the fit fails, so a call that dies half-way leaves a
 * model the sweep trains (or gives up), never one that holds a quota slot for ever.
 */
export async function createModel(
  em: EntityManager,
  deps: { pool: EnginePool; temporal: TemporalGateway },
  input: CreateModelInput,
): Promise<{ model: Model; version: ModelVersion | null }> {
  const { rows } = input;
  const engine = checkedTrainingEngine(input.plan, input.engine, Array.isArray(rows) ? rows.length : rows.rowCount);
  let task: ModelTask;
  if (Array.isArray(rows)) {
    try {
      task = (await deps.pool.analyse(rows, input.target, input.task)).task;
    } catch (err) {
      throw err instanceof EngineDataError ? dataRefusal(err) : err;
    }
  } else task = rows.task;
  const model = await createModelForTraining(em.fork(), {
    workspaceId: input.workspaceId,
    accountId: input.accountId,
    name: input.name,
    target: input.target,
    task,
    engineId: engine.id,
    explain: input.explain,
    autoUpdate: input.autoUpdate,
    rows: input.rows,
  });
  await deps.temporal.trainModel(model.id, input.accountId);
  const fresh = em.fork();
  const [trained] = await withServingVersions(fresh, [await getModel(fresh, input.workspaceId, model.id)]);
  return trained!;
}

/**
 * Folds the pending outcomes into a new version that serves at once (through `refresh/<mdl>`; a
 * refresh already running answers 409 UPDATE_IN_PROGRESS, nothing to fold 409 NO_PENDING_OUTCOMES).
 */
export async function refreshModel(
  em: EntityManager,
  temporal: TemporalGateway,
  workspaceId: string,
  modelId: string,
): Promise<{ model: Model; version: ModelVersion; folded: number }> {
  const model = await getModel(em, workspaceId, modelId);
  assertServing(model);
  if ((await pendingCount(em, model)) === 0) throw noPendingOutcomes();
  const refreshed = await temporal.refreshModel(model.id, model.account.id);
  if (!refreshed) {
    // the workflow folds nothing into a model that stopped serving meanwhile: say why, from a fresh read
    const now = await getModel(em.fork(), workspaceId, modelId);
    assertServing(now);
    throw noPendingOutcomes();
  }
  if ('deferredUntil' in refreshed) {
    const { limit } = refreshed;
    throw fitBudgetSpent(`This model had the ${limit.toLocaleString('en-US')} refreshes its plan allows in 24 hours; its outcomes stay pending.`, limit, new Date(refreshed.deferredUntil));
  }
  const after = em.fork();
  const current = await after.findOneOrFail(ModelSchema, { id: model.id });
  const version = await after.findOneOrFail(ModelVersionSchema, { model: model.id, number: refreshed.number });
  return { model: current, version, folded: refreshed.folded };
}

const noPendingOutcomes = (): AppError => new AppError('NO_PENDING_OUTCOMES', 409, 'There is no pending outcome to fold in; report outcomes first.');

/** Deletes a model and stops its running work (the fit's store step refuses a deleted model anyway). */
export async function deleteModelAndWork(em: EntityManager, temporal: TemporalGateway, workspaceId: string, modelId: string): Promise<void> {
  await deleteModel(em, workspaceId, modelId);
  await temporal.cancelModelWork(modelId);
}

/** A page of a model's versions, newest first. */
export async function versionsPage(
  em: EntityManager,
  workspaceId: string,
  modelId: string,
  page: { limit: number; offset: number },
): Promise<{ model: Model; items: ModelVersion[]; total: number }> {
  const model = await getModel(em, workspaceId, modelId);
  const [items, total] = await em.findAndCount(ModelVersionSchema, { model: modelId }, { orderBy: { number: 'desc' }, limit: page.limit, offset: page.offset });
  return { model, items, total };
}
