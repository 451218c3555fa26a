import type { Context } from 'koa';
import type { MikroORM } from '@mikro-orm/postgresql';
import type { Logger } from 'pino';
import type { PlanName } from '../../config/plans';
import type { ApiKeyKind } from '../../db/entities';
import { authenticateKey, looksLikeApiKey, touchKey } from '../../services/api-keys';
import { AppError } from '../../services/errors';

/**
 * - public: no credentials needed.
 * - key_or_session: engine and usage routes (any valid API key or a web session).
 * - admin: administration routes (admin key or web session); a usage key gets 403 ADMIN_KEY_REQUIRED.
 * - session: account routes; any API key gets 401 AUTH_REQUIRED.
 */
export type AuthRequirement = 'public' | 'key_or_session' | 'admin' | 'session';

/** Who calls: an API key of one workspace, or a web session of an account (active workspace chosen per call). */
export type AuthContext =
  | { type: 'api_key'; keyId: string; keyKind: ApiKeyKind; workspaceId: string; accountId: string; plan: PlanName }
  | { type: 'session'; sessionId: string; workspaceId: string; accountId: string; plan: PlanName };

function presentedCredential(ctx: Context): string | null {
  const headerKey = ctx.get('x-api-key').trim();
  if (headerKey) return headerKey;
  const authorization = ctx.get('authorization').trim();
  const match = /^Bearer\s+(\S+)$/i.exec(authorization);
  if (match) return match[1] ?? null;
  if (authorization) throw new AppError('TOKEN_INVALID', 401, 'The Authorization header must be "Bearer <token>".');
  return null;
}

export interface AuthDeps {
  orm: MikroORM;
  logger: Logger;
  keyLastUsedResolutionSeconds: number;
}

export async function authenticate(ctx: Context, requirement: AuthRequirement, deps: AuthDeps): Promise<AuthContext | null> {
  if (requirement === 'public') return null;
  const credential = presentedCredential(ctx);
  if (!credential) {
    throw new AppError('AUTH_REQUIRED', 401, 'This route needs credentials: an API key (X-API-Key or Authorization: Bearer) or a web session.');
  }
  if (!looksLikeApiKey(credential)) {
    // Web sessions (access tokens) are not issued yet: every other bearer token is invalid.
    throw new AppError('TOKEN_INVALID', 401, 'The access token is invalid or has expired.');
  }
  const now = new Date();
  const em = deps.orm.em.fork();
  const found = await authenticateKey(em, credential, now);
  touchKey(em, found.keyId, now, deps.keyLastUsedResolutionSeconds).catch((err: unknown) =>
    deps.logger.warn({ err, keyId: found.keyId }, 'could not record key use'),
  );
  const auth: AuthContext = {
    type: 'api_key',
    keyId: found.keyId,
    keyKind: found.kind,
    workspaceId: found.workspaceId,
    accountId: found.accountId,
    plan: found.plan,
  };
  if (requirement === 'session') {
    throw new AppError('AUTH_REQUIRED', 401, 'This account route needs a web session; API keys are not accepted here.');
  }
  if (requirement === 'admin' && auth.keyKind !== 'admin') {
    throw new AppError('ADMIN_KEY_REQUIRED', 403, 'This route needs an administration key (sk-svc-admin-…).');
  }
  return auth;
}
