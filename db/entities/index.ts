import { AccountSchema } from './account';
import { ApiKeySchema } from './api-key';
import { WorkspaceSchema } from './workspace';

export * from './account';
export * from './api-key';
export * from './workspace';

export const entities = [AccountSchema, WorkspaceSchema, ApiKeySchema];
