import { EntitySchema } from '@mikro-orm/core';
import type { Account } from './account';
import type { Workspace } from './workspace';

export const MODEL_STATUSES = ['training', 'serving', 'archived', 'deleted'] as const;
export type ModelStatus = (typeof MODEL_STATUSES)[number];
export type ModelTask = 'binary' | 'multiclass' | 'regression';

/**
 * A tabular model. `training` until its first version exists (prediction answers 409), then
 * `serving`; `archived` keeps artefacts but does not serve nor count against the quota; `deleted`
 * is final (artefacts, context and pending outcomes purged, never listed).
 */
export interface Model {
  id: string;
  workspace: Workspace;
  account: Account;
  name: string;
  target: string;
  task: ModelTask;
  engineId: string;
  featureColumns: string[];
  status: ModelStatus;
  explain: boolean;
  autoUpdate: boolean;
  /** Number of the version that serves (null while training). */
  currentVersion: number | null;
  createdAt: Date;
  updatedAt: Date;
  archivedAt: Date | null;
  deletedAt: Date | null;
}

export const ModelSchema = new EntitySchema<Model>({
  name: 'Model',
  tableName: 'models',
  properties: {
    id: { type: 'string', primary: true, length: 40 },
    workspace: { kind: 'm:1', entity: 'Workspace', deleteRule: 'cascade', index: true },
    account: { kind: 'm:1', entity: 'Account', deleteRule: 'cascade', index: true },
    name: { type: 'string', length: 200 },
    target: { type: 'string', length: 500 },
    task: { type: 'string', length: 20 },
    engineId: { type: 'string', length: 60 },
    featureColumns: { type: 'json' },
    status: { type: 'string', length: 20, index: true },
    explain: { type: 'boolean', default: false },
    autoUpdate: { type: 'boolean', default: false },
    currentVersion: { type: 'integer', nullable: true },
    createdAt: { type: 'datetime', defaultRaw: 'now()' },
    updatedAt: { type: 'datetime', defaultRaw: 'now()', onUpdate: () => new Date() },
    archivedAt: { type: 'datetime', nullable: true },
    deletedAt: { type: 'datetime', nullable: true },
  },
});
