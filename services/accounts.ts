import type { EntityManager } from '@mikro-orm/postgresql';
import { z } from 'zod';
import { AccountSchema, CreditLedgerSchema, WorkspaceSchema, type Account, type Workspace } from '../db/entities';
import { PLAN_NAMES, PLANS, type PlanName } from '../config/plans';
import { currentPeriod } from './credits';
import { createKey } from './api-keys';
import { AppError, mapDatabaseError } from './errors';
import { newId } from './ids';

export const emailSchema = z.string().trim().toLowerCase().pipe(z.email());

export interface ProvisionedAccount {
  account: Account;
  workspace: Workspace;
  adminKey: string;
  apiKey: string;
}

/**
 * Creates an account with its first workspace, one admin key and one usage key (operator CLI and
 * tests; sign-up through the web comes with sessions). Secrets are returned once.
 */
export async function provisionAccount(
  em: EntityManager,
  input: { email: string; plan?: PlanName; workspaceName?: string; contractAllowance?: number },
): Promise<ProvisionedAccount> {
  const email = emailSchema.parse(input.email);
  const plan = input.plan ?? 'free';
  if (!PLAN_NAMES.includes(plan)) throw new AppError('VALIDATION_ERROR', 400, `Unknown plan ${plan}.`);
  try {
    return await em.transactional(async (tx) => {
      const now = new Date();
      const monthlyAllowance = PLANS[plan].monthlyAllowance ?? input.contractAllowance ?? 0;
      const account = tx.create(AccountSchema, {
        id: newId('account'),
        email,
        fullName: null,
        plan,
        monthlyAllowance,
        allowanceRemaining: monthlyAllowance,
        allowancePeriod: currentPeriod(now),
        purchasedBalance: 0,
        createdAt: now,
        updatedAt: now,
      });
      const workspace = tx.create(WorkspaceSchema, {
        id: newId('workspace'),
        account,
        name: input.workspaceName ?? 'Default workspace',
        createdAt: now,
        updatedAt: now,
      });
      tx.create(CreditLedgerSchema, {
        id: newId('event'),
        accountId: account.id,
        workspaceId: null,
        kind: 'allowance_reset',
        operation: 'monthly_allowance',
        allowanceDelta: monthlyAllowance,
        balanceDelta: 0,
        allowanceAfter: monthlyAllowance,
        balanceAfter: 0,
        reference: currentPeriod(now),
        createdAt: now,
      });
      await tx.flush();
      const admin = await createKey(tx, workspace.id, { name: 'Initial admin key', kind: 'admin', expiresAt: null });
      const api = await createKey(tx, workspace.id, { name: 'Initial API key', kind: 'api', expiresAt: null });
      return { account, workspace, adminKey: admin.secret, apiKey: api.secret };
    });
  } catch (err) {
    throw mapDatabaseError(err, {
      accounts_email_unique: new AppError('ACCOUNT_EXISTS', 409, 'An account already uses this address.'),
    });
  }
}
