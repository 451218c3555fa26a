import type { Context, Middleware } from 'koa';
import type { Logger } from 'pino';
import { ZodError } from 'zod';
import { AppError, isDependencyUnavailable } from '../../services/errors';
import { loggerOf } from './request-logger';

interface HttpishError {
  status?: number;
  statusCode?: number;
  type?: string;
  expose?: boolean;
}

/** What a billable answer says is left (monthly allowance + purchased balance), per the contract. */
export const REMAINING_HEADER = 'X-Service-Predictions-Remaining';

/**
 * The headers an error answer carries besides its content type: `Retry-After` on a 429, and on a 402
 * for want of credits what remains, as every billable answer states it (the body carries it too).
 */
export function errorHeaders(err: AppError): Record<string, string> {
  const headers: Record<string, string> = {};
  const retryAfter = err.extra.retry_after_seconds;
  if (err.status === 429 && typeof retryAfter === 'number') headers['Retry-After'] = String(retryAfter);
  const balance = err.extra.balance;
  if (err.code === 'CREDITS_EXHAUSTED' && typeof balance === 'number') headers[REMAINING_HEADER] = String(balance);
  return headers;
}

export function sendError(ctx: Context, err: AppError): void {
  ctx.status = err.status;
  ctx.set(errorHeaders(err));
  ctx.body = envelopeOf(err);
}

/**
 * The contract's error envelope of an AppError (also what an Idempotency-Key stores for a refusal). A
 * VALIDATION_ERROR always lists `errors: [{path, message}]`: a refusal made by a rule rather than a
 * schema lists itself, at the place its detail names (`Invalid body.rows.3: …`), else at "" (the
 * request as a whole).
 */
export function envelopeOf(err: AppError): Record<string, unknown> {
  const envelope: Record<string, unknown> = { status: 'error', message: err.code, messageDetail: err.detail, ...err.extra };
  if (err.code === 'VALIDATION_ERROR' && !Array.isArray(envelope.errors)) {
    const named = /^Invalid ((?:body|query|params)(?:\.[^\s:]+)?): (.*)$/s.exec(err.detail);
    envelope.errors = [named ? { path: named[1], message: named[2] } : { path: '', message: err.detail }];
  }
  return envelope;
}

/** Errors thrown by the body parser and the router, which are the client's fault, mapped to codes. */
export function fromHttpError(err: HttpishError): AppError | null {
  const status = err.status ?? err.statusCode;
  if (!status || status < 400 || status >= 500) return null;
  if (status === 413) return new AppError('PAYLOAD_TOO_LARGE', 413, 'The request body is larger than this route accepts.');
  if (status === 415) return new AppError('UNSUPPORTED_MEDIA_TYPE', 415, 'The request body has a content type this route does not accept.');
  if (err.type === 'entity.parse.failed' || status === 400) {
    return new AppError('INVALID_JSON', 400, 'The request body is not valid JSON.');
  }
  if (status === 405) return new AppError('METHOD_NOT_ALLOWED', 405, 'This method is not allowed on this path.');
  return new AppError('BAD_REQUEST', status, 'The request could not be processed.');
}

/** How many unknown keys a refusal names; the rest are counted. */
const MAX_NAMED_KEYS = 10;

/**
 * An issue's message, with a long list of unknown keys cut short: zod names every one, so a body of
 * a million unknown keys made a 30 MB answer, twice the body, and held the event loop seconds.
 */
function issueMessage(issue: ZodError['issues'][number]): string {
  if (issue.code !== 'unrecognized_keys' || issue.keys.length <= MAX_NAMED_KEYS) return issue.message;
  const named = issue.keys.slice(0, MAX_NAMED_KEYS).map((k) => JSON.stringify(k)).join(', ');
  return `Unrecognized keys: ${named} and ${issue.keys.length - MAX_NAMED_KEYS} more`;
}

export function zodToAppError(err: ZodError, where: string, code = 'VALIDATION_ERROR'): AppError {
  const errors = err.issues.map((issue) => ({ path: [where, ...issue.path.map(String)].join('.'), message: issueMessage(issue) }));
  const first = errors[0];
  const detail = first ? `Invalid ${first.path}: ${first.message.replace(/\.$/, '')}.` : `Invalid ${where}.`;
  return new AppError(code, 400, detail, { errors });
}

/** Turns any thrown value into the envelope on ctx; unexpected ones are logged with the request id. */
export function renderError(ctx: Context, err: unknown, logger: Logger): void {
  if (err instanceof AppError) {
    if (err.status >= 500) logger.error({ err, requestId: ctx.state.requestId, method: ctx.method, path: ctx.path }, `answered ${err.code}`);
    return sendError(ctx, err);
  }
  if (isDependencyUnavailable(err)) {
    logger.error({ err, requestId: ctx.state.requestId, method: ctx.method, path: ctx.path }, 'a dependency is unavailable');
    return sendError(ctx, new AppError('SERVICE_UNAVAILABLE', 503, 'The service cannot reach one of its stores right now; retry in a few seconds.'));
  }
  if (err instanceof ZodError) return sendError(ctx, zodToAppError(err, 'request'));
  const mapped = fromHttpError(err as HttpishError);
  if (mapped) return sendError(ctx, mapped);
  loggerOf(ctx, logger).error({ err, method: ctx.method, path: ctx.path }, 'unexpected error');
  sendError(ctx, new AppError('INTERNAL_ERROR', 500, 'An unexpected error occurred; retry later or report the request id.'));
}

/**
 * The single place where errors become the contract's envelope. Known errors keep their code;
 * anything unexpected is logged with the request id and answered as a generic 500.
 */
export function errorHandler(logger: Logger): Middleware {
  return async (ctx, next) => {
    try {
      await next();
      const empty = ctx.body === undefined || ctx.body === null;
      if (ctx.status === 404 && empty) {
        sendError(ctx, new AppError('NOT_FOUND', 404, `No route matches ${ctx.method} ${ctx.path}.`));
      } else if ((ctx.status === 405 || ctx.status === 501) && empty) {
        // 501 is the router's answer to a method it does not know at all (PROPFIND, …): for the
        // client it is the same as any other method this path does not allow.
        sendError(ctx, new AppError('METHOD_NOT_ALLOWED', 405, `${ctx.method} is not allowed on ${ctx.path}.`));
      }
    } catch (err) {
      renderError(ctx, err, logger);
    }
  };
}
