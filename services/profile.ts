import type { EntityManager } from '@mikro-orm/postgresql';
import { AccountSchema, type Account, type Workspace } from '../db/entities';
import { notFound } from './errors';
import { listWorkspaces } from './workspaces';

export interface Profile {
  account: Account;
  workspaces: Workspace[];
  identities: Array<{ provider: string; email: string | null; createdAt: Date }>;
}

async function liveAccount(em: EntityManager, accountId: string): Promise<Account> {
  const account = await em.findOne(AccountSchema, { id: accountId, deletedAt: null });
  if (!account) throw notFound('The account');
  return account;
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
