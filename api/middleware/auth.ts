import type { Context } from 'koa';
import type { MikroORM } from '@mikro-orm/postgresql';
import type { Logger } from 'pino';
import type { PlanName } from '../../config/plans';
import type { ApiKeyKind } from '../../db/entities';
import { authenticateKey, confirmKey, deferredKeyCall, looksLikeApiKey, touchKey } from '../../services/api-keys';
import { AppError } from '../../services/errors';
import type { BudgetScope, RateBudget } from '../../services/rate-limits';
import type { Queryable } from '../../services/sql';
import type { AccessTokens } from '../../services/auth/access-tokens';
import { activeSession } from '../../services/auth/sessions';

/**
 * - public: no credentials needed.
 * - key_or_session: engine and usage routes (any valid API key or a web session).
 * - admin: administration routes (admin key or web session); a usage key gets 403 ADMIN_KEY_REQUIRED.
 * - session: account routes; any API key gets 401 AUTH_REQUIRED.
 */
export type AuthRequirement = 'public' | 'key_or_session' | 'admin' | 'session';

/** Who calls: an API key of one workspace, or a web session of an account (active workspace chosen per call). */
export type AuthContext =
  | {
      type: 'api_key';
      keyId: string;
      keyKind: ApiKeyKind;
      workspaceId: string;
      accountId: string;
      plan: PlanName;
      /** This call, already counted with the authentication (services/api-keys.ts). */
      budget: RateBudget;
      overBudget: BudgetScope | null;
      /**
       * Null when the key was read by this call. Otherwise the call was admitted on this process's
       * recent read of the key (a route with `keyCheckedByCharge`): its charge statement checks the key,
       * and any answer the charge did not check must first await this, which throws the key's 401.
       */
      confirm: (() => Promise<void>) | null;
    }
  | { type: 'session'; sessionId: string; workspaceId: string; accountId: string; plan: PlanName };

/**
 * The value of a credential header sent in one or more fields. Node keeps only the first Authorization
 * field of a request and joins repeated X-API-Key fields with ", ", so a call with a valid key in its
 * first Authorization field and an unknown key or another account's token in a second was served as
 * the first (a seventh probe): fields repeating the same value are that one value, and different
 * values are 400 AMBIGUOUS_CREDENTIALS, as two different credentials in two headers are.
 */
function oneFieldValue(ctx: Context, name: string): string {
  const raw = ctx.req.rawHeaders;
  const values = new Set<string>();
  for (let i = 0; i + 1 < raw.length; i += 2) {
    if (raw[i]?.toLowerCase() === name) values.add((raw[i + 1] ?? '').trim());
  }
  if (values.size > 1) throw new AppError('AMBIGUOUS_CREDENTIALS', 400, `Send one credential: the request repeats the ${name === 'authorization' ? 'Authorization' : 'X-API-Key'} header with different values.`);
  return values.values().next().value ?? '';
}

/**
 * The one credential of the call. X-API-Key and Authorization: Bearer are equivalent forms, so both
 * may carry the same key; two different credentials are 400 AMBIGUOUS_CREDENTIALS (RFC 6750's
 * invalid_request for more than one method): X-API-Key won silently, so a call was served as the
 * key's workspace beside an expired, invalid or other account's token (a sixth probe).
 */
function presentedCredential(ctx: Context): string | null {
  const headerKey = oneFieldValue(ctx, 'x-api-key');
  const authorization = oneFieldValue(ctx, 'authorization');
  const match = /^Bearer\s+(\S+)$/i.exec(authorization);
  // an Authorization of the scheme alone ("Bearer", as tools send an empty token field) carries no credential
  if (headerKey && authorization && !/^Bearer$/i.test(authorization)) {
    if (match?.[1] === headerKey) return headerKey;
    throw new AppError('AMBIGUOUS_CREDENTIALS', 400, 'Send one credential: X-API-Key and Authorization name different ones.');
  }
  if (headerKey) {
    // X-API-Key carries API keys only (web sessions send Authorization: Bearer): anything else there,
    // an upper-cased secret say, is an unrecognised key, not an access token that failed to verify.
    if (!looksLikeApiKey(headerKey)) throw new AppError('API_KEY_INVALID', 401, 'The API key is not recognised.');
    return headerKey;
  }
  if (match) return match[1] ?? null;
  if (authorization) throw new AppError('TOKEN_INVALID', 401, 'The Authorization header must be "Bearer <token>".');
  return null;
}

export interface AuthDeps {
  orm: MikroORM;
  /** The call pool (db/call-pool.ts): key authentication runs on every call. */
  callPool: Queryable;
  logger: Logger;
  keyLastUsedResolutionSeconds: number;
  tokens: AccessTokens;
}

const WORKSPACE_ID = /^ws_[0-9A-Za-z]{1,60}$/;

/** The web session's chosen workspace (DESIGN.md): X-Workspace-Id, else the account's oldest. */
function chosenWorkspace(ctx: Context): string | null {
  // Sent empty (or blank) names no workspace, as a malformed id does: it is not the header left out,
  // which a ninth probe's empty header was taken for, so its writes went to the oldest workspace.
  if (ctx.headers['x-workspace-id'] === undefined) return null;
  const header = ctx.get('x-workspace-id').trim();
  if (!WORKSPACE_ID.test(header)) throw new AppError('NOT_FOUND', 404, `No workspace ${header.slice(0, 64)} in this account (X-Workspace-Id).`);
  return header;
}

async function authenticateSession(ctx: Context, token: string, deps: AuthDeps): Promise<AuthContext> {
  const claims = await deps.tokens.verify(token);
  const session = await activeSession(deps.orm.em.fork(), claims, chosenWorkspace(ctx), new Date());
  return { type: 'session', ...session };
}

export async function authenticate(
  ctx: Context,
  requirement: AuthRequirement,
  deps: AuthDeps,
  /** The route's charge statement checks the key (RouteDef.keyCheckedByCharge): a recent read may stand in for this call's. */
  keyCheckedByCharge = false,
): Promise<AuthContext | null> {
  if (requirement === 'public') return null;
  const credential = presentedCredential(ctx);
  if (!credential) {
    throw new AppError('AUTH_REQUIRED', 401, 'This route needs credentials: an API key (X-API-Key or Authorization: Bearer) or a web session.');
  }
  if (!looksLikeApiKey(credential)) {
    // Web sessions reach every route their account may use; the workspace routes act on the chosen one.
    return authenticateSession(ctx, credential, deps);
  }
  const now = new Date();
  const deferred = keyCheckedByCharge ? deferredKeyCall(credential, now) : null;
  const found = deferred ?? (await authenticateKey(deps.callPool, credential, now));
  touchKey(deps.callPool, found.keyId, now, deps.keyLastUsedResolutionSeconds).catch((err: unknown) =>
    deps.logger.warn({ err, keyId: found.keyId }, 'could not record key use'),
  );
  const auth: AuthContext = {
    type: 'api_key',
    keyId: found.keyId,
    keyKind: found.kind,
    workspaceId: found.workspaceId,
    accountId: found.accountId,
    plan: found.plan,
    budget: found.budget,
    overBudget: found.overBudget,
    confirm: deferred ? () => confirmKey(deps.callPool, credential, new Date()) : null,
  };
  return auth;
}

/**
 * Whether the authenticated caller may use a route of this requirement: an API key on an account
 * route is 401 AUTH_REQUIRED, a usage key on an administration route 403 ADMIN_KEY_REQUIRED. Checked
 * apart from `authenticate`, once the call is the workspace's (app.ts `logged`): such a call was
 * counted on the key's and the workspace's rate budgets like any other, and was missing from the
 * request log and usage (a nineteenth probe's 230 refused calls spent a workspace's budget unseen).
 */
export function requireRouteAccess(requirement: AuthRequirement, auth: AuthContext | null): void {
  if (auth?.type !== 'api_key') return;
  if (requirement === 'session') {
    throw new AppError('AUTH_REQUIRED', 401, 'This account route needs a web session; API keys are not accepted here.');
  }
  if (requirement === 'admin' && auth.keyKind !== 'admin') {
    throw new AppError('ADMIN_KEY_REQUIRED', 403, 'This route needs an administration key (sk-svc-admin-…).');
  }
}

/**
 * How long after its authentication a call's credential is read again before its handler runs. A
 * call is authenticated when its headers arrive, and its body may follow up to Node's requestTimeout
 * (300 s) later: a seventeenth probe held a body back, signed the session out (or revoked the key),
 * then sent it, and the call still created an administration key (or scored and charged rows). A
 * call whose body came at once is not read twice (predict's hot path stays one statement).
 */
export const CREDENTIAL_RECHECK_AFTER_MS = 1000;

/**
 * Reads the call's credential again, without counting the call: throws the 401 a call arriving now
 * would get (TOKEN_INVALID for an ended session or an expired access token, API_KEY_INVALID for a
 * revoked, ended or expired key).
 */
export async function confirmCredential(ctx: Context, auth: AuthContext, deps: AuthDeps): Promise<void> {
  const credential = presentedCredential(ctx);
  if (!credential) throw new AppError('AUTH_REQUIRED', 401, 'This route needs credentials: an API key (X-API-Key or Authorization: Bearer) or a web session.');
  if (auth.type === 'api_key') await confirmKey(deps.callPool, credential, new Date());
  else await authenticateSession(ctx, credential, deps);
}
