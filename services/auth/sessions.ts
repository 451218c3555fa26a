import type { EntityManager } from '@mikro-orm/postgresql';
import type { PlanName } from '../../config/plans';
import { AppError } from '../errors';
import { newId } from '../ids';
import type { AccessTokens } from './access-tokens';
import { randomToken, sha256 } from './secrets';

export interface ClientInfo {
  ip: string | null;
  userAgent: string | null;
}

export interface TokenPair {
  accountId: string;
  sessionId: string;
  accessToken: string;
  expiresInSeconds: number;
  refreshToken: string;
  refreshExpiresAt: Date;
}

export interface SessionPolicy {
  tokens: AccessTokens;
  refreshTtlDays: number;
}

const DAY_MS = 86_400_000;

const refreshInvalid = (): AppError => new AppError('TOKEN_INVALID', 401, 'The refresh token is invalid, expired or already used; sign in again.');

async function issuePair(tx: EntityManager, policy: SessionPolicy, accountId: string, sessionId: string, now: Date): Promise<TokenPair> {
  const refreshToken = randomToken('rt_');
  const refreshExpiresAt = new Date(now.getTime() + policy.refreshTtlDays * DAY_MS);
  await tx.execute(`insert into refresh_tokens (id, session_id, account_id, token_hash, expires_at, created_at) values (?, ?, ?, ?, ?, ?)`, [
    newId('refreshToken'),
    sessionId,
    accountId,
    sha256(refreshToken),
    refreshExpiresAt,
    now,
  ]);
  // A session lives as long as its newest refresh token.
  await tx.execute(`update sessions set expires_at = ? where id = ?`, [refreshExpiresAt, sessionId]);
  const access = await policy.tokens.sign({ accountId, sessionId }, now);
  return { accountId, sessionId, accessToken: access.token, expiresInSeconds: access.expiresInSeconds, refreshToken, refreshExpiresAt };
}

/** A new session (one sign-in, one refresh-token family) with its first token pair. Call inside the sign-in's transaction. */
export async function startSession(tx: EntityManager, policy: SessionPolicy, input: { accountId: string; method: string; client: ClientInfo }, now: Date): Promise<TokenPair> {
  const sessionId = newId('session');
  await tx.execute(`insert into sessions (id, account_id, method, user_agent, ip, created_at, expires_at) values (?, ?, ?, ?, ?, ?, ?)`, [
    sessionId,
    input.accountId,
    input.method,
    input.client.userAgent?.slice(0, 300) ?? null,
    input.client.ip?.slice(0, 64) ?? null,
    now,
    now,
  ]);
  return issuePair(tx, policy, input.accountId, sessionId, now);
}

/** Revokes every session (and with them every refresh-token family) of an account. */
export async function revokeAllSessions(em: EntityManager, accountId: string, now: Date): Promise<number> {
  const rows = await em.execute<Array<{ id: string }>>(`update sessions set revoked_at = ? where account_id = ? and revoked_at is null returning id`, [now, accountId]);
  return rows.length;
}

type Renewal = { pair: TokenPair } | { replayOf: string } | { invalid: true };

/**
 * Single-use refresh tokens. The token is marked used by a conditional update, so of two concurrent
 * renewals with one token exactly one makes a new pair; the other finds it used. A used token
 * presented again while its session is live is taken for a stolen one: every session of the account
 * is revoked (all families) and the caller gets 401, as OAuth 2.0 Security BCP's refresh-token
 * rotation prescribes. Once its session has ended (revoked so, signed out, expired) the token is only
 * a 401: every later presentation of one stale token signed the account out everywhere again, the
 * sessions opened since included, for as long as the token was kept (30 days), so whoever held it
 * could keep its owner signed out (a sixteenth probe).
 */
export async function renewSession(em: EntityManager, policy: SessionPolicy, refreshToken: string, now: Date): Promise<TokenPair> {
  const hash = sha256(refreshToken);
  const renewal = await em.transactional(async (tx): Promise<Renewal> => {
    const claimed = await tx.execute<Array<{ session_id: string; account_id: string }>>(
      `update refresh_tokens rt set used_at = ?
         from sessions s, accounts a
        where rt.token_hash = ? and rt.used_at is null and rt.expires_at > ?
          and s.id = rt.session_id and s.revoked_at is null
          and a.id = rt.account_id and a.deleted_at is null
        returning rt.session_id, rt.account_id`,
      [now, hash, now],
    );
    const row = claimed[0];
    if (row) return { pair: await issuePair(tx, policy, row.account_id, row.session_id, now) };
    const known = await tx.execute<Array<{ account_id: string; used_at: Date | null; live: boolean }>>(
      `select rt.account_id, rt.used_at, (s.revoked_at is null and s.expires_at > ?) as live
         from refresh_tokens rt join sessions s on s.id = rt.session_id
        where rt.token_hash = ?`,
      [now, hash],
    );
    const token = known[0];
    if (token?.used_at && token.live) return { replayOf: token.account_id };
    return { invalid: true };
  });
  if ('pair' in renewal) return renewal.pair;
  if ('replayOf' in renewal) await revokeAllSessions(em, renewal.replayOf, now);
  throw refreshInvalid();
}

/**
 * Ends the session of a refresh token, or with `everywhere` every session of its account: what a
 * person who thinks a token or a device is lost can do. Idempotent: an unknown or already ended token
 * changes nothing. Only a token whose session is still live signs the account out everywhere, so a
 * stale token kept after a sign-out cannot do it again and again (the rule renewSession keeps for
 * replays).
 */
export async function endSession(em: EntityManager, refreshToken: string, now: Date, options: { everywhere: boolean } = { everywhere: false }): Promise<void> {
  if (options.everywhere) {
    await em.execute(
      `update sessions set revoked_at = ? where revoked_at is null and account_id = (
         select s.account_id from refresh_tokens rt join sessions s on s.id = rt.session_id
          where rt.token_hash = ? and s.revoked_at is null and s.expires_at > ?)`,
      [now, sha256(refreshToken), now],
    );
    return;
  }
  await em.execute(
    `update sessions set revoked_at = ? where revoked_at is null and id = (select session_id from refresh_tokens where token_hash = ?)`,
    [now, sha256(refreshToken)],
  );
}

export interface ActiveSession {
  sessionId: string;
  accountId: string;
  plan: PlanName;
  workspaceId: string;
}

/**
 * The session behind an access token, checked at every call so that sign-out, replay detection and
 * account deletion take effect at once; with the active workspace (X-Workspace-Id, else the oldest).
 */
export async function activeSession(em: EntityManager, claims: { accountId: string; sessionId: string }, workspaceId: string | null, now: Date): Promise<ActiveSession> {
  const rows = await em.execute<Array<{ plan: PlanName; workspace_id: string | null }>>(
    `select a.plan, w.id as workspace_id
       from sessions s
       join accounts a on a.id = s.account_id and a.deleted_at is null
       left join lateral (
         select id from workspaces where account_id = a.id and (?::text is null or id = ?) order by created_at, id limit 1
       ) w on true
      where s.id = ? and s.account_id = ? and s.revoked_at is null and s.expires_at > ?`,
    [workspaceId, workspaceId, claims.sessionId, claims.accountId, now],
  );
  const row = rows[0];
  if (!row) throw new AppError('TOKEN_INVALID', 401, 'The session of this access token has ended; sign in again.');
  if (!row.workspace_id) {
    throw new AppError('NOT_FOUND', 404, workspaceId ? `No workspace ${workspaceId} in this account (X-Workspace-Id).` : 'This account has no workspace.');
  }
  return { sessionId: claims.sessionId, accountId: claims.accountId, plan: row.plan, workspaceId: row.workspace_id };
}
