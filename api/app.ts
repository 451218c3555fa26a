import Koa, { type Context } from 'koa';
import Router from '@koa/router';
import type { MikroORM } from '@mikro-orm/postgresql';
import type { Logger } from 'pino';
import type { ZodType } from 'zod';
import type { AppConfig } from '../config/env';
import type { EnginePool } from '../services/engine-pool';
import type { RequestLogWriter } from '../services/request-log';
import type { TemporalGateway } from '../services/temporal/gateway';
import { creditsCharged } from '../services/metrics';
import { version } from '../package.json';
import { closeConnectionsWhileDraining, DrainState } from './drain';
import { authenticate, type AuthContext } from './middleware/auth';
import { readBody } from './middleware/body';
import { errorHandler, renderError, zodToAppError } from './middleware/errors';
import { withIdempotency } from './middleware/idempotency';
import { httpMetrics } from './middleware/http-metrics';
import { requestId } from './middleware/request-id';
import { loggerOf, requestLogger } from './middleware/request-logger';
import { buildOpenApiDocument } from './openapi';
import { route, type AnyRoute } from './route';
import { z } from './zod';
import { apiKeyRoutes } from './routes/api-keys';
import { datasetRoutes } from './routes/datasets';
import { engineRoutes } from './routes/engines';
import { forecastRoutes } from './routes/forecast';
import { healthRoutes } from './routes/health';
import { metricsRoutes } from './routes/metrics';
import { modelRoutes } from './routes/models';
import { requestLogRoutes } from './routes/requests';

export interface AppDeps {
  config: AppConfig;
  orm: MikroORM;
  temporal: TemporalGateway;
  logger: Logger;
  enginePool: EnginePool;
  requestLog: RequestLogWriter;
  /** Set by the process runtime: SIGTERM turns it on (health 503, no keep-alive). */
  drain?: DrainState;
}

function parseWith<T>(schema: ZodType<T> | undefined, value: unknown, where: string, code?: string): T {
  if (!schema) return undefined as T;
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw zodToAppError(parsed.error, where, code);
  return parsed.data;
}

const openApiDocumentSchema = z
  .object({ openapi: z.string().startsWith('3.1'), info: z.object({ title: z.string(), version: z.string() }).catchall(z.unknown()), paths: z.record(z.string(), z.unknown()) })
  .catchall(z.unknown());

/** Writes one request-log line per call of a workspace once its answer is known (errors included). */
async function logged(ctx: Context, deps: AppDeps, def: AnyRoute, auth: AuthContext | null, run: () => Promise<void>): Promise<void> {
  if (!auth) return run();
  const started = performance.now();
  try {
    await run();
  } catch (err) {
    renderError(ctx, err, deps.logger);
  }
  const body = ctx.body as { message?: unknown } | null | undefined;
  const operation = def.operation ?? `${def.method} ${def.path}`;
  const credits = ctx.response.get('Idempotent-Replayed') ? 0 : ((ctx.state.creditsCharged as number | undefined) ?? 0);
  if (credits > 0) creditsCharged.inc({ operation }, credits);
  deps.requestLog.record({
    id: ctx.state.requestId as string,
    workspaceId: auth.workspaceId,
    accountId: auth.accountId,
    keyId: auth.keyId,
    method: ctx.method,
    path: ctx.path,
    operation,
    status: ctx.status,
    errorCode: ctx.status >= 400 && body && typeof body === 'object' && typeof body.message === 'string' ? body.message : null,
    credits,
    durationMs: Math.round(performance.now() - started),
    createdAt: new Date(),
  });
}

function mount(router: Router, deps: AppDeps, def: AnyRoute): void {
  const bodyKind = def.bodyKind ?? (def.body ? 'json' : 'none');
  router[def.method](def.path, async (ctx: Context) => {
    const auth = await authenticate(ctx, def.auth, {
      orm: deps.orm,
      logger: loggerOf(ctx, deps.logger),
      keyLastUsedResolutionSeconds: deps.config.KEY_LAST_USED_RESOLUTION_SECONDS,
    });
    await logged(ctx, deps, def, auth, async () => {
      const upload = await readBody(ctx, bodyKind, deps.config, auth?.plan ?? null);
      const run = async () => {
        const params = parseWith(def.params, ctx.params, 'params');
        const query = parseWith(def.query, ctx.query, 'query');
        const body = parseWith(def.body, ctx.request.body ?? {}, 'body', def.validationCode);
        await def.handler(ctx, { body, query, params, auth, upload, requestId: ctx.state.requestId as string });
      };
      if (def.idempotent && auth) await withIdempotency(ctx, deps, auth.workspaceId, upload, run);
      else await run();
    });
  });
}

export function allRoutes(deps: AppDeps): AnyRoute[] {
  return [
    ...healthRoutes(deps),
    ...metricsRoutes(deps),
    ...engineRoutes(),
    ...apiKeyRoutes(deps),
    ...modelRoutes(deps),
    ...datasetRoutes(deps),
    ...forecastRoutes(deps),
    ...requestLogRoutes(deps),
  ];
}

/** The Koa app, not listening: the entry points and the tests decide how to serve it. */
export function createApp(deps: AppDeps): Koa {
  const app = new Koa({ proxy: true });
  const routes = allRoutes(deps);
  const openApi = buildOpenApiDocument(
    [
      ...routes,
      route({
        method: 'get',
        path: '/openapi.json',
        summary: 'This document',
        tag: 'Service',
        auth: 'public',
        responses: { 200: { description: 'OpenAPI 3.1 document.', schema: openApiDocumentSchema } },
        errors: [],
        handler: () => undefined,
      }),
    ],
    { version },
  );
  const router = new Router();
  for (const def of routes) mount(router, deps, def);
  router.get('/openapi.json', (ctx) => {
    ctx.body = openApi;
  });

  app.use(requestId());
  app.use(requestLogger(deps.logger));
  app.use(httpMetrics());
  app.use(closeConnectionsWhileDraining(deps.drain ?? new DrainState()));
  app.use(errorHandler(deps.logger));
  app.use(router.routes());
  app.use(router.allowedMethods());
  return app;
}
