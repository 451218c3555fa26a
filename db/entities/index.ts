import { AccountSchema } from './account';
import { ApiKeySchema } from './api-key';
import { ContextChunkSchema } from './context-chunk';
import { CreditLedgerSchema } from './credit-ledger';
import { CreditPurchaseSchema, StripeEventSchema } from './credit-purchase';
import { IdempotencyRecordSchema } from './idempotency-record';
import { ModelSchema } from './model';
import { ModelVersionSchema } from './model-version';
import { OutcomeSchema } from './outcome';
import { PredictionSchema } from './prediction';
import { RequestLogSchema } from './request-log';
import { WebhookEndpointSchema } from './webhook-endpoint';
import { WorkspaceSchema } from './workspace';

export * from './account';
export * from './api-key';
export * from './context-chunk';
export * from './credit-ledger';
export * from './credit-purchase';
export * from './idempotency-record';
export * from './model';
export * from './model-version';
export * from './outcome';
export * from './prediction';
export * from './request-log';
export * from './webhook-endpoint';
export * from './workspace';

export const entities = [
  AccountSchema,
  WorkspaceSchema,
  ApiKeySchema,
  ModelSchema,
  ModelVersionSchema,
  ContextChunkSchema,
  PredictionSchema,
  OutcomeSchema,
  CreditLedgerSchema,
  IdempotencyRecordSchema,
  RequestLogSchema,
  WebhookEndpointSchema,
  CreditPurchaseSchema,
  StripeEventSchema,
];
