import type { Context, Middleware } from 'koa';
import type { Logger } from 'pino';

/** Gives each request a child logger carrying its request id; runs after requestId(). */
export function requestLogger(logger: Logger): Middleware {
  return async (ctx, next) => {
    ctx.state.logger = logger.child({ requestId: ctx.state.requestId as string });
    await next();
  };
}

/** The request's logger (with its request id), or `fallback` outside the middleware chain. */
export function loggerOf(ctx: Context, fallback: Logger): Logger {
  return (ctx.state.logger as Logger | undefined) ?? fallback;
}
