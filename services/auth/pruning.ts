import type { EntityManager } from '@mikro-orm/postgresql';

/** Sessions and refresh tokens stay this long past their expiry: a late renewal still meets a known (expired) token. */
const EXPIRED_SESSION_GRACE_MS = 86_400_000;

export interface AuthPruned {
  oauthStatesPruned: number;
  oauthCodesPruned: number;
  signInChallengesPruned: number;
  refreshTokensPruned: number;
  sessionsPruned: number;
}

async function deleted(em: EntityManager, sql: string, params: unknown[]): Promise<number> {
  const rows = await em.execute<Array<{ n: string | number }>>(`with gone as (${sql} returning 1) select count(*) as n from gone`, params);
  return Number(rows[0]?.n ?? 0);
}

/**
 * Sign-in records past their use (run by the periodic sweep): OAuth states and one-time codes and
 * emailed challenges once expired (a used one is useless too, and expires within minutes anyway);
 * refresh tokens and sessions a day after they expired (a session's tokens go with it).
 */
export async function pruneSignInRecords(em: EntityManager, now: Date): Promise<AuthPruned> {
  const longAgo = new Date(now.getTime() - EXPIRED_SESSION_GRACE_MS);
  return {
    oauthStatesPruned: await deleted(em, `delete from oauth_states where expires_at < ?`, [now]),
    oauthCodesPruned: await deleted(em, `delete from oauth_codes where expires_at < ?`, [now]),
    signInChallengesPruned: await deleted(em, `delete from sign_in_challenges where expires_at < ?`, [now]),
    refreshTokensPruned: await deleted(em, `delete from refresh_tokens where expires_at < ?`, [longAgo]),
    sessionsPruned: await deleted(em, `delete from sessions where expires_at < ?`, [longAgo]),
  };
}
