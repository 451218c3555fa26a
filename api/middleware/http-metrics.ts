import type { Middleware } from 'koa';
import { httpRequestDuration, routeLabel } from '../../services/metrics';

/**
 * Times every request into http_request_duration_seconds. Sits outside the error handler so the
 * status is the one sent; the route label is the matched template, never the raw path.
 */
export function httpMetrics(): Middleware {
  return async (ctx, next) => {
    const end = httpRequestDuration.startTimer();
    try {
      await next();
    } finally {
      end({ method: ctx.method, route: routeLabel((ctx as { _matchedRoute?: string | RegExp })._matchedRoute?.toString()), status: String(ctx.status) });
    }
  };
}
