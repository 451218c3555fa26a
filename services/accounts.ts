import type { EntityManager } from '@mikro-orm/postgresql';
import { z } from 'zod';
import { AccountSchema, CreditLedgerSchema, WorkspaceSchema, type Account, type Workspace } from '../db/entities';
import { MAX_CONTRACT_ALLOWANCE, PLAN_NAMES, PLANS, type PlanName } from '../config/plans';
import { openingAllowance } from './closed-allowances';
import { currentPeriod } from './credits';
import { createKey } from './api-keys';
import { AppError, mapDatabaseError } from './errors';
import { newId } from './ids';
import { hashPassword } from './auth/secrets';
import { revokeAllSessions } from './auth/sessions';

export const emailSchema = z.string().trim().toLowerCase().pipe(z.email());

export interface ProvisionedAccount {
  account: Account;
  workspace: Workspace;
  adminKey: string;
  apiKey: string;
}

/** An account on `plan` with its first workspace and the allowance of the month in the ledger (no key). */
export async function createAccountWithWorkspace(
  tx: EntityManager,
  input: { email: string; plan: PlanName; workspaceName?: string; contractAllowance?: number; isStaff?: boolean; passwordHash?: string | null; fullName?: string | null },
  now: Date,
): Promise<{ account: Account; workspace: Workspace }> {
  const monthlyAllowance = PLANS[input.plan].monthlyAllowance ?? input.contractAllowance ?? 0;
  if (!Number.isInteger(monthlyAllowance) || monthlyAllowance < 0 || monthlyAllowance > MAX_CONTRACT_ALLOWANCE) {
    throw new RangeError(`a monthly allowance is a whole number from 0 to ${MAX_CONTRACT_ALLOWANCE}; got ${monthlyAllowance}`);
  }
  const opening = await openingAllowance(tx, input.email, monthlyAllowance, now);
  const account = tx.create(AccountSchema, {
    id: newId('account'),
    email: input.email,
    fullName: input.fullName ?? null,
    plan: input.plan,
    monthlyAllowance,
    allowanceRemaining: opening,
    allowancePeriod: currentPeriod(now),
    allowanceCeiling: monthlyAllowance,
    purchasedBalance: 0,
    isStaff: input.isStaff ?? false,
    passwordHash: input.passwordHash ?? null,
    deletedAt: null,
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
    allowanceDelta: opening,
    balanceDelta: 0,
    allowanceAfter: opening,
    balanceAfter: 0,
    reference: currentPeriod(now),
    createdAt: now,
  });
  await tx.flush();
  return { account, workspace };
}

export const accountExists = (): AppError => new AppError('ACCOUNT_EXISTS', 409, 'An account already uses this address.');

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
      const { account, workspace } = await createAccountWithWorkspace(tx, { ...input, email, plan }, new Date());
      const admin = await createKey(tx, workspace.id, { name: 'Initial admin key', kind: 'admin', expiresAt: null });
      const api = await createKey(tx, workspace.id, { name: 'Initial API key', kind: 'api', expiresAt: null });
      return { account, workspace, adminKey: admin.secret, apiKey: api.secret };
    });
  } catch (err) {
    throw mapDatabaseError(err, { accounts_email_unique: accountExists() });
  }
}

/**
 * A staff account (operator CLI): the address must be of a staff domain; the password is stored as
 * an scrypt hash. Running it again for an existing staff account sets a new password.
 */
export async function createStaffAccount(em: EntityManager, input: { email: string; password: string; staffDomains: string[] }): Promise<{ account: Account; created: boolean }> {
  const email = emailSchema.parse(input.email);
  if (!input.staffDomains.includes(email.slice(email.lastIndexOf('@') + 1))) {
    throw new AppError('VALIDATION_ERROR', 400, `${email} is not an address of STAFF_EMAIL_DOMAINS (${input.staffDomains.join(', ') || 'none set'}).`);
  }
  if (input.password.length < 12) throw new AppError('VALIDATION_ERROR', 400, 'A staff password has at least 12 characters.');
  const passwordHash = await hashPassword(input.password);
  return em.transactional(async (tx) => {
    const existing = await tx.findOne(AccountSchema, { email, deletedAt: null });
    if (existing) {
      if (!existing.isStaff) throw new AppError('ACCOUNT_EXISTS', 409, `${email} already has a non-staff account.`);
      existing.passwordHash = passwordHash;
      await tx.flush();
      // A new password is how an operator answers a password that leaked: what the old one opened ends
      // with it, every session (its access tokens at their next call, its refresh tokens) and a code
      // mailed after the old password's step. They all outlived the reset (a sixteenth probe).
      const now = new Date();
      await revokeAllSessions(tx, existing.id, now);
      await tx.execute(`update sign_in_challenges set closed_at = ? where email = ? and kind = 'staff_code' and closed_at is null`, [now, email]);
      return { account: existing, created: false };
    }
    const { account } = await createAccountWithWorkspace(tx, { email, plan: 'free', isStaff: true, passwordHash }, new Date());
    return { account, created: true };
  });
}
