import { EntitySchema } from '@mikro-orm/core';
import type { Model } from './model';

/**
 * A slice of a model's context data (the rows it learns from), gzip JSON. The training data is
 * chunk 1; each refresh appends the outcomes it folds in. Version N learns from every chunk whose
 * `versionNumber` ≤ N, so earlier versions stay reproducible and nothing is copied.
 */
export interface ContextChunk {
  id: string;
  model: Model;
  versionNumber: number;
  rowCount: number;
  data: Buffer;
  createdAt: Date;
}

export const ContextChunkSchema = new EntitySchema<ContextChunk>({
  name: 'ContextChunk',
  tableName: 'model_context_chunks',
  indexes: [{ properties: ['model', 'versionNumber'] }],
  properties: {
    id: { type: 'string', primary: true, length: 40 },
    model: { kind: 'm:1', entity: 'Model', deleteRule: 'cascade' },
    versionNumber: { type: 'integer' },
    rowCount: { type: 'integer' },
    data: { type: 'blob', lazy: true },
    createdAt: { type: 'datetime', defaultRaw: 'now()' },
  },
});
