import type { Context } from 'koa';
import type { ZodType } from 'zod';
import type { AuthContext, AuthRequirement } from './middleware/auth';
import type { BodyKind, UploadedFile } from './middleware/body';
import type { StagedBody } from '../services/staged-bodies';

export type HttpMethod = 'get' | 'post' | 'patch' | 'delete';

export interface ResponseDoc {
  description: string;
  schema?: ZodType;
  /** Defaults to application/json when a schema is given. */
  contentType?: string;
  headers?: Record<string, { description: string; schema: { type: 'string' | 'integer' } }>;
}

export interface RouteInput<B, Q, P> {
  body: B;
  query: Q;
  params: P;
  auth: AuthContext | null;
  /** The multipart `file` of dataset routes, when one was sent. */
  upload: UploadedFile | null;
  /**
   * A large JSON body the route stages (`stagedBody`), read by an engine thread: a prediction's rows
   * held there (StagedRows), a new model's rows ready to store (StagedTrainingSet), a validation's or
   * backtest's answer (StagedValidation, StagedBacktest), a forecast's prepared series (StagedForecast).
   * `body` is then the fields the thread validated besides the rows.
   */
  staged: StagedBody | null;
  requestId: string;
}

/**
 * One route: its contract (for validation and the OpenAPI document) and its handler. The same zod
 * schemas validate the request and describe it, so the document cannot drift from the behaviour.
 */
export interface RouteDef<B = unknown, Q = unknown, P = unknown> {
  method: HttpMethod;
  /** Koa path syntax (`/v1/api-keys/:keyId`). */
  path: string;
  summary: string;
  tag: string;
  auth: AuthRequirement;
  /** Name of the operation in the request log and usage (e.g. `models.predict`). */
  operation?: string;
  /** How the body is read: `json` (default when a body schema is given), `dataset` (JSON or multipart file, plan limits). */
  bodyKind?: BodyKind;
  /**
   * A JSON body of STAGED_JSON_FROM_BYTES or more is never parsed on the event loop: an engine thread
   * reads it as this route's body and the handler gets it as `staged` (smaller bodies are read as usual):
   * - `predict`: services/prediction-body.ts, its rows held on the thread for the call (StagedRows);
   * - `training`: services/training-body.ts, its rows checked, analysed and gzipped there (StagedTrainingSet);
   * - `validation`: services/validation-body.ts, read and validated there as free work (StagedValidation);
   * - `forecast`: services/series-body.ts, its series checked and prepared there (StagedForecast);
   * - `backtest`: services/series-body.ts, read and backtested there as free work (StagedBacktest).
   */
  stagedBody?: 'predict' | 'training' | 'validation' | 'forecast' | 'backtest';
  /** Error code of a body that fails its schema (default VALIDATION_ERROR). */
  validationCode?: string;
  /** Accepts an Idempotency-Key header (replays the stored answer of a completed call). */
  idempotent?: boolean;
  /**
   * The answer shows a secret once (a key's, a webhook's, a billing portal's link): with an
   * Idempotency-Key it is kept sealed for its replay and replayed only to the credential that made it.
   */
  secretAnswer?: boolean;
  /** Whose Idempotency-Keys the route's are: the workspace's (default), or the account's (a workspace, billing). */
  idempotencyScope?: 'workspace' | 'account';
  /**
   * Paid scoring: an administration key is refused (403 ADMIN_KEY_CANNOT_PREDICT) before its body is
   * read or an Idempotency-Key claimed, so that the refusal is never stored under a key (and replayed to
   * a usage key's call), nor a usage key's stored answer replayed to an administration key.
   */
  usageKeyOnly?: boolean;
  /**
   * The handler's charge statement checks the API key (charge-batch.ts): a call without an
   * Idempotency-Key may then be admitted on this process's recent read of its key instead of a read of
   * its own (api-keys.ts deferredKeyCall); any answer not made by such a charge confirms the key first.
   */
  keyCheckedByCharge?: boolean;
  body?: ZodType<B>;
  /** Documents a body the route reads itself (bodyKind `raw`), without validating it before the handler. */
  rawBodyDoc?: { contentType: string; schema: ZodType; description: string };
  /** Request headers the route reads, for the document only (the handler checks them). */
  headers?: ZodType;
  query?: ZodType<Q>;
  params?: ZodType<P>;
  responses: Record<number, ResponseDoc>;
  /** Error codes this route can answer beyond the generic ones, with their status. */
  errors: Array<[status: number, code: string]>;
  handler: (ctx: Context, input: RouteInput<B, Q, P>) => Promise<void> | void;
}

/** Identity helper that keeps the generic parameters inferred from the schemas. */
export function route<B = undefined, Q = undefined, P = undefined>(def: RouteDef<B, Q, P>): RouteDef<B, Q, P> {
  return def;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- heterogeneous list of routes; each is checked where declared
export type AnyRoute = RouteDef<any, any, any>;
