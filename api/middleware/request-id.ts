import type { Middleware } from 'koa';
import { AppError } from '../../services/errors';
import { newId } from '../../services/ids';

/** Gives every request its own id (`req_…`), echoed in `x-request-id` on every response, errors included. */
export function requestId(): Middleware {
  return async (ctx, next) => {
    const id = newId('request');
    ctx.state.requestId = id;
    ctx.set('x-request-id', id);
    await next();
  };
}

/**
 * Refuses a path or query holding a NUL character (`%00`) before any route sees it: PostgreSQL
 * cannot compare or store it, and no identifier or parameter of ours contains one.
 */
export function refuseNulInUrl(): Middleware {
  return async (ctx, next) => {
    let decoded: string;
    try {
      decoded = decodeURIComponent(ctx.url);
    } catch {
      throw new AppError('VALIDATION_ERROR', 400, 'The request path or query is not valid percent-encoding.');
    }
    if (decoded.includes('\u0000')) throw new AppError('VALIDATION_ERROR', 400, 'The request path or query holds a NUL character.');
    await next();
  };
}
