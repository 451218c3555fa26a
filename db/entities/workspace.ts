import { EntitySchema } from '@mikro-orm/core';
import type { Account } from './account';

export interface Workspace {
  id: string;
  account: Account;
  name: string;
  createdAt: Date;
  updatedAt: Date;
}

export const WorkspaceSchema = new EntitySchema<Workspace>({
  name: 'Workspace',
  tableName: 'workspaces',
  properties: {
    id: { type: 'string', primary: true, length: 40 },
    account: { kind: 'm:1', entity: 'Account', deleteRule: 'cascade', index: true },
    name: { type: 'string', length: 200 },
    createdAt: { type: 'datetime', defaultRaw: 'now()' },
    updatedAt: { type: 'datetime', defaultRaw: 'now()', onUpdate: () => new Date() },
  },
});
