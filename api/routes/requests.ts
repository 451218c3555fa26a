import { logWindow, requestLogPage, workspaceUsage } from '../../services/request-log';
import type { AppDeps } from '../app';
import { route, type AnyRoute } from '../route';
import { isoDateTime, paginated, paginationSchema, queryInteger } from '../schemas/common';
import { z } from '../zod';
import { requireAuth } from './helpers';

// a real calendar date (2026-11-31 is refused, not rolled over to December) or a date-time with its offset
// Refused in words that say what is expected: the union's own "Invalid input" said nothing, and an
// offset's + sent unescaped (`+01:00`) reads as a space in a query string (a ninth probe).
const dateParam = z
  .union([z.iso.date(), z.iso.datetime({ offset: true })], {
    error: 'expected an ISO 8601 date (2026-11-01) or date-time with its offset (2026-11-01T09:00:00Z); a + in a query is sent as %2B.',
  })
  .openapi({ description: 'ISO 8601 date or date-time (UTC unless an offset is given); a date alone as `to` includes that whole day.', example: '2026-11-01' });

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

const usageSchema = z
  .object({
    workspace_id: z.string(),
    from: isoDateTime,
    to: isoDateTime,
    total_credits: z.number().int().min(0),
    total_calls: z.number().int().min(0),
    by_day: z.array(
      z.object({
        day: z.iso.date().openapi({ description: 'UTC day.' }),
        operation: z.string(),
        credits: z.number().int().min(0),
        calls: z.number().int().min(1),
      }),
    ),
  })
  .openapi('Usage');

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
        limit: queryInteger(1, 500).default(100),
        offset: queryInteger(0).default(0),
      }),
      responses: {
        200: {
          description: 'A page of the calls of the workspace.',
          schema: z.object({ data: z.array(requestEntrySchema), pagination: paginationSchema, from: isoDateTime, to: isoDateTime }).openapi('RequestLog'),
        },
      },
      errors: [[503, 'REQUEST_LOG_UNAVAILABLE']],
      async handler(ctx, { query, auth }) {
        const a = requireAuth(auth);
        const range = logWindow(query.from, query.to);
        const { items, total } = await requestLogPage(deps.orm.em.fork(), deps.requestLog, a.workspaceId, { ...range, errorsOnly: query.status === 'error', limit: query.limit, offset: query.offset });
        ctx.body = {
          from: range.from.toISOString(),
          to: range.to.toISOString(),
          ...paginated(
            items.map((r) => ({
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
            total,
            query,
          ),
        };
      },
    }),
    route({
      method: 'get',
      path: '/v1/usage',
      summary: 'Credits used by day and operation',
      tag: 'Usage',
      auth: 'key_or_session',
      operation: 'usage.get',
      query: z.object({
        from: dateParam.optional(),
        to: dateParam.optional(),
        workspace_id: z
          .string()
          .min(1)
          .max(64)
          .optional()
          .openapi({ description: "The workspace to read: the caller's own by default; a web session may name any workspace of its account, an API key only its own." }),
      }),
      responses: { 200: { description: 'Usage of the workspace.', schema: usageSchema } },
      errors: [[404, 'NOT_FOUND'], [503, 'USAGE_UNAVAILABLE']],
      async handler(ctx, { query, auth }) {
        const usage = await workspaceUsage(deps.orm.em.fork(), deps.requestLog, requireAuth(auth), query.workspace_id, logWindow(query.from, query.to));
        ctx.body = {
          workspace_id: usage.workspaceId,
          from: usage.window.from.toISOString(),
          to: usage.window.to.toISOString(),
          total_credits: usage.totalCredits,
          total_calls: usage.totalCalls,
          by_day: usage.byDay,
        };
      },
    }),
  ];
}
