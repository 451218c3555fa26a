import Koa, { type Context } from 'koa';
import Router from '@koa/router';
import type { MikroORM } from '@mikro-orm/postgresql';
import type { Pool } from 'pg';
import type { Logger } from 'pino';
import type { ZodType } from 'zod';
import type { AppConfig } from '../config/env';
import type { EnginePool } from '../services/engine-pool';
import type { StagedBody } from '../services/staged-bodies';
import type { PlanName } from '../config/plans';
import { RateLimited, RateLimits, type RateBudget } from '../services/rate-limits';
import type { RequestLogWriter } from '../services/request-log';
import type { TemporalGateway } from '../services/temporal/gateway';
import { creditsCharged } from '../services/metrics';
import { version } from '../package.json';
import { closeConnectionsWhileDraining, DrainState } from './drain';
import { authenticate, confirmCredential, CREDENTIAL_RECHECK_AFTER_MS, requireRouteAccess, type AuthContext } from './middleware/auth';
import { readBody } from './middleware/body';
import { errorHandler, renderError, zodToAppError } from './middleware/errors';
import { runCommitted } from './middleware/idempotency';
import { loadSecretBox, type SecretBox } from '../services/webhooks/secrets';
import { httpMetrics } from './middleware/http-metrics';
import { answerOptions, answerPageMethods } from './middleware/options';
import { refuseNulInUrl, requestId } from './middleware/request-id';
import { securityHeaders } from './middleware/security-headers';
import { loggerOf, requestLogger } from './middleware/request-logger';
import { buildOpenApiDocument } from './openapi';
import { route, type AnyRoute } from './route';
import { freeCallOf, requireAuth, requireUsageKey } from './routes/helpers';
import type { FreeCall } from '../services/free-work';
import { coerceFormFields, z } from './zod';
import { apiKeyRoutes } from './routes/api-keys';
import { datasetRoutes } from './routes/datasets';
import { engineRoutes } from './routes/engines';
import { forecastRoutes } from './routes/forecast';
import { healthRoutes } from './routes/health';
import { metricsRoutes } from './routes/metrics';
import { modelRoutes } from './routes/models';
import { requestLogRoutes } from './routes/requests';
import { authRoutes } from './routes/auth';
import { billingRoutes } from './routes/billing';
import { mountDevMailbox } from './routes/dev-mail';
import { geoIpRoutes } from './routes/geoip';
import { oauthRoutes } from './routes/oauth';
import { webhookRoutes } from './routes/webhooks';
import { workspaceRoutes } from './routes/workspaces';
import { CONSOLE_PATH, serveConsole } from './static/console';
import { DOCS_PATH, serveApiReference } from './static/docs';
import { createAccountServices, type AccountServices } from '../services/auth';
import { Billing } from '../services/billing';
import type { MailCatcher } from '../services/mail-catcher';
import { createStripeClient, type Stripe } from '../services/stripe';

export interface AppDeps {
  config: AppConfig;
  orm: MikroORM;
  /** The statements every paid call runs, committed without waiting for the flush (db/call-pool.ts). */
  callPool: Pool;
  temporal: TemporalGateway;
  logger: Logger;
  enginePool: EnginePool;
  requestLog: RequestLogWriter;
  /** Set by the process runtime: SIGTERM turns it on (health 503, no keep-alive). */
  drain?: DrainState;
  /** Sign-in, sessions, geolocation; built from `config` when not given. */
  accounts?: AccountServices;
  /** `npm start`'s local mail catcher: its messages are shown at GET /dev/mail (never in production). */
  devMailbox?: MailCatcher;
  /** Default: a client built from the config (none without STRIPE_SECRET_KEY: billing answers 503). */
  stripe?: Stripe | null;
}

type WiredDeps = AppDeps & { accounts: AccountServices };

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
    renderError(ctx, err, loggerOf(ctx, deps.logger));
  }
  const body = ctx.body as { message?: unknown } | null | undefined;
  // A key found revoked on confirmation is refused like any unusable key: outside the workspace's log.
  if (ctx.status === 401 && body && typeof body === 'object' && body.message === 'API_KEY_INVALID') return;
  const operation = def.operation ?? `${def.method} ${def.path}`;
  // Credits count where the call answered with its result: a replay costs nothing, and a call that
  // failed after its handler charged (its answer not stored, CALL_EXPIRED, a 5xx) was given them back.
  const answered = ctx.status < 400 && !ctx.response.get('Idempotent-Replayed');
  const credits = answered ? ((ctx.state.creditsCharged as number | undefined) ?? 0) : 0;
  if (credits > 0) creditsCharged.inc({ operation }, credits);
  deps.requestLog.record({
    id: ctx.state.requestId as string,
    workspaceId: auth.workspaceId,
    accountId: auth.accountId,
    keyId: auth.type === 'api_key' ? auth.keyId : null,
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

/**
 * A call admitted on a recent read of its key (auth `confirm`) answers an error only once the key is
 * read again: a key revoked meanwhile gets its 401, never the route's refusal (nor a 403 of its kind).
 */
function confirmingKeyOnError(auth: AuthContext | null, run: () => Promise<void>): () => Promise<void> {
  const confirm = auth?.type === 'api_key' ? auth.confirm : null;
  if (!confirm) return run;
  return async () => {
    try {
      await run();
    } catch (err) {
      await confirm();
      throw err;
    }
  };
}

function setRateHeaders(ctx: Context, budget: RateBudget): void {
  ctx.set('RateLimit-Limit', String(budget.limit));
  ctx.set('RateLimit-Remaining', String(budget.remaining));
  ctx.set('RateLimit-Reset', String(budget.resetSeconds));
}

/** The key's (or session's) and workspace's budgets for this call; 429 RATE_LIMITED with Retry-After when spent. */
async function withinRateLimits(ctx: Context, rateLimits: RateLimits, auth: AuthContext): Promise<void> {
  try {
    if (auth.type === 'api_key') {
      // Counted by the authentication's own statement.
      if (auth.overBudget) throw new RateLimited(auth.budget, auth.overBudget);
      setRateHeaders(ctx, auth.budget);
      return;
    }
    setRateHeaders(ctx, await rateLimits.consume({ keyId: `session:${auth.sessionId}`, workspaceId: auth.workspaceId, plan: auth.plan }));
  } catch (err) {
    if (err instanceof RateLimited) {
      setRateHeaders(ctx, err.budget);
      ctx.set('Retry-After', String(err.budget.resetSeconds));
    }
    throw err;
  }
}

/**
 * A route's large JSON body, read by an engine thread as that route reads its body (RouteDef
 * `stagedBody`); `freeCall` is the call's place in the free work (a validation or backtest is read and
 * run as one).
 */
function stageBody(pool: EnginePool, def: AnyRoute, bytes: Buffer, request: { method: string; path: string; plan: PlanName }, freeCall: () => FreeCall): Promise<StagedBody> {
  switch (def.stagedBody) {
    case 'predict':
      return pool.stagePredictBody(bytes, request);
    case 'training':
      return pool.stageTrainingBody(bytes, request);
    case 'validation':
      return pool.stageValidationBody(freeCall(), bytes, request);
    case 'forecast':
      return pool.stageForecastBody(bytes, request);
    case 'backtest':
      return pool.stageBacktestBody(freeCall(), bytes, request);
    case undefined:
      throw new Error(`${def.method.toUpperCase()} ${def.path} stages no body`);
  }
}

/**
 * The route's path with its parameters as sent, for Idempotency-Key fingerprints: the router also
 * serves `/V1/WORKSPACES` and `/v1/workspaces/`, and a retry written either way is the same call.
 */
function routePath(def: AnyRoute, params: Record<string, string>): string {
  return def.path.replace(/:([A-Za-z_]+)/g, (_, name: string) => encodeURIComponent(params[name] ?? ''));
}

function mount(router: Router, deps: WiredDeps, rateLimits: RateLimits, answerBox: SecretBox, def: AnyRoute): void {
  const bodyKind = def.bodyKind ?? (def.body ? 'json' : 'none');
  router[def.method](def.path, async (ctx: Context) => {
    // Answers of the API are never stored by a cache: they carry secrets (tokens, key and webhook
    // secrets, shown once) and workspace data read with X-API-Key, which RFC 9111 does not keep out of
    // shared caches as it does Authorization. RFC 6749 asks it of token answers.
    ctx.set('Cache-Control', 'no-store');
    const authDeps = {
      orm: deps.orm,
      callPool: deps.callPool,
      logger: loggerOf(ctx, deps.logger),
      keyLastUsedResolutionSeconds: deps.config.KEY_LAST_USED_RESOLUTION_SECONDS,
      tokens: deps.accounts.tokens,
    };
    const auth = await authenticate(ctx, def.auth, authDeps, def.keyCheckedByCharge === true && !ctx.get('idempotency-key'));
    const authenticatedAt = performance.now();
    await logged(ctx, deps, def, auth, confirmingKeyOnError(auth, async () => {
      // An API key's call was counted with its authentication: its answer states the budgets, a refusal
      // for the key's kind included (a nineteenth probe's 403 and 401 carried none).
      if (auth?.type === 'api_key') setRateHeaders(ctx, auth.budget);
      requireRouteAccess(def.auth, auth);
      if (def.usageKeyOnly) requireUsageKey(auth);
      // An API key's budgets were counted with its authentication; a session's are counted while the
      // body arrives. Either way a refusal answers before any validation or handler runs.
      const limited = auth ? withinRateLimits(ctx, rateLimits, auth) : Promise.resolve();
      limited.catch(() => undefined);
      const { upload, largeJson } = await readBody(ctx, bodyKind, deps.config, auth?.plan ?? null, def.stagedBody !== undefined);
      await limited;
      const request = { method: ctx.method, path: routePath(def, ctx.params), plan: auth?.plan ?? 'free' };
      const staged = largeJson && def.stagedBody ? await stageBody(deps.enginePool, def, largeJson, request, () => freeCallOf(ctx, requireAuth(auth))) : null;
      const run = async () => {
        const params = parseWith(def.params, ctx.params, 'params');
        const query = parseWith(def.query, ctx.query, 'query');
        const raw = ctx.is('multipart/form-data') ? coerceFormFields(def.body, ctx.request.body) : ctx.request.body;
        // A staged body was validated by its thread, against this schema
        // No body at all is {} (readBody); a JSON null is a body, refused as any other that is not an
        // object: it was read as {}, so an eighteenth probe's rotation sent null ran with the defaults.
        const body = staged ? staged.body : parseWith(def.body, raw === undefined ? {} : raw, 'body', def.validationCode);
        await def.handler(ctx, { body, query, params, auth, upload, staged, requestId: ctx.state.requestId as string });
      };
      try {
        // A body that came long after the headers: the credential may have ended meanwhile.
        if (auth && performance.now() - authenticatedAt >= CREDENTIAL_RECHECK_AFTER_MS) await confirmCredential(ctx, auth, authDeps);
        if (auth) {
          const commitDeps = { orm: deps.orm, callPool: deps.callPool, idempotencyLeaseSeconds: deps.config.IDEMPOTENCY_LEASE_SECONDS, box: answerBox };
          const principal = auth.type === 'api_key' ? `key ${auth.keyId}` : `account ${auth.accountId}`;
          // An account-level write's keys are the account's: the same key sent from two of its
          // workspaces made two purchases or two workspaces (a twentieth probe). Account ids and
          // workspace ids never meet (their prefixes differ).
          const keyScope = def.idempotencyScope === 'account' ? auth.accountId : auth.workspaceId;
          const scope = { workspaceId: keyScope, path: request.path, idempotent: def.idempotent === true, upload, bodyFingerprint: staged?.fingerprint ?? null, secretAnswer: def.secretAnswer === true, principal };
          await runCommitted(ctx, commitDeps, scope, run);
        } else await run();
      } finally {
        staged?.end();
      }
    }));
  });
}

export function allRoutes(deps: WiredDeps): AnyRoute[] {
  return [
    ...healthRoutes(deps),
    ...metricsRoutes(deps),
    ...authRoutes(deps),
    ...oauthRoutes(deps),
    ...workspaceRoutes(deps),
    ...geoIpRoutes(deps),
    ...engineRoutes(),
    ...apiKeyRoutes(deps),
    ...modelRoutes(deps),
    ...datasetRoutes(deps),
    ...forecastRoutes(deps),
    ...requestLogRoutes(deps),
    ...webhookRoutes(deps),
    ...billingRoutes({
      billing: new Billing({ orm: deps.orm, stripe: deps.stripe === undefined ? createStripeClient(deps.config) : deps.stripe, temporal: deps.temporal, config: deps.config, logger: deps.logger }),
    }),
  ];
}

/** The Koa app, not listening: the entry points and the tests decide how to serve it. */
export function createApp(appDeps: AppDeps): Koa {
  const deps: WiredDeps = { ...appDeps, accounts: appDeps.accounts ?? createAccountServices(appDeps.config, appDeps.orm) };
  // X-Forwarded-For is read only from TRUSTED_PROXIES (services/client-ip.ts), never by Koa itself.
  const app = new Koa({ proxy: false });
  // Errors no middleware could answer: in practice a browser leaving while a static file streams
  // (console, /docs). Those are not ours; anything else goes to the log instead of Koa's stderr print.
  app.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'ECONNRESET' || err.code === 'EPIPE' || err.code === 'ERR_STREAM_PREMATURE_CLOSE') return;
    deps.logger.error({ err }, 'error after the answer started');
  });
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
  const rateLimits = new RateLimits(deps.callPool);
  // The key webhook secrets are sealed with also seals the stored answers that show a secret once.
  const answerBox = loadSecretBox(deps.config);
  for (const def of routes) mount(router, deps, rateLimits, answerBox, def);
  router.get('/openapi.json', (ctx) => {
    ctx.body = openApi;
  });
  if (deps.devMailbox && deps.config.NODE_ENV !== 'production') mountDevMailbox(router, deps.devMailbox, deps.accounts.clientAddress);

  app.use(requestId());
  app.use(securityHeaders());
  app.use(requestLogger(deps.logger));
  app.use(httpMetrics());
  app.use(closeConnectionsWhileDraining(deps.drain ?? new DrainState()));
  app.use(errorHandler(deps.logger));
  app.use(refuseNulInUrl());
  // Static pages for people, outside the JSON API and its OpenAPI document: the console and /docs.
  app.use(answerPageMethods([CONSOLE_PATH, DOCS_PATH]));
  app.use(serveConsole(deps.config.CONSOLE_DIR));
  app.use(serveApiReference());
  app.use(answerOptions());
  app.use(router.routes());
  app.use(router.allowedMethods());
  return app;
}
