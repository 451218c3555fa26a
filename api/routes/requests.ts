import { AppError, validationError } from '../../services/errors';
import type { AppDeps } from '../app';
import { loggerOf } from '../middleware/request-logger';
import { route, type AnyRoute } from '../route';
import { isoDateTime } from '../schemas/common';
import { z } from '../zod';
import { requireAuth } from './helpers';

const DAY_MS = 86_400_000;
const MAX_WINDOW_DAYS = 30;
const DEFAULT_WINDOW_DAYS = 7;

const dateParam = z
  .string()
  .refine((v) => !Number.isNaN(Date.parse(v)), { message: 'must be an ISO 8601 date or date-time' })
  .openapi({ description: 'ISO 8601 date or date-time (UTC).', example: '2026-11-01' });

function window(from: string | undefined, to: string | undefined): { from: Date; to: Date } {
  const end = to ? new Date(to) : new Date();
  const start = from ? new Date(from) : new Date(end.getTime() - DEFAULT_WINDOW_DAYS * DAY_MS);
  if (start > end) throw validationError('Invalid query.from: it must be before query.to.');
  if (end.getTime() - start.getTime() > MAX_WINDOW_DAYS * DAY_MS) throw validationError(`The window from..to is at most ${MAX_WINDOW_DAYS} days.`);
  return { from: start, to: end };
}

const requestEntrySchema = z.object({
  request_id: z.string(),
  method: z.string(),
  path: z.string(),
  operation: z.string(),
  status: z.number().int(),
  error_code: z.string().nullable(),
  credits: z.number().int(),
  duration_ms: z.number().int(),
  key_id: z.string().nullable(),
  created_at: isoDateTime,
});

export function requestLogRoutes(deps: AppDeps): AnyRoute[] {
  return [
    route({
      method: 'get',
      path: '/v1/requests',
      summary: 'Request log of the workspace, most recent first (window default 7 days, at most 30)',
      tag: 'Usage',
      auth: 'key_or_session',
      operation: 'requests.list',
      query: z.object({
        from: dateParam.optional(),
        to: dateParam.optional(),
        status: z.enum(['all', 'error']).default('all'),
        limit: z.coerce.number().int().min(1).max(500).default(100),
      }),
      responses: { 200: { description: 'Calls of the workspace.', schema: z.object({ data: z.array(requestEntrySchema), from: isoDateTime, to: isoDateTime }).openapi('RequestLog') } },
      errors: [[503, 'REQUEST_LOG_UNAVAILABLE']],
      async handler(ctx, { query, auth }) {
        const a = requireAuth(auth);
        const range = window(query.from, query.to);
        await deps.requestLog.flush();
        try {
          let q = deps.orm.em
            .fork()
            .getKnex()('request_log')
            .where('workspace_id', a.workspaceId)
            .andWhere('created_at', '>=', range.from)
            .andWhere('created_at', '<=', range.to);
          if (query.status === 'error') q = q.andWhere('status', '>=', 400);
          const rows = (await q.orderBy([{ column: 'created_at', order: 'desc' }, { column: 'id', order: 'desc' }]).limit(query.limit)) as Array<{
            id: string; method: string; path: string; operation: string; status: number; error_code: string | null; credits: number; duration_ms: number; key_id: string | null; created_at: Date;
          }>;
          ctx.body = {
            from: range.from.toISOString(),
            to: range.to.toISOString(),
            data: rows.map((r) => ({
              request_id: r.id,
              method: r.method,
              path: r.path,
              operation: r.operation,
              status: r.status,
              error_code: r.error_code,
              credits: r.credits,
              duration_ms: r.duration_ms,
              key_id: r.key_id,
              created_at: new Date(r.created_at).toISOString(),
            })),
          };
        } catch (err) {
          loggerOf(ctx, deps.logger).error({ err }, 'request log unreadable');
          throw new AppError('REQUEST_LOG_UNAVAILABLE', 503, 'The request log cannot be read right now; retry later.');
        }
      },
    }),
    route({
      method: 'get',
      path: '/v1/usage',
      summary: 'Credits used by day and operation',
      tag: 'Usage',
      auth: 'key_or_session',
      operation: 'usage.get',
      query: z.object({ from: dateParam.optional(), to: dateParam.optional(), workspace_id: z.string().optional() }),
      responses: { 200: { description: 'Usage of the workspace.', schema: z.record(z.string(), z.unknown()) } },
      errors: [[404, 'NOT_FOUND'], [503, 'USAGE_UNAVAILABLE']],
      async handler(ctx, { query, auth }) {
        const a = requireAuth(auth);
        if (query.workspace_id && query.workspace_id !== a.workspaceId) throw new AppError('NOT_FOUND', 404, 'The workspace was not found.');
        const range = window(query.from, query.to);
        await deps.requestLog.flush();
        try {
          const rows = (await deps.orm.em
            .fork()
            .getKnex()('request_log')
            .where('workspace_id', a.workspaceId)
            .andWhere('created_at', '>=', range.from)
            .andWhere('created_at', '<=', range.to)
            .select(deps.orm.em.getKnex().raw(`to_char(created_at at time zone 'UTC', 'YYYY-MM-DD') as day`), 'operation')
            .sum({ credits: 'credits' })
            .count({ calls: '*' })
            .groupBy('day', 'operation')
            .orderBy([{ column: 'day', order: 'asc' }, { column: 'operation', order: 'asc' }])) as Array<{ day: string; operation: string; credits: string | null; calls: string }>;
          const byDay = rows.map((r) => ({ day: r.day, operation: r.operation, credits: Number(r.credits ?? 0), calls: Number(r.calls) }));
          ctx.body = {
            workspace_id: a.workspaceId,
            from: range.from.toISOString(),
            to: range.to.toISOString(),
            total_credits: byDay.reduce((s, r) => s + r.credits, 0),
            total_calls: byDay.reduce((s, r) => s + r.calls, 0),
            by_day: byDay,
          };
        } catch (err) {
          loggerOf(ctx, deps.logger).error({ err }, 'usage unreadable');
          throw new AppError('USAGE_UNAVAILABLE', 503, 'Usage cannot be read right now; retry later.');
        }
      },
    }),
  ];
}
