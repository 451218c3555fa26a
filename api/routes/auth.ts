import type { Context } from 'koa';
import type { MikroORM } from '@mikro-orm/postgresql';
import type { AccountServices } from '../../services/auth';
import type { ClientInfo } from '../../services/auth/sessions';
import { endSession, renewSession } from '../../services/auth/sessions';
import type { TemporalGateway } from '../../services/temporal/gateway';
import { deleteAccountAndErase } from '../../services/account-deletion';
import { profileOf, updateFullName } from '../../services/profile';
import { presentProfile, presentTokenPair } from '../presenters';
import { route, type AnyRoute } from '../route';
import {
  codeBodySchema,
  codeSentSchema,
  deleteAccountBodySchema,
  emailBodySchema,
  magicLinkSentSchema,
  magicLinkVerifyBodySchema,
  nextStepSchema,
  passwordBodySchema,
  profileSchema,
  logoutBodySchema,
  refreshBodySchema,
  tokenPairSchema,
  updateProfileBodySchema,
} from '../schemas/auth';
import { requireAuth } from './helpers';

export function clientOf(ctx: Context, accounts: AccountServices): ClientInfo {
  return { ip: accounts.clientAddress(ctx.req), userAgent: ctx.get('user-agent') || null };
}

const RATE_LIMITED: [number, string] = [429, 'RATE_LIMITED'];
const MAGIC_LINK_SECONDS = 15 * 60;
const STAFF_CODE_SECONDS = 10 * 60;

export function authRoutes(deps: { orm: MikroORM; temporal: TemporalGateway; accounts: AccountServices }): AnyRoute[] {
  const { accounts } = deps;
  return [
    route({
      method: 'post',
      path: '/v1/auth/login',
      summary: 'First sign-in step: the next step by the address\'s domain (a link and code are emailed for non-staff addresses)',
      tag: 'Authentication',
      auth: 'public',
      body: emailBodySchema,
      responses: { 200: { description: 'The next step; never depends on whether an account exists.', schema: nextStepSchema } },
      errors: [RATE_LIMITED],
      async handler(ctx, { body }) {
        ctx.body = { next_step: await accounts.signIn.login(body.email, clientOf(ctx, accounts)) };
      },
    }),
    route({
      method: 'post',
      path: '/v1/auth/magic-link/request',
      summary: 'Email a sign-in link and code (an unknown address gets its account when it first verifies)',
      tag: 'Authentication',
      auth: 'public',
      body: emailBodySchema,
      responses: { 200: { description: 'Sent (or, within a minute of the last mail to this address, not sent again).', schema: magicLinkSentSchema } },
      errors: [[403, 'STAFF_LOGIN_REQUIRED'], RATE_LIMITED],
      async handler(ctx, { body }) {
        await accounts.signIn.requestMagicLink(body.email, clientOf(ctx, accounts));
        ctx.body = { next_step: 'magic_link', expires_in: MAGIC_LINK_SECONDS };
      },
    }),
    route({
      method: 'post',
      path: '/v1/auth/magic-link/verify',
      summary: 'Exchange the emailed link token, or the address and code, for tokens',
      tag: 'Authentication',
      auth: 'public',
      body: magicLinkVerifyBodySchema,
      responses: { 200: { description: 'Signed in.', schema: tokenPairSchema } },
      errors: [
        [400, 'MAGIC_LINK_INVALID'],
        [400, 'OTP_INVALID'],
        [400, 'OTP_TOO_MANY_ATTEMPTS'],
        [403, 'STAFF_LOGIN_REQUIRED'],
        RATE_LIMITED,
      ],
      async handler(ctx, { body }) {
        ctx.body = presentTokenPair(await accounts.signIn.verifyMagicLink(body, clientOf(ctx, accounts)));
      },
    }),
    route({
      method: 'post',
      path: '/v1/auth/login/password',
      summary: 'Staff: check the password, then email a six-digit code',
      tag: 'Authentication',
      auth: 'public',
      body: passwordBodySchema,
      responses: { 202: { description: 'Password right; the code was emailed.', schema: codeSentSchema } },
      errors: [[401, 'STAFF_LOGIN_INVALID'], RATE_LIMITED],
      async handler(ctx, { body }) {
        await accounts.signIn.staffPassword(body.email, body.password, clientOf(ctx, accounts));
        ctx.status = 202;
        ctx.body = { next_step: 'code', expires_in: STAFF_CODE_SECONDS };
      },
    }),
    route({
      method: 'post',
      path: '/v1/auth/login/verify',
      summary: 'Staff: exchange the emailed code for tokens',
      tag: 'Authentication',
      auth: 'public',
      body: codeBodySchema,
      responses: { 200: { description: 'Signed in.', schema: tokenPairSchema } },
      errors: [[400, 'OTP_INVALID'], [400, 'OTP_TOO_MANY_ATTEMPTS'], [401, 'STAFF_LOGIN_INVALID'], RATE_LIMITED],
      async handler(ctx, { body }) {
        ctx.body = presentTokenPair(await accounts.signIn.staffVerify(body.email, body.code, clientOf(ctx, accounts)));
      },
    }),
    route({
      method: 'post',
      path: '/v1/auth/refresh',
      summary: 'Renew the token pair (the refresh token is single use; a replay signs the account out everywhere)',
      tag: 'Authentication',
      auth: 'public',
      body: refreshBodySchema,
      responses: { 200: { description: 'A new pair.', schema: tokenPairSchema } },
      errors: [[401, 'TOKEN_INVALID'], RATE_LIMITED],
      async handler(ctx, { body }) {
        await accounts.limits.consume('refresh', { client: clientOf(ctx, accounts).ip });
        const pair = await renewSession(deps.orm.em.fork(), accounts.session, body.refresh_token, new Date());
        ctx.body = presentTokenPair({ ...pair, created: false });
      },
    }),
    route({
      method: 'post',
      path: '/v1/auth/logout',
      summary: 'End the session of a refresh token, or with `everywhere` every session of its account (idempotent)',
      tag: 'Authentication',
      auth: 'public',
      body: logoutBodySchema,
      responses: { 204: { description: 'Signed out (also for an unknown or already ended token).' } },
      errors: [],
      async handler(ctx, { body }) {
        await endSession(deps.orm.em.fork(), body.refresh_token, new Date(), { everywhere: body.everywhere === true });
        ctx.status = 204;
      },
    }),
    route({
      method: 'get',
      path: '/v1/auth/me',
      summary: 'The signed-in account: profile, plan, credits, workspaces',
      tag: 'Account',
      auth: 'session',
      responses: { 200: { description: 'The profile.', schema: profileSchema } },
      errors: [],
      async handler(ctx, { auth }) {
        ctx.body = presentProfile(await profileOf(deps.orm.em.fork(), requireAuth(auth).accountId));
      },
    }),
    route({
      method: 'patch',
      path: '/v1/auth/me',
      summary: 'Change the full name',
      tag: 'Account',
      auth: 'session',
      body: updateProfileBodySchema,
      responses: { 200: { description: 'The profile.', schema: profileSchema } },
      errors: [],
      async handler(ctx, { body, auth }) {
        ctx.body = presentProfile(await updateFullName(deps.orm.em.fork(), requireAuth(auth).accountId, body.full_name));
      },
    }),
    route({
      method: 'delete',
      path: '/v1/auth/me',
      summary: 'Delete the account: it stops authenticating at once; workspaces, models, keys and sessions are erased by a workflow',
      tag: 'Account',
      auth: 'session',
      body: deleteAccountBodySchema,
      responses: { 204: { description: 'Deletion under way.' } },
      errors: [[400, 'CONFIRMATION_MISMATCH']],
      async handler(ctx, { body, auth }) {
        await deleteAccountAndErase(deps.orm.em.fork(), deps.temporal, requireAuth(auth).accountId, body.email, new Date());
        ctx.status = 204;
      },
    }),
  ];
}
