import type { EntityManager } from '@mikro-orm/postgresql';
import { MAX_WORKSPACES_PER_ACCOUNT } from '../config/plans';
import { WorkspaceSchema, type Workspace } from '../db/entities';
import { AppError, notFound } from './errors';
import { newId } from './ids';

/** The account's workspaces, oldest first (the first is the default of a web session). */
export async function listWorkspaces(em: EntityManager, accountId: string): Promise<Workspace[]> {
  return em.find(WorkspaceSchema, { account: accountId }, { orderBy: { createdAt: 'asc', id: 'asc' } });
}

/** One workspace of the account; another account's answers 404 like an unknown one. */
export async function getWorkspace(em: EntityManager, accountId: string, workspaceId: string): Promise<Workspace> {
  const workspace = await em.findOne(WorkspaceSchema, { id: workspaceId, account: accountId });
  if (!workspace) throw notFound(`Workspace ${workspaceId}`);
  return workspace;
}

export async function createWorkspace(em: EntityManager, accountId: string, name: string): Promise<Workspace> {
  return em.transactional(async (tx) => {
    // Serialises creations of one account so that two at once cannot pass the limit together.
    await tx.execute(`select id from accounts where id = ? for update`, [accountId]);
    const count = await tx.count(WorkspaceSchema, { account: accountId });
    if (count >= MAX_WORKSPACES_PER_ACCOUNT) {
      throw new AppError('TOO_MANY_WORKSPACES', 409, `An account holds at most ${MAX_WORKSPACES_PER_ACCOUNT} workspaces.`);
    }
    const now = new Date();
    const workspace = tx.create(WorkspaceSchema, { id: newId('workspace'), account: accountId, name, createdAt: now, updatedAt: now });
    await tx.flush();
    return workspace;
  });
}

export async function renameWorkspace(em: EntityManager, accountId: string, workspaceId: string, name: string): Promise<Workspace> {
  const workspace = await getWorkspace(em, accountId, workspaceId);
  workspace.name = name;
  await em.flush();
  return workspace;
}
