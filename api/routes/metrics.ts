import type { AppConfig } from '../../config/env';
import { AppError } from '../../services/errors';
import { registry } from '../../services/metrics';
import { bearerMatches } from '../../services/metrics-server';
import { route, type AnyRoute } from '../route';
import { z } from '../zod';

/**
 * Prometheus scrape endpoint. Public unless METRICS_TOKEN is set: the metrics hold no tenant data,
 * and most deployments keep /metrics off the public listener anyway; the token is for those that cannot.
 */
export function metricsRoutes(deps: { config: AppConfig }): AnyRoute[] {
  return [
    route({
      method: 'get',
      path: '/metrics',
      summary: 'Prometheus metrics (text exposition format); bearer METRICS_TOKEN when one is configured',
      tag: 'Service',
      auth: 'public',
      responses: { 200: { description: 'Metrics in the Prometheus text format.', schema: z.string(), contentType: 'text/plain' } },
      errors: [[401, 'AUTH_REQUIRED']],
      async handler(ctx) {
        const token = deps.config.METRICS_TOKEN;
        if (token && !bearerMatches(ctx.get('authorization') || undefined, token)) {
          throw new AppError('AUTH_REQUIRED', 401, 'This endpoint needs the metrics bearer token.');
        }
        ctx.type = registry.contentType;
        ctx.body = await registry.metrics();
      },
    }),
  ];
}
