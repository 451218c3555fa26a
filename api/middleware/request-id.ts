import type { Middleware } from 'koa';
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
