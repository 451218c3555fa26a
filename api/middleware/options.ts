import type { Middleware } from 'koa';

/**
 * OPTIONS on an API path answers what RFC 9110 asks of it, the methods the path allows in `Allow`, as
 * 204 with no body and, like every answer of the API, `Cache-Control: no-store`. The router's own
 * answer was a 200 with an empty text/plain body and nothing that kept caches out (a twenty-fourth
 * probe). Placed before the router, it sees that answer on the way back.
 */
export function answerOptions(): Middleware {
  return async (ctx, next) => {
    await next();
    if (ctx.method !== 'OPTIONS' || ctx.status !== 200 || !ctx.response.get('Allow')) return;
    ctx.status = 204;
    ctx.body = null;
    ctx.set('Cache-Control', 'no-store');
  };
}
