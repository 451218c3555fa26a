import Koa, { type Context } from 'koa';
import Router from '@koa/router';
import { HttpMethodEnum, koaBody } from 'koa-body';
import type { MikroORM } from '@mikro-orm/postgresql';
import type { Logger } from 'pino';
import type { ZodType } from 'zod';
import type { AppConfig } from '../config/env';
import type { TemporalGateway } from '../services/temporal/gateway';
import { authenticate } from './middleware/auth';
import { errorHandler, zodToAppError } from './middleware/errors';
import { requestId } from './middleware/request-id';
import { buildOpenApiDocument } from './openapi';
import type { AnyRoute } from './route';
import { apiKeyRoutes } from './routes/api-keys';
import { engineRoutes } from './routes/engines';
import { healthRoutes } from './routes/health';
import { route } from './route';
import { version } from '../package.json';

export interface AppDeps {
  config: AppConfig;
  orm: MikroORM;
  temporal: TemporalGateway;
  logger: Logger;
}

function parseWith<T>(schema: ZodType<T> | undefined, value: unknown, where: string): T {
  if (!schema) return undefined as T;
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw zodToAppError(parsed.error, where);
  return parsed.data;
}

function mount(router: Router, deps: AppDeps, def: AnyRoute): void {
  router[def.method](def.path, async (ctx: Context) => {
    const auth = await authenticate(ctx, def.auth, {
      orm: deps.orm,
      logger: deps.logger,
      keyLastUsedResolutionSeconds: deps.config.KEY_LAST_USED_RESOLUTION_SECONDS,
    });
    const params = parseWith(def.params, ctx.params, 'params');
    const query = parseWith(def.query, ctx.query, 'query');
    const body = parseWith(def.body, ctx.request.body ?? {}, 'body');
    await def.handler(ctx, { body, query, params, auth });
  });
}

export function allRoutes(deps: AppDeps): AnyRoute[] {
  return [...healthRoutes(deps), ...engineRoutes(), ...apiKeyRoutes(deps)];
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
        responses: { 200: { description: 'OpenAPI 3.1 document.' } },
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
  app.use(errorHandler(deps.logger));
  app.use(
    koaBody({
      json: true,
      jsonStrict: true,
      jsonLimit: deps.config.JSON_BODY_LIMIT_BYTES,
      text: false,
      urlencoded: false,
      multipart: false,
      parsedMethods: [HttpMethodEnum.POST, HttpMethodEnum.PUT, HttpMethodEnum.PATCH, HttpMethodEnum.DELETE],
    }),
  );
  app.use(router.routes());
  app.use(router.allowedMethods());
  return app;
}
