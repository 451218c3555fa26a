import { AppError, validationError } from '../../services/errors';
import { checkRows, parseUploadedFile, type ParseOptions, type Row } from '../../services/datasets';
import type { AuthContext } from '../middleware/auth';
import type { UploadedFile } from '../middleware/body';
import type { EnginePool } from '../../services/engine-pool';
import type { StagedRows } from '../../services/staged-bodies';
import type { FreeCall } from '../../services/free-work';
import type { Context } from 'koa';

export function requireAuth(auth: AuthContext | null): AuthContext {
  if (!auth) throw new AppError('AUTH_REQUIRED', 401, 'This route needs credentials.');
  return auth;
}

/** Usage keys predict; administration keys cannot (the contract's separation of duties). */
export function requireUsageKey(auth: AuthContext | null): AuthContext {
  const a = requireAuth(auth);
  if (a.type === 'api_key' && a.keyKind === 'admin') {
    throw new AppError('ADMIN_KEY_CANNOT_PREDICT', 403, 'Administration keys cannot predict; use a usage key (sk-svc-api-…).');
  }
  return a;
}

/**
 * A free engine call of this request: its account, and a signal that fires when the client hangs up
 * before the answer is written (the response's `close` before it finished), so that work still
 * waiting for a thread is never begun.
 */
export function freeCallOf(ctx: Context, auth: AuthContext): FreeCall {
  const gone = new AbortController();
  ctx.res.once('close', () => {
    if (!ctx.res.writableFinished) gone.abort();
  });
  return { owner: auth.accountId, signal: gone.signal };
}

/** Files smaller than this are parsed on the event loop: the thread hop would cost more than the parse. */
const PARSE_ON_THREAD_FROM_BYTES = 256 * 1024;

/**
 * The multipart file when it is the call's only rows and large enough to be parsed on a thread: the
 * routes then leave its rows on the thread that parses it (a prediction's for the call, StagedRows; a
 * validation's, forecast's or backtest's down to what the call needs of them), where they used to come
 * back to the event loop by structured clone.
 */
export function fileForThread(jsonRows: unknown[] | undefined, upload: UploadedFile | null): UploadedFile | null {
  return upload && jsonRows === undefined && upload.content.length >= PARSE_ON_THREAD_FROM_BYTES ? upload : null;
}

/**
 * A prediction's rows: JSON rows, or the multipart file. A file large enough to be parsed on a thread
 * stays there with its rows for the call (StagedRows, which the caller ends), as a large JSON body does.
 */
export async function predictionRows(pool: EnginePool, jsonRows: unknown[] | undefined, upload: UploadedFile | null): Promise<Row[] | StagedRows> {
  const file = fileForThread(jsonRows, upload);
  if (file) return pool.stagePredictFile(file);
  return datasetRows(pool, jsonRows, upload, 'rows');
}

/**
 * The rows of a dataset route: JSON rows, or the multipart file (parsed in the engine pool when
 * large, so that the event loop keeps serving other calls); exactly one of them. `options` says how a
 * file's cells are read (identifier columns kept as text).
 */
export async function datasetRows(pool: EnginePool, jsonRows: unknown[] | undefined, upload: UploadedFile | null, field: string, options: ParseOptions = {}): Promise<Row[]> {
  if (jsonRows !== undefined && upload) throw new AppError('VALIDATION_ERROR', 400, `Send either body.${field} or a file, not both.`);
  if (upload) return upload.content.length >= PARSE_ON_THREAD_FROM_BYTES ? pool.parseUpload(upload, options.textColumns) : parseUploadedFile(upload, options);
  return jsonDatasetRows(jsonRows, field);
}

/** The JSON rows of a dataset route that got no file (the check datasetRows makes of them). */
export function jsonDatasetRows(jsonRows: unknown[] | undefined, field: string): Row[] {
  if (jsonRows === undefined) throw new AppError('VALIDATION_ERROR', 400, `Invalid body.${field}: the rows are missing (send body.${field} or a CSV/JSON file in the multipart field "file").`);
  return checkRows(jsonRows, `body.${field}`);
}

/** The rows of a prediction's body: `rows` or its alias `data`, not both (undefined when neither is sent). */
export function predictBodyRows(body: { rows?: unknown[]; data?: unknown[] }): unknown[] | undefined {
  if (body.rows !== undefined && body.data !== undefined) throw validationError('Send body.rows or body.data, not both.');
  return body.rows ?? body.data;
}
