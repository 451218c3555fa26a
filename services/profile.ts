import type { EntityManager } from '@mikro-orm/postgresql';
import { AccountSchema, type Account, type Workspace } from '../db/entities';
import { currentPeriod, lockAccount } from './credits';
import { notFound } from './errors';
import { listWorkspaces } from './workspaces';

export interface Profile {
  account: Account;
  workspaces: Workspace[];
  identities: Array<{ provider: string; email: string | null; createdAt: Date }>;
}

/**
 * The account, its credits those of the current month: a month not opened yet (before the monthly
 * Schedule's run, or with the worker down past its catch-up window, until the account's next charge)
 * is opened first, as GET /v1/billing/subscription opens it. The profile showed the stored figures of
 * the month before: a nineteenth probe's account that had spent last month's allowance read 0 credits
 * left (the console's usage page) while the subscription route and any charge found 1,000.
 */
async function liveAccount(em: EntityManager, accountId: string): Promise<Account> {
  const account = await em.findOne(AccountSchema, { id: accountId, deletedAt: null });
  if (!account) throw notFound('The account');
  const now = new Date();
  if (account.allowancePeriod >= currentPeriod(now)) return account;
  await em.fork().transactional((tx) => lockAccount(tx, accountId, now));
  return em.findOneOrFail(AccountSchema, { id: accountId }, { refresh: true });
}

export async function profileOf(em: EntityManager, accountId: string): Promise<Profile> {
  const account = await liveAccount(em, accountId);
  const workspaces = await listWorkspaces(em, accountId);
  // Raw queries get timestamps back as text (the ORM leaves dates to its entity mapping).
  const identities = await em.execute<Array<{ provider: string; email: string | null; created_at: Date | string }>>(
    `select provider, email, created_at from oauth_identities where account_id = ? order by created_at`,
    [accountId],
  );
  return { account, workspaces, identities: identities.map((i) => ({ provider: i.provider, email: i.email, createdAt: new Date(i.created_at) })) };
}

export async function updateFullName(em: EntityManager, accountId: string, fullName: string): Promise<Profile> {
  const account = await liveAccount(em, accountId);
  account.fullName = fullName;
  await em.flush();
  return profileOf(em, accountId);
}
