import type { Context } from 'koa';
import type { Logger } from 'pino';
import type { AccountServices } from '../../services/auth';
import type { StateCookie } from '../../services/auth/oauth';
import { loggerOf } from '../middleware/request-logger';
import { presentTokenPair } from '../presenters';
import { route, type AnyRoute, type ResponseDoc } from '../route';
import { providersSchema, tokenPairSchema } from '../schemas/auth';
import { oauthCallbackQuerySchema, oauthCodeBodySchema, oauthProviderParamsSchema } from '../schemas/oauth';
import { clientOf } from './auth';
import { requireAuth } from './helpers';

const RATE_LIMITED: [number, string] = [429, 'RATE_LIMITED'];

const redirectDoc = (description: string, cookie: string): ResponseDoc => ({
  description,
  headers: {
    Location: { description: 'Where the browser goes next.', schema: { type: 'string' } },
    'Set-Cookie': { description: cookie, schema: { type: 'string' } },
  },
});

function setCookie(ctx: Context, cookie: StateCookie): void {
  // Written by hand: Koa's cookie helper refuses `Secure` when TLS ends at a proxy in front of it.
  const attributes = [`${cookie.name}=${cookie.value}`, `Path=${cookie.path}`, `Max-Age=${cookie.maxAgeSeconds}`, 'HttpOnly', 'SameSite=Lax'];
  if (cookie.secure) attributes.push('Secure');
  ctx.append('Set-Cookie', attributes.join('; '));
}

/** A 302 with an empty body; the URLs carry a state or a code, so no cache and no Referer keeps them. */
function redirect(ctx: Context, location: string): void {
  ctx.status = 302;
  ctx.set('Location', location);
  ctx.set('Cache-Control', 'no-store');
  ctx.set('Referrer-Policy', 'no-referrer');
  ctx.body = '';
}

export function oauthRoutes(deps: { accounts: AccountServices; logger: Logger }): AnyRoute[] {
  const { accounts } = deps;
  return [
    route({
      method: 'get',
      path: '/v1/auth/providers',
      summary: 'Sign-in methods: the emailed link and code, the staff password, and the OAuth providers configured on this deployment',
      tag: 'Authentication',
      auth: 'public',
      responses: { 200: { description: 'Only providers with credentials configured are listed.', schema: providersSchema } },
      errors: [],
      handler(ctx) {
        ctx.body = {
          // the staff password only where staff domains are configured: the route lists what is available
          methods: accounts.signIn.offersPassword ? ['magic_link', 'password'] : ['magic_link'],
          providers: accounts.oauth.list().map((p) => ({ id: p.id, name: p.name, authorize_url: p.authorizeUrl })),
        };
      },
    }),
    route({
      method: 'get',
      path: '/v1/auth/oauth/:provider',
      summary: 'Browser: start signing in (or linking) with a provider: redirect to it with state, PKCE (S256) and, for OpenID Connect, a nonce',
      tag: 'Authentication',
      auth: 'public',
      params: oauthProviderParamsSchema,
      responses: {
        302: redirectDoc(
          'To the provider\'s authorization page; the state is valid 10 minutes, once.',
          '`oauth_state_<id>`: HttpOnly, SameSite=Lax, scoped to the callback path; binds the redirect to this browser (the callback refuses the state without it).',
        ),
      },
      errors: [[404, 'NOT_FOUND'], RATE_LIMITED, [503, 'OAUTH_PROVIDER_UNAVAILABLE']],
      async handler(ctx, { params }) {
        const started = await accounts.oauth.start(params.provider, clientOf(ctx, accounts));
        setCookie(ctx, started.cookie);
        redirect(ctx, started.location);
      },
    }),
    route({
      method: 'get',
      path: '/v1/auth/oauth/:provider/callback',
      summary: 'Browser: the provider\'s redirect back; exchanges its code, then sends the browser to the console with a one-time code',
      tag: 'Authentication',
      auth: 'public',
      params: oauthProviderParamsSchema,
      query: oauthCallbackQuerySchema,
      responses: {
        302: redirectDoc(
          'To `<FRONTEND_URL>/sign-in#oauth_code=<code>&provider=<id>` (the code is valid 60 seconds, once: POST it to /v1/auth/oauth/exchange, or to /v1/auth/oauth/{provider}/link from a signed-in session), or, when the provider refused or failed, `<FRONTEND_URL>/sign-in#oauth_error=<error>&provider=<id>` (`access_denied` and other provider codes, or `provider_error`).',
          'Clears the `oauth_state_<id>` cookie of this redirect.',
        ),
      },
      errors: [[400, 'OAUTH_STATE_INVALID'], [404, 'NOT_FOUND'], RATE_LIMITED],
      async handler(ctx, { params }) {
        const outcome = await accounts.oauth.callback(params.provider, new URLSearchParams(ctx.querystring), (name) => ctx.cookies.get(name), clientOf(ctx, accounts));
        if (outcome.failure) loggerOf(ctx, deps.logger).warn({ err: outcome.failure.cause, provider: params.provider }, `OAuth sign-in failed: ${outcome.failure.reason}`);
        setCookie(ctx, outcome.clearCookie);
        redirect(ctx, outcome.location);
      },
    }),
    route({
      method: 'post',
      path: '/v1/auth/oauth/exchange',
      summary: 'Exchange the callback\'s one-time code for tokens: the identity\'s account, or a new account when its verified address is unused',
      tag: 'Authentication',
      auth: 'public',
      body: oauthCodeBodySchema,
      responses: { 200: { description: 'Signed in (`account_created` when this sign-in created the account, on the free plan with one workspace).', schema: tokenPairSchema } },
      errors: [
        [400, 'OAUTH_CODE_INVALID'],
        [403, 'OAUTH_EMAIL_UNVERIFIED'],
        [403, 'STAFF_LOGIN_REQUIRED'],
        [409, 'ACCOUNT_EXISTS'],
        RATE_LIMITED,
      ],
      async handler(ctx, { body }) {
        ctx.body = presentTokenPair(await accounts.oauth.exchange(body.code, clientOf(ctx, accounts)));
      },
    }),
    route({
      method: 'post',
      path: '/v1/auth/oauth/:provider/link',
      summary: 'Link the identity of a one-time code to the signed-in account (the only way an identity reaches an existing account)',
      tag: 'Authentication',
      auth: 'session',
      params: oauthProviderParamsSchema,
      body: oauthCodeBodySchema,
      responses: { 204: { description: 'Linked (also when it already was, to this account).' } },
      errors: [
        [400, 'OAUTH_CODE_INVALID'],
        [400, 'OAUTH_PROVIDER_MISMATCH'],
        [403, 'STAFF_LOGIN_REQUIRED'],
        [404, 'NOT_FOUND'],
        [409, 'IDENTITY_LINKED_ELSEWHERE'],
        RATE_LIMITED,
      ],
      async handler(ctx, { params, body, auth }) {
        await accounts.oauth.link(requireAuth(auth).accountId, params.provider, body.code, clientOf(ctx, accounts));
        ctx.status = 204;
      },
    }),
  ];
}
