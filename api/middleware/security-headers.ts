import type { Middleware } from 'koa';

/**
 * Headers every answer carries, errors included: `X-Content-Type-Options: nosniff`, so that no browser
 * reads an answer as another type than the one it is sent as (JSON and CSV answers echo names a client
 * chose, such as model names, columns and class labels). The HTML pages (console, API reference) add
 * their own CSP and framing rules.
 */
export function securityHeaders(): Middleware {
  return async (ctx, next) => {
    ctx.set('X-Content-Type-Options', 'nosniff');
    await next();
  };
}
