import { createHash } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import { sql, type Queryable } from './sql';
import { LockMode } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import { ApiKeySchema, WorkspaceSchema, type ApiKey, type ApiKeyKind } from '../db/entities';
import { MAX_API_KEYS_PER_WORKSPACE, RATE_LIMIT_WINDOW_SECONDS, type PlanName } from '../config/plans';
import { AppError, notFound } from './errors';
import { budgetKey, budgetKeySql, callBudgetLimits, RATE_LIMIT_TABLE, type BudgetScope, type RateBudget } from './rate-limits';
import { BudgetLeases, type Claimed } from './budget-leases';
import { rateBudgetStatements } from './metrics';
import { newId, randomBase62 } from './ids';

/** Key prefixes of the contract; `ssk-` keys (issued before September 2026) are no longer recognised. */
export const KEY_PREFIXES: Record<ApiKeyKind, string> = {
  api: 'sk-svc-api-',
  admin: 'sk-svc-admin-',
};
const SECRET_BODY_LENGTH = 32; // base62: ≈ 190 bits of entropy
const DAY_MS = 86_400_000;

export type KeyStatus = 'active' | 'ending' | 'revoked' | 'expired';

export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret, 'utf8').digest('hex');
}

/** The kind a presented secret claims by its prefix, or null when it is not one of ours. */
export function kindOfSecret(secret: string): ApiKeyKind | null {
  if (secret.startsWith(KEY_PREFIXES.admin)) return 'admin';
  if (secret.startsWith(KEY_PREFIXES.api)) return 'api';
  return null;
}

export function looksLikeApiKey(token: string): boolean {
  return token.startsWith('sk-') || token.startsWith('ssk-');
}

interface NewSecret {
  secret: string;
  secretHash: string;
  displayPrefix: string;
  lastFour: string;
}

function generateSecret(kind: ApiKeyKind): NewSecret {
  const body = randomBase62(SECRET_BODY_LENGTH);
  const secret = `${KEY_PREFIXES[kind]}${body}`;
  return { secret, secretHash: hashSecret(secret), displayPrefix: `${KEY_PREFIXES[kind]}${body.slice(0, 4)}`, lastFour: body.slice(-4) };
}

export function keyStatus(key: Pick<ApiKey, 'expiresAt' | 'endsAt' | 'revokedAt'>, now: Date): KeyStatus {
  if (key.revokedAt && key.revokedAt <= now) return 'revoked';
  if (key.expiresAt && key.expiresAt <= now) return 'expired';
  if (key.endsAt && key.endsAt <= now) return 'revoked';
  if (key.endsAt) return 'ending';
  return 'active';
}

export interface AuthenticatedKey {
  keyId: string;
  kind: ApiKeyKind;
  workspaceId: string;
  accountId: string;
  plan: PlanName;
}

const invalidKey = (detail: string): AppError => new AppError('API_KEY_INVALID', 401, detail);

interface KeyRow {
  id: string;
  kind: ApiKeyKind;
  workspace_id: string;
  account_id: string;
  plan: PlanName;
  // The driver hands timestamps over as text or Date depending on its type parsers.
  expires_at: Date | string | null;
  ends_at: Date | string | null;
  revoked_at: Date | string | null;
  account_deleted: boolean;
  usable: boolean;
}

interface ClaimRow extends KeyRow {
  // The counters after this statement's claims (null where it claimed nothing); bigint arrives as text.
  key_points: number | null;
  key_expire: string | null;
  workspace_points: number | null;
  workspace_expire: string | null;
}

const asDate = (value: Date | string | null): Date | null => (value === null ? null : new Date(value));

/**
 * The key behind a secret (a read): most calls spend budget points their process holds already. A key
 * of an account marked deleted is not usable, whether or not the deletion revoked it: a creation that
 * committed just after the deletion (authenticated just before it), or the operator CLI's create-key,
 * made a key the deletion never saw, and it worked until the erasure removed it.
 */
const KEY_SQL = `
  select k.id, k.kind, k.workspace_id, w.account_id, a.plan, k.expires_at, k.ends_at, k.revoked_at,
         a.deleted_at is not null as account_deleted,
         k.kind = $2 and (k.revoked_at is null or k.revoked_at > $3) and (k.expires_at is null or k.expires_at > $3)
           and (k.ends_at is null or k.ends_at > $3) and a.deleted_at is null as usable
    from api_keys k join workspaces w on w.id = k.workspace_id join accounts a on a.id = w.account_id
   where k.secret_hash = $1`;

/**
 * The key behind a secret and, when it may call, claims of $6 points on its own and $7 on its
 * workspace's budget (zero: no claim), in one statement. The counters are the fixed windows of
 * rate-limiter-flexible's PostgreSQL store, in its table and row format (rate-limits.ts), so web
 * sessions, counted by the library itself, share them. Only a key that may call claims: a revoked
 * key cannot spend its workspace's budget.
 */
const KEY_AND_CLAIMS_SQL = `
with k as (${KEY_SQL}
), counted as (
  insert into ${RATE_LIMIT_TABLE} as r (key, points, expire)
  select b.key, b.claim, $4::bigint + $5::bigint
    from k cross join lateral (values (${budgetKeySql('key', 'k.plan', 'k.id')}, $6::int), (${budgetKeySql('workspace', 'k.plan', 'k.workspace_id')}, $7::int)) as b(key, claim)
   where k.usable and b.claim > 0
  on conflict (key) do update set
    points = case when r.expire <= $4 then excluded.points else r.points + excluded.points end,
    expire = case when r.expire <= $4 then excluded.expire else r.expire end
  returning r.key, r.points, r.expire
)
select k.*, kc.points as key_points, kc.expire as key_expire, wc.points as workspace_points, wc.expire as workspace_expire
  from k
  left join counted kc on kc.key = ${budgetKeySql('key', 'k.plan', 'k.id')}
  left join counted wc on wc.key = ${budgetKeySql('workspace', 'k.plan', 'k.workspace_id')}`;

export interface AuthenticatedCall extends AuthenticatedKey {
  /** The tighter of the key's and the workspace's budgets after this call, and whether it was over. */
  budget: RateBudget;
  overBudget: BudgetScope | null;
}

const SCOPES: readonly BudgetScope[] = ['key', 'workspace'];

/** The two budget counters a key's calls are counted on (the row keys of rate_limits). */
function countersOf(row: Pick<KeyRow, 'id' | 'workspace_id' | 'plan'>): Record<BudgetScope, string> {
  return { key: budgetKey('key', row.plan, row.id), workspace: budgetKey('workspace', row.plan, row.workspace_id) };
}

/** A claim statement's answer for one scope, or null where it claimed nothing. */
function claimedIn(row: ClaimRow, scope: BudgetScope, claimed: number): Claimed | null {
  const points = scope === 'key' ? row.key_points : row.workspace_points;
  const expire = scope === 'key' ? row.key_expire : row.workspace_expire;
  return points === null || expire === null ? null : { claimed, points: Number(points), expireMs: Number(expire) };
}

/** This process's budget leases, and the counters each presented secret was last counted on. */
const processLeases = new BudgetLeases();
const countersOfSecret = new LRUCache<string, Record<BudgetScope, string>>({ max: 10_000 });

/** A key this process read as usable, and when: what a call whose charge checks the key needs of it. */
interface RecentKey {
  key: AuthenticatedKey;
  expiresAt: Date | null;
  endsAt: Date | null;
  readAtMs: number;
}

/**
 * How long a key read here stands in for the read of a paid call whose charge statement checks the key
 * again (deferredKeyCall). It bounds how stale the plan may be (the budgets and body limits it sets),
 * never a revocation, which the charge sees in its own statement.
 */
export const RECENT_KEY_MS = 10_000;
const recentKeys = new LRUCache<string, RecentKey>({ max: 10_000 });

/**
 * A call of a key this process read usable within RECENT_KEY_MS, counted on points in hand on both
 * budget leases, without any statement. The caller must have the key checked by the statement that
 * charges the call (charge-batch.ts) and, before any other answer, by confirmKey. Null when the key
 * was not read recently, has passed its expiry or end by its own dates, or a lease has no point in
 * hand: the call then authenticates with authenticateKey.
 */
export function deferredKeyCall(secret: string, now: Date, leases: BudgetLeases = processLeases): AuthenticatedCall | null {
  const secretHash = hashSecret(secret);
  const recent = recentKeys.get(secretHash);
  const nowMs = now.getTime();
  if (!recent || nowMs - recent.readAtMs > RECENT_KEY_MS || recent.key.kind !== kindOfSecret(secret)) return null;
  const status = keyStatus({ expiresAt: recent.expiresAt, endsAt: recent.endsAt, revokedAt: null }, now);
  if (status !== 'active' && status !== 'ending') return null;
  const counters = countersOf({ id: recent.key.keyId, workspace_id: recent.key.workspaceId, plan: recent.key.plan });
  if (!leases.take(counters.key, nowMs)) return null;
  if (!leases.take(counters.workspace, nowMs)) {
    leases.giveBack(counters.key, nowMs);
    return null;
  }
  const limits = callBudgetLimits(recent.key.plan);
  const key = leases.budget(counters.key, limits.key, nowMs);
  const workspace = leases.budget(counters.workspace, limits.workspace, nowMs);
  return { ...recent.key, budget: key.remaining <= workspace.remaining ? key : workspace, overBudget: null };
}

/** The 401 of a key that may not call now: revoked, ended, expired, or not of the kind its prefix claims. */
function refusal(row: KeyRow | undefined, claimedKind: ApiKeyKind, now: Date): AppError | null {
  if (!row || row.kind !== claimedKind) return invalidKey('The API key is not recognised.');
  const status = keyStatus({ expiresAt: asDate(row.expires_at), endsAt: asDate(row.ends_at), revokedAt: asDate(row.revoked_at) }, now);
  if (status === 'revoked' || row.account_deleted) return invalidKey('The API key has been revoked.');
  if (status === 'expired') return invalidKey('The API key has expired.');
  if (!row.usable) return invalidKey('The API key is not recognised.');
  return null;
}

/**
 * Reads a key again without counting the call: for a call deferredKeyCall admitted, before any answer
 * its charge did not check. Throws the 401 authenticateKey would have thrown.
 */
export async function confirmKey(db: Queryable, secret: string, now: Date): Promise<void> {
  const claimedKind = kindOfSecret(secret);
  if (!claimedKind) throw invalidKey('The API key is not recognised.');
  const secretHash = hashSecret(secret);
  const [row] = await sql<KeyRow>(db, KEY_SQL, [secretHash, claimedKind, now]);
  const refused = refusal(row, claimedKind, now);
  if (refused) {
    recentKeys.delete(secretHash);
    throw refused;
  }
}

/**
 * Resolves a presented secret to its key and counts the call. Unknown, legacy (`ssk-`), revoked,
 * ended and expired keys all answer 401 API_KEY_INVALID; the reason is in the detail, never which
 * workspace it belonged to. The key is read on every call, so a revoked key is refused at once; the
 * call is counted on this process's budget leases (budget-leases.ts), which claim points from the
 * shared counters in the same statement when they run out. A call over budget is the caller's to
 * refuse (429 RATE_LIMITED) after the route's own credential checks.
 */
export async function authenticateKey(db: Queryable, secret: string, now: Date, leases: BudgetLeases = processLeases): Promise<AuthenticatedCall> {
  const claimedKind = kindOfSecret(secret);
  if (!claimedKind) throw invalidKey('The API key is not recognised.');
  const nowMs = now.getTime();
  const secretHash = hashSecret(secret);
  const statement = (claims: Record<BudgetScope, number>): Promise<ClaimRow[]> => {
    const read = claims.key + claims.workspace === 0;
    rateBudgetStatements.inc({ statement: read ? 'read' : 'claim' });
    return read
      ? sql<ClaimRow>(db, KEY_SQL, [secretHash, claimedKind, now])
      : sql<ClaimRow>(db, KEY_AND_CLAIMS_SQL, [secretHash, claimedKind, now, nowMs, RATE_LIMIT_WINDOW_SECONDS * 1000, claims.key, claims.workspace]);
  };
  // A point is taken from the lease of each counter this secret was counted on before, ahead of the
  // statement, so that concurrent calls cannot spend it meanwhile; it is given back if the key turns
  // out not to be usable or to be counted elsewhere now (its plan changed).
  const hinted = countersOfSecret.get(secretHash);
  const taken: Record<BudgetScope, string | null> = { key: null, workspace: null };
  const claims: Record<BudgetScope, number> = { key: 1, workspace: 1 };
  for (const scope of SCOPES) {
    if (hinted && leases.take(hinted[scope], nowMs)) taken[scope] = hinted[scope];
    claims[scope] = taken[scope] ? 0 : hinted ? leases.claimSize(hinted[scope], nowMs) : 1;
  }
  const giveBack = (scope: BudgetScope): void => {
    const counter = taken[scope];
    if (counter) leases.giveBack(counter, nowMs);
    taken[scope] = null;
  };
  let rows: ClaimRow[];
  try {
    rows = await statement(claims);
  } catch (err) {
    SCOPES.forEach(giveBack);
    throw err;
  }
  const row = rows[0];
  if (!row || row.kind !== claimedKind || !row.usable) SCOPES.forEach(giveBack);
  const refused = refusal(row, claimedKind, now);
  if (refused || !row) {
    recentKeys.delete(secretHash);
    throw refused ?? invalidKey('The API key is not recognised.');
  }
  recentKeys.set(secretHash, {
    key: { keyId: row.id, kind: row.kind, workspaceId: row.workspace_id, accountId: row.account_id, plan: row.plan },
    expiresAt: asDate(row.expires_at),
    endsAt: asDate(row.ends_at),
    readAtMs: nowMs,
  });
  const counters = countersOf(row);
  // The read above already refreshed the entry's recency; it is written only when new or moved.
  if (!hinted || hinted.key !== counters.key || hinted.workspace !== counters.workspace) countersOfSecret.set(secretHash, counters);
  const answers: Record<BudgetScope, Claimed | null> = { key: claimedIn(row, 'key', claims.key), workspace: claimedIn(row, 'workspace', claims.workspace) };
  // Points taken on counters this key is no longer counted on are claimed again on its own.
  const again: Record<BudgetScope, number> = { key: 0, workspace: 0 };
  for (const scope of SCOPES) {
    if (taken[scope] && taken[scope] !== counters[scope]) {
      giveBack(scope);
      again[scope] = leases.claimSize(counters[scope], nowMs);
    }
  }
  if (again.key + again.workspace > 0) {
    const second = (await statement(again))[0];
    if (!second || !second.usable || second.id !== row.id) throw invalidKey('The API key is not recognised.');
    for (const scope of SCOPES) if (again[scope] > 0) answers[scope] = claimedIn(second, scope, again[scope]);
  }
  const limits = callBudgetLimits(row.plan);
  const admitted = (scope: BudgetScope): boolean => {
    if (taken[scope]) return true;
    const answer = answers[scope];
    return answer !== null && leases.settle(counters[scope], limits[scope], answer, nowMs);
  };
  // Both are settled: a call over one budget is still counted on the other, as the library counts.
  const admittedKey = admitted('key');
  const admittedWorkspace = admitted('workspace');
  const overBudget = !admittedKey ? 'key' : !admittedWorkspace ? 'workspace' : null;
  const key = leases.budget(counters.key, limits.key, nowMs);
  const workspace = leases.budget(counters.workspace, limits.workspace, nowMs);
  return {
    keyId: row.id,
    kind: row.kind,
    workspaceId: row.workspace_id,
    accountId: row.account_id,
    plan: row.plan,
    budget: key.remaining <= workspace.remaining ? key : workspace,
    overBudget,
  };
}

/** When this process last recorded each key's use: most calls then need no statement at all. */
const lastTouched = new LRUCache<string, number>({ max: 10_000 });

/** Records use, at most once per `resolutionSeconds`, so that authentication is not a write per call. */
export async function touchKey(db: Queryable, keyId: string, now: Date, resolutionSeconds: number): Promise<void> {
  const previous = lastTouched.get(keyId);
  if (previous !== undefined && now.getTime() - previous < resolutionSeconds * 1000) return;
  lastTouched.set(keyId, now.getTime());
  const threshold = new Date(now.getTime() - resolutionSeconds * 1000);
  await sql(db, `update api_keys set last_used_at = $1 where id = $2 and (last_used_at is null or last_used_at < $3)`, [now, keyId, threshold]);
}

export async function listKeys(
  em: EntityManager,
  workspaceId: string,
  page: { limit: number; offset: number },
): Promise<{ items: ApiKey[]; total: number }> {
  const [items, total] = await em.findAndCount(
    ApiKeySchema,
    { workspace: workspaceId },
    { orderBy: { createdAt: 'desc', id: 'desc' }, limit: page.limit, offset: page.offset },
  );
  return { items, total };
}

export async function getKey(em: EntityManager, workspaceId: string, keyId: string): Promise<ApiKey> {
  const key = await em.findOne(ApiKeySchema, { id: keyId, workspace: workspaceId });
  if (!key) throw notFound('The API key');
  return key;
}

export interface CreatedKey {
  key: ApiKey;
  secret: string;
}

export async function createKey(
  em: EntityManager,
  workspaceId: string,
  input: { name: string; kind: ApiKeyKind; expiresAt: Date | null; rotatedFrom?: ApiKey; rotatedByKeyId?: string | null },
): Promise<CreatedKey> {
  const generated = generateSecret(input.kind);
  const key = em.create(ApiKeySchema, {
    id: newId('apiKey'),
    workspace: em.getReference(WorkspaceSchema, workspaceId),
    kind: input.kind,
    name: input.name,
    secretHash: generated.secretHash,
    displayPrefix: generated.displayPrefix,
    lastFour: generated.lastFour,
    createdAt: new Date(),
    lastUsedAt: null,
    expiresAt: input.expiresAt,
    endsAt: null,
    revokedAt: null,
    revokeReason: null,
    rotatedFrom: input.rotatedFrom ?? null,
    rotatedByKeyId: input.rotatedByKeyId ?? null,
    rotatedAt: null,
  });
  await em.flush();
  return { key, secret: generated.secret };
}

/** DELETE: revokes at once. Revoking an already revoked key changes nothing (idempotent 204). */
export async function revokeKey(em: EntityManager, workspaceId: string, keyId: string, now: Date): Promise<void> {
  await getKey(em, workspaceId, keyId);
  await em.nativeUpdate(
    ApiKeySchema,
    { id: keyId, workspace: workspaceId, revokedAt: null },
    { revokedAt: now, revokeReason: 'deleted' },
  );
}

export interface RotationResult {
  created: CreatedKey;
  old: ApiKey;
  graceMs: number;
}

/**
 * Creates the twin key and ends the old one, in one transaction. The conditional update makes two
 * concurrent rotations of the same key end in one success and one 409, never two twins.
 */
export async function rotateKey(
  em: EntityManager,
  caller: { workspaceId: string; keyId: string | null },
  keyId: string,
  graceDays: number,
  now: Date,
): Promise<RotationResult> {
  const { workspaceId } = caller;
  return em.transactional(async (tx) => {
    const old = await getKey(tx, workspaceId, keyId);
    // A rotation makes a key of the old one's kind. An administration key rotates itself (automated
    // rotation) and the twin of a rotation it made itself (the way out when that rotation's answer was
    // lost), but no other administration key: another one took the owner's over with grace_days 0, its
    // twin's secret shown only to the caller, where creating one is refused (a twentieth probe), and an
    // old key in its grace took over the twin its owner had made from a web session (a twenty-second).
    const ownTwin = old.rotatedFrom?.id === caller.keyId && old.rotatedByKeyId === caller.keyId;
    if (old.kind === 'admin' && caller.keyId !== null && old.id !== caller.keyId && !ownTwin) {
      throw new AppError('WEB_SESSION_REQUIRED', 403, 'An administration key rotates itself and its own twin only; other administration keys are rotated from a web session.');
    }
    if (keyStatus(old, now) !== 'active' || old.rotatedAt) {
      throw new AppError('KEY_NOT_ACTIVE', 409, 'Only an active key can be rotated; this one is already ending or revoked.');
    }
    // With a grace the old key keeps working beside its twin until `ends_at`: one more live key, so it
    // counts like a creation (an eighth probe rotated each new twin again with 90 days of grace and
    // held 123 live keys, without end, past the limit of 100). With grace_days 0 the twin replaces
    // the key and is always allowed (the way out of a leaked key, or of a twin whose secret was lost).
    if (graceDays > 0) await refuseBeyondLiveKeyLimit(tx, workspaceId, now, 'rotate with grace_days 0 (the old key stops at once) or revoke a key first.');
    const graceMs = graceDays * DAY_MS;
    const endsAt = graceDays === 0 ? null : new Date(now.getTime() + graceMs);
    const revokedAt = graceDays === 0 ? now : null;
    const claimed = await tx.nativeUpdate(
      ApiKeySchema,
      { id: keyId, workspace: workspaceId, rotatedAt: null, revokedAt: null },
      { rotatedAt: now, endsAt, revokedAt, revokeReason: graceDays === 0 ? 'rotated' : null },
    );
    if (claimed !== 1) {
      throw new AppError('KEY_NOT_ACTIVE', 409, 'Only an active key can be rotated; this one is already ending or revoked.');
    }
    const created = await createKey(tx, workspaceId, {
      name: old.name,
      kind: old.kind,
      expiresAt: old.expiresAt,
      rotatedFrom: old,
      rotatedByKeyId: caller.keyId,
    });
    await tx.refresh(old);
    return { created, old, graceMs };
  });
}

/** End of a rotation grace (keyGraceExpiry workflow): idempotent, a second call changes nothing. */
export async function revokeEndedKey(em: EntityManager, keyId: string, now: Date): Promise<boolean> {
  const changed = await em.nativeUpdate(
    ApiKeySchema,
    { id: keyId, revokedAt: null, endsAt: { $ne: null } },
    { revokedAt: now, revokeReason: 'rotated' },
  );
  return changed > 0;
}

/**
 * Scheduled sweep: marks keys past `expires_at` (they already stop working at that instant, the mark
 * is for listings and audits) and ended rotations whose grace workflow could not run.
 */
export async function sweepEndedKeys(em: EntityManager, now: Date): Promise<{ expired: number; ended: number }> {
  const expired = await em.nativeUpdate(
    ApiKeySchema,
    { revokedAt: null, expiresAt: { $lte: now } },
    { revokedAt: now, revokeReason: 'expired' },
  );
  const ended = await em.nativeUpdate(
    ApiKeySchema,
    { revokedAt: null, endsAt: { $lte: now } },
    { revokedAt: now, revokeReason: 'rotated' },
  );
  return { expired, ended };
}

/**
 * 409 TOO_MANY_API_KEYS when the workspace already holds MAX_API_KEYS_PER_WORKSPACE live keys (not
 * revoked, not expired, not past a rotation's grace). Counted under the workspace's row lock, so
 * concurrent creations and rotations see each other.
 */
async function refuseBeyondLiveKeyLimit(tx: EntityManager, workspaceId: string, now: Date, advice: string): Promise<void> {
  await tx.findOneOrFail(WorkspaceSchema, { id: workspaceId }, { lockMode: LockMode.PESSIMISTIC_WRITE });
  const live = await tx.count(ApiKeySchema, {
    workspace: workspaceId,
    revokedAt: null,
    $and: [{ $or: [{ expiresAt: null }, { expiresAt: { $gt: now } }] }, { $or: [{ endsAt: null }, { endsAt: { $gt: now } }] }],
  });
  if (live >= MAX_API_KEYS_PER_WORKSPACE) {
    throw new AppError('TOO_MANY_API_KEYS', 409, `A workspace has at most ${MAX_API_KEYS_PER_WORKSPACE} live API keys; ${advice}`, { limit: MAX_API_KEYS_PER_WORKSPACE });
  }
}

/**
 * Issues a key for a workspace on a caller's request: an administration key only from a web session
 * (403 WEB_SESSION_REQUIRED for a key caller), an expiry only in the future.
 */
export async function issueKey(
  em: EntityManager,
  caller: { workspaceId: string; viaApiKey: boolean },
  input: { name: string; kind: ApiKeyKind; expiresAt: Date | null },
  now: Date,
): Promise<CreatedKey> {
  if (input.kind === 'admin' && caller.viaApiKey) {
    throw new AppError('WEB_SESSION_REQUIRED', 403, 'An administration key can only be created from a web session.');
  }
  if (input.expiresAt && input.expiresAt <= now) throw new AppError('VALIDATION_ERROR', 400, 'Invalid body.expires_at: it must be in the future.');
  // Counted under the workspace's row lock, so concurrent creations see each other.
  return em.transactional(async (tx) => {
    await refuseBeyondLiveKeyLimit(tx, caller.workspaceId, now, 'revoke one first.');
    return createKey(tx, caller.workspaceId, input);
  });
}

/**
 * Rotates a key and starts the durable timer of its grace (`key-grace/<key>`). The grace also ends by
 * `ends_at` in the sweep, so a call that dies between the two steps still ends the old key in time.
 */
export async function rotateKeyWithGrace(
  em: EntityManager,
  temporal: { startKeyGrace(keyId: string, graceMs: number): Promise<void> },
  /** `keyId`: the API key making the call (null for a web session). */
  caller: { workspaceId: string; keyId: string | null },
  keyId: string,
  graceDays: number,
  now: Date,
): Promise<RotationResult> {
  const rotation = await rotateKey(em, caller, keyId, graceDays, now);
  if (rotation.graceMs > 0) await temporal.startKeyGrace(rotation.old.id, rotation.graceMs);
  return rotation;
}
