import { LockMode } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import { PLANS } from '../config/plans';
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
import type { Row } from './datasets';
import { AppError, notFound } from './errors';
import { newId } from './ids';

/** Models that take a quota slot: everything not archived and not deleted. */
const QUOTA_STATUSES: ModelStatus[] = ['training', 'serving'];

export async function getModel(em: EntityManager, workspaceId: string, modelId: string, options: { includeDeleted?: boolean } = {}): Promise<Model> {
  const model = await em.findOne(ModelSchema, { id: modelId, workspace: workspaceId });
  if (!model || (model.status === 'deleted' && !options.includeDeleted)) throw notFound('The model');
  return model;
}

async function assertQuotaSlot(tx: EntityManager, accountId: string): Promise<void> {
  const account = await tx.findOneOrFail(AccountSchema, { id: accountId }, { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true });
  const limit = PLANS[account.plan].maxModels;
  if (limit === null) return;
  const used = await tx.count(ModelSchema, { account: accountId, status: { $in: QUOTA_STATUSES } });
  if (used >= limit) {
    throw new AppError(
      'QUOTA_MODELS_EXCEEDED',
      402,
      `The ${account.plan} plan allows ${limit} model${limit === 1 ? '' : 's'} per account (all workspaces); archive or delete one, or change plan.`,
      { limit, used },
    );
  }
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
  rows: Row[];
}

/**
 * Creates the model (status `training`) with its context data as chunk 1, after the quota check;
 * the account row lock serialises concurrent creations so the quota cannot be overrun.
 */
export async function createModelForTraining(em: EntityManager, input: NewModelInput): Promise<Model> {
  return em.transactional(async (tx) => {
    await assertQuotaSlot(tx, input.accountId);
    const now = new Date();
    const id = newId('model');
    const model = tx.create(ModelSchema, {
      id,
      workspace: tx.getReference(WorkspaceSchema, input.workspaceId),
      account: tx.getReference(AccountSchema, input.accountId),
      name: input.name ?? `Model of ${input.target}`,
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
      rowCount: input.rows.length,
      data: gzipJson(input.rows),
      createdAt: now,
    });
    await tx.flush();
    return model;
  });
}

/** The rows version `versionNumber` learns from: every chunk up to it, in order. */
export async function loadContext(em: EntityManager, modelId: string, versionNumber: number): Promise<Row[]> {
  const chunks = await em.find(
    ContextChunkSchema,
    { model: modelId, versionNumber: { $lte: versionNumber } },
    { orderBy: { versionNumber: 'asc', createdAt: 'asc' }, populate: ['data'] },
  );
  return chunks.flatMap((chunk) => gunzipJson<Row[]>(chunk.data));
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
export async function storeVersion(em: EntityManager, modelId: string, number: number, fitted: FittedVersion): Promise<ModelVersion> {
  return em.transactional(async (tx) => {
    const model = await tx.findOneOrFail(ModelSchema, { id: modelId }, { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true });
    const existing = await tx.findOne(ModelVersionSchema, { model: modelId, number });
    if (existing) return existing;
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
    if (model.status !== 'deleted') {
      model.currentVersion = Math.max(model.currentVersion ?? 0, number);
      model.featureColumns = fitted.featureColumns;
      model.engineId = fitted.engineId;
      if (model.status === 'training') model.status = 'serving';
    }
    await tx.flush();
    return version;
  });
}

export async function listModels(
  em: EntityManager,
  workspaceId: string,
  query: { status?: 'archived'; limit: number; offset: number },
): Promise<{ items: Model[]; total: number }> {
  const statuses: ModelStatus[] = query.status === 'archived' ? ['archived'] : ['serving', 'training'];
  const [items, total] = await em.findAndCount(
    ModelSchema,
    { workspace: workspaceId, status: { $in: statuses } },
    { orderBy: { createdAt: 'desc', id: 'desc' }, limit: query.limit, offset: query.offset },
  );
  return { items, total };
}

export async function listVersions(em: EntityManager, modelId: string): Promise<ModelVersion[]> {
  return em.find(ModelVersionSchema, { model: modelId }, { orderBy: { number: 'desc' } });
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
  const model = await getModel(em, workspaceId, modelId);
  if (model.status === 'training') throw new AppError('MODEL_NOT_TRAINED', 409, 'The model is still training; archive it once it serves.');
  if (model.status === 'archived') return;
  model.status = 'archived';
  model.archivedAt = new Date();
  await em.flush();
}

export async function restoreModel(em: EntityManager, workspaceId: string, modelId: string): Promise<Model> {
  return em.transactional(async (tx) => {
    const model = await getModel(tx, workspaceId, modelId, { includeDeleted: true });
    if (model.status === 'deleted') throw new AppError('MODEL_DELETED', 409, 'The model was deleted; deletion is irreversible.');
    if (model.status !== 'archived') return model;
    await assertQuotaSlot(tx, model.account.id);
    model.status = 'serving';
    model.archivedAt = null;
    await tx.flush();
    return model;
  });
}

/** Irreversible: artefacts, context data and pending outcomes are purged; the row stays as a tombstone. */
export async function deleteModel(em: EntityManager, workspaceId: string, modelId: string): Promise<void> {
  await em.transactional(async (tx) => {
    const model = await getModel(tx, workspaceId, modelId);
    model.status = 'deleted';
    model.deletedAt = new Date();
    await tx.flush();
    await tx.nativeUpdate(ModelVersionSchema, { model: modelId }, { artefact: null });
    await tx.nativeDelete(ContextChunkSchema, { model: modelId });
    await tx.nativeDelete(OutcomeSchema, { modelId, status: 'pending' });
  });
}

/** Whether this build can still serve a version (its engine id, version and artefact format). */
export function isServable(version: Pick<ModelVersion, 'engineId' | 'engineVersion'>): boolean {
  const engine = findEngine(version.engineId);
  return engine !== undefined && engine.kind === 'tabular' && engine.servableVersions.includes(version.engineVersion);
}

const iso = (d: Date | null): string | null => (d ? d.toISOString() : null);

export function presentVersion(version: ModelVersion, model: Model) {
  return {
    id: version.id,
    number: version.number,
    engine: { id: version.engineId, version: version.engineVersion },
    format_version: version.formatVersion,
    trigger: version.trigger,
    serving: model.currentVersion === version.number && model.status === 'serving',
    context_rows: version.contextRows,
    outcomes_folded: version.outcomesFolded,
    validation: version.validation,
    ...(model.explain && version.topFactors ? { top_factors: version.topFactors } : {}),
    created_at: version.createdAt.toISOString(),
  };
}

export function presentModel(model: Model, current: ModelVersion | null) {
  return {
    id: model.id,
    name: model.name,
    target: model.target,
    task: model.task,
    engine: model.engineId,
    status: model.status,
    feature_columns: model.featureColumns,
    explain: model.explain,
    auto_update: model.autoUpdate,
    version: current ? presentVersion(current, model) : null,
    versions_count: model.currentVersion ?? 0,
    workspace_id: model.workspace.id,
    created_at: model.createdAt.toISOString(),
    updated_at: model.updatedAt.toISOString(),
    archived_at: iso(model.archivedAt),
  };
}

export async function presentModelWithVersion(em: EntityManager, model: Model) {
  return (await presentModelsWithVersions(em, [model]))[0]!;
}

/** Presents models with their serving versions, fetched in one query. */
export async function presentModelsWithVersions(em: EntityManager, models: Model[]) {
  const wanted = models.filter((m) => m.currentVersion !== null).map((m) => ({ model: m.id, number: m.currentVersion! }));
  const versions = wanted.length ? await em.find(ModelVersionSchema, { $or: wanted }) : [];
  const byModel = new Map(versions.map((v) => [v.model.id, v]));
  return models.map((m) => presentModel(m, byModel.get(m.id) ?? null));
}
