import type { Middleware } from 'koa';
import { AppError } from '../../services/errors';

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

/**
 * The pages for people (`/`, the console, the API reference) are read with GET and HEAD only: OPTIONS
 * answers 204 with that `Allow`, any other method 405 METHOD_NOT_ALLOWED with it, as the API's paths
 * do. They answered 404 "No route matches" (a twenty-sixth probe).
 */
export function answerPageMethods(pagePrefixes: string[]): Middleware {
  const isPage = (path: string) => path === '/' || pagePrefixes.some((prefix) => path === prefix || path.startsWith(`${prefix}/`));
  return async (ctx, next) => {
    if (ctx.method === 'GET' || ctx.method === 'HEAD' || !isPage(ctx.path)) return next();
    ctx.set('Allow', 'GET, HEAD');
    ctx.set('Cache-Control', 'no-store');
    if (ctx.method === 'OPTIONS') {
      ctx.status = 204;
      return;
    }
    throw new AppError('METHOD_NOT_ALLOWED', 405, `${ctx.method} is not allowed on ${ctx.path}.`);
  };
}
