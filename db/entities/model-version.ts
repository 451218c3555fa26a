import { EntitySchema } from '@mikro-orm/core';
import type { Model } from './model';

/**
 * One trained state of a model. The artefact is the engine's serialised model (gzip), loaded only
 * when scoring; the engine id, engine version and artefact format version say who can serve it.
 */
export interface ModelVersion {
  id: string;
  model: Model;
  number: number;
  engineId: string;
  engineVersion: string;
  formatVersion: number;
  artefact: Buffer | null;
  artefactBytes: number;
  report: Record<string, unknown>;
  validation: Record<string, unknown>;
  topFactors: Array<{ feature: string; importance: number }> | null;
  contextRows: number;
  outcomesFolded: number;
  trigger: 'train' | 'refresh';
  createdAt: Date;
}

export const ModelVersionSchema = new EntitySchema<ModelVersion>({
  name: 'ModelVersion',
  tableName: 'model_versions',
  uniques: [{ properties: ['model', 'number'] }],
  properties: {
    id: { type: 'string', primary: true, length: 40 },
    model: { kind: 'm:1', entity: 'Model', deleteRule: 'cascade' },
    number: { type: 'integer' },
    engineId: { type: 'string', length: 60 },
    engineVersion: { type: 'string', length: 40 },
    formatVersion: { type: 'integer' },
    artefact: { type: 'blob', nullable: true, lazy: true },
    artefactBytes: { type: 'integer' },
    report: { type: 'json' },
    validation: { type: 'json' },
    topFactors: { type: 'json', nullable: true },
    contextRows: { type: 'integer' },
    outcomesFolded: { type: 'integer', default: 0 },
    trigger: { type: 'string', length: 20 },
    createdAt: { type: 'datetime', defaultRaw: 'now()' },
  },
});
