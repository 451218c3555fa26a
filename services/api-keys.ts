import { createHash } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import { sql, type Queryable } from './sql';
import type { EntityManager } from '@mikro-orm/postgresql';
import { ApiKeySchema, WorkspaceSchema, type ApiKey, type ApiKeyKind } from '../db/entities';
import { RATE_LIMIT_WINDOW_SECONDS, type PlanName } from '../config/plans';
import { AppError, notFound } from './errors';
import { budgetKeySql, callBudgetLimits, countedBudget, RATE_LIMIT_TABLE, type RateBudget } from './rate-limits';
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
  // The call budgets counted with it (null when the key may not call); bigint arrives as text.
  key_points: number | null;
  key_expire: string | null;
  workspace_points: number | null;
  workspace_expire: string | null;
}

const asDate = (value: Date | string | null): Date | null => (value === null ? null : new Date(value));

/**
 * The key behind a secret and, when it may call, one more call counted against its own and its
 * workspace's budgets, in one statement (this runs on every call). The counters are the fixed
 * windows of rate-limiter-flexible's PostgreSQL store, in its table and row format (rate-limits.ts),
 * so web sessions, counted by the library itself, share them. Only a key that may call is counted:
 * a revoked key cannot spend its workspace's budget.
 */
const AUTHENTICATE_SQL = `
with k as (
  select k.id, k.kind, k.workspace_id, w.account_id, a.plan, k.expires_at, k.ends_at, k.revoked_at,
         k.kind = $2 and (k.revoked_at is null or k.revoked_at > $3) and (k.expires_at is null or k.expires_at > $3)
           and (k.ends_at is null or k.ends_at > $3) as usable
    from api_keys k join workspaces w on w.id = k.workspace_id join accounts a on a.id = w.account_id
   where k.secret_hash = $1
), counted as (
  insert into ${RATE_LIMIT_TABLE} as r (key, points, expire)
  select b.key, 1, $4::bigint + b.window_ms
    from k cross join lateral (values (${budgetKeySql('key', 'k.plan', 'k.id')}, $5::bigint), (${budgetKeySql('workspace', 'k.plan', 'k.workspace_id')}, $5::bigint)) as b(key, window_ms)
   where k.usable
  on conflict (key) do update set
    points = case when r.expire <= $4 then 1 else r.points + 1 end,
    expire = case when r.expire <= $4 then excluded.expire else r.expire end
  returning r.key, r.points, r.expire
)
select k.id, k.kind, k.workspace_id, k.account_id, k.plan, k.expires_at, k.ends_at, k.revoked_at,
       kc.points as key_points, kc.expire as key_expire, wc.points as workspace_points, wc.expire as workspace_expire
  from k
  left join counted kc on kc.key = ${budgetKeySql('key', 'k.plan', 'k.id')}
  left join counted wc on wc.key = ${budgetKeySql('workspace', 'k.plan', 'k.workspace_id')}`;

export interface AuthenticatedCall extends AuthenticatedKey {
  /** The tighter of the key's and the workspace's budgets after this call, and whether it was over. */
  budget: RateBudget;
  overBudget: 'key' | 'workspace' | null;
}

/**
 * Resolves a presented secret to its key and counts the call. Unknown, legacy (`ssk-`), revoked,
 * ended and expired keys all answer 401 API_KEY_INVALID; the reason is in the detail, never which
 * workspace it belonged to. A call over budget is the caller's to refuse (429 RATE_LIMITED) after
 * the route's own credential checks.
 */
export async function authenticateKey(db: Queryable, secret: string, now: Date): Promise<AuthenticatedCall> {
  const claimedKind = kindOfSecret(secret);
  if (!claimedKind) throw invalidKey('The API key is not recognised.');
  const nowMs = now.getTime();
  const rows = await sql<KeyRow>(db, AUTHENTICATE_SQL, [hashSecret(secret), claimedKind, now, nowMs, RATE_LIMIT_WINDOW_SECONDS * 1000]);
  const row = rows[0];
  if (!row || row.kind !== claimedKind) throw invalidKey('The API key is not recognised.');
  const status = keyStatus({ expiresAt: asDate(row.expires_at), endsAt: asDate(row.ends_at), revokedAt: asDate(row.revoked_at) }, now);
  if (status === 'revoked') throw invalidKey('The API key has been revoked.');
  if (status === 'expired') throw invalidKey('The API key has expired.');
  if (row.key_points === null || row.workspace_points === null) throw invalidKey('The API key is not recognised.');
  const limits = callBudgetLimits(row.plan);
  const key = countedBudget(row.key_points, Number(row.key_expire), limits.key, nowMs);
  const workspace = countedBudget(row.workspace_points, Number(row.workspace_expire), limits.workspace, nowMs);
  return {
    keyId: row.id,
    kind: row.kind,
    workspaceId: row.workspace_id,
    accountId: row.account_id,
    plan: row.plan,
    budget: key.remaining <= workspace.remaining ? key : workspace,
    overBudget: row.key_points > limits.key ? 'key' : row.workspace_points > limits.workspace ? 'workspace' : null,
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
  input: { name: string; kind: ApiKeyKind; expiresAt: Date | null; rotatedFrom?: ApiKey },
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
  workspaceId: string,
  keyId: string,
  graceDays: number,
  now: Date,
): Promise<RotationResult> {
  return em.transactional(async (tx) => {
    const old = await getKey(tx, workspaceId, keyId);
    if (keyStatus(old, now) !== 'active' || old.rotatedAt) {
      throw new AppError('KEY_NOT_ACTIVE', 409, 'Only an active key can be rotated; this one is already ending or revoked.');
    }
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
  return createKey(em, caller.workspaceId, input);
}

/**
 * Rotates a key and starts the durable timer of its grace (`key-grace/<key>`). The grace also ends by
 * `ends_at` in the sweep, so a call that dies between the two steps still ends the old key in time.
 */
export async function rotateKeyWithGrace(
  em: EntityManager,
  temporal: { startKeyGrace(keyId: string, graceMs: number): Promise<void> },
  workspaceId: string,
  keyId: string,
  graceDays: number,
  now: Date,
): Promise<RotationResult> {
  const rotation = await rotateKey(em, workspaceId, keyId, graceDays, now);
  if (rotation.graceMs > 0) await temporal.startKeyGrace(rotation.old.id, rotation.graceMs);
  return rotation;
}
