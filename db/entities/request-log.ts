import { EntitySchema } from '@mikro-orm/core';

/** One API call of a workspace, for `GET /v1/requests` and `GET /v1/usage`; kept 30 days. */
export interface RequestLogEntry {
  id: string;
  workspaceId: string;
  accountId: string;
  keyId: string | null;
  method: string;
  path: string;
  operation: string;
  status: number;
  errorCode: string | null;
  credits: number;
  durationMs: number;
  createdAt: Date;
}

export const RequestLogSchema = new EntitySchema<RequestLogEntry>({
  name: 'RequestLogEntry',
  tableName: 'request_log',
  indexes: [{ properties: ['workspaceId', 'createdAt'] }, { properties: ['accountId', 'createdAt'] }],
  properties: {
    id: { type: 'string', primary: true, length: 40 },
    workspaceId: { type: 'string', length: 40 },
    accountId: { type: 'string', length: 40 },
    keyId: { type: 'string', length: 40, nullable: true },
    method: { type: 'string', length: 10 },
    path: { type: 'string', length: 500 },
    operation: { type: 'string', length: 60 },
    status: { type: 'integer' },
    errorCode: { type: 'string', length: 60, nullable: true },
    credits: { type: 'integer', default: 0 },
    durationMs: { type: 'integer' },
    createdAt: { type: 'datetime', defaultRaw: 'now()' },
  },
});
