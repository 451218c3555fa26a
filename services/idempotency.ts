import { createHash, randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { IDEMPOTENCY_TTL_HOURS } from '../config/plans';
import { AppError } from './errors';

export interface StoredResponse {
  status: number;
  body: string | null;
  headers: Record<string, string>;
}

/** `held` is this call's claim: renewal, completion and release act on it only. */
export type ClaimResult = { kind: 'claimed'; held: HeldClaim } | { kind: 'replay'; response: StoredResponse };

/**
 * The value with every object's members in the order of their names (code units), arrays as they are:
 * JSON objects are unordered (RFC 8259), so a retry whose client rebuilt the body with its members in
 * another order (a hash map's iteration order, as Rust's changes from one map to the next) is the same
 * call. Objects already in order are kept as they are (no copy); rows, which share their names, reuse
 * the order found for the previous object. A member named `__proto__` stays a member of the copy.
 */
function canonical(value: unknown, last: { names: string[]; order: number[] } = { names: [], order: [] }): unknown {
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) {
    let copy: unknown[] | null = null;
    for (let i = 0; i < value.length; i += 1) {
      const item = canonical(value[i], last);
      if (item !== value[i]) (copy ??= value.slice())[i] = item;
    }
    return copy ?? value;
  }
  const object = value as Record<string, unknown>;
  const names = Object.keys(object);
  let members: unknown[] | null = null;
  for (let i = 0; i < names.length; i += 1) {
    const member = object[names[i]!];
    if (member === null || typeof member !== 'object') continue;
    const canon = canonical(member, last);
    if (canon !== member) (members ??= names.map((name) => object[name]))[i] = canon;
  }
  let order = last.order;
  let same = names.length === last.names.length;
  for (let i = 0; same && i < names.length; i += 1) same = names[i] === last.names[i];
  if (!same) {
    order = names.map((_, i) => i).sort((a, b) => (names[a]! < names[b]! ? -1 : names[a]! > names[b]! ? 1 : 0));
    last.names = names;
    last.order = order;
  }
  let inOrder = true;
  for (let i = 0; inOrder && i < order.length; i += 1) inOrder = order[i] === i;
  if (!members && inOrder) return value;
  const copy: Record<string, unknown> = {};
  for (const i of order) {
    const member = members ? members[i] : object[names[i]!];
    if (names[i] === '__proto__') Object.defineProperty(copy, '__proto__', { value: member, enumerable: true, writable: true, configurable: true });
    else copy[names[i]!] = member;
  }
  return copy;
}

/** `principal`: the credential the call is bound to, when only that one may have its answer replayed. */
export function requestFingerprint(parts: { method: string; path: string; body: unknown; file?: Buffer | null; principal?: string }): string {
  const hash = createHash('sha256');
  hash.update(`${parts.method.toUpperCase()} ${parts.path}\n`);
  if (parts.principal !== undefined) hash.update(`principal ${parts.principal}\n`);
  hash.update(JSON.stringify(canonical(parts.body ?? null)));
  if (parts.file) hash.update(parts.file);
  return hash.digest('hex');
}

interface RecordRow {
  request_hash: string;
  state: 'in_progress' | 'completed';
  response_status: number | null;
  response_body: string | null;
  response_headers: Record<string, string> | null;
  claimed: boolean;
}

/**
 * One statement claims the key: a new key, an expired record (older than 24 h) or an in-progress
 * claim whose lease ended (its call died, or stalled) is taken with a fresh lease and this call's
 * claim id; otherwise the existing record is returned untouched.
 */
const CLAIM_SQL = `
insert into idempotency_records as r (workspace_id, key, request_hash, state, created_at, expires_at, lease_until, claim_id)
values (?, ?, ?, 'in_progress', now(), now() + make_interval(hours => ?), now() + make_interval(secs => ?), ?)
on conflict (workspace_id, key) do update
   set request_hash = excluded.request_hash, state = 'in_progress', response_status = null, response_body = null,
       response_headers = null, created_at = excluded.created_at, expires_at = excluded.expires_at, lease_until = excluded.lease_until,
       claim_id = excluded.claim_id
 where r.expires_at <= now()
    or (r.state = 'in_progress' and r.lease_until <= now() and r.request_hash = excluded.request_hash)
returning request_hash, state, response_status, response_body, response_headers, true as claimed`;

/**
 * Claims an Idempotency-Key for a call, atomically. A completed call with the same content is
 * replayed; other content is 422 IDEMPOTENCY_KEY_REUSED; a call still running (its lease renewed) is
 * 409 REQUEST_IN_PROGRESS. A call that died mid-way stops renewing its lease, and the next retry with
 * the same content takes the key over.
 */
export async function claimIdempotencyKey(
  em: EntityManager,
  claim: { workspaceId: string; key: string; fingerprint: string; leaseSeconds: number },
): Promise<ClaimResult> {
  const connection = em.getConnection();
  const claimId = randomUUID();
  const taken = await connection.execute<RecordRow[]>(CLAIM_SQL, [claim.workspaceId, claim.key, claim.fingerprint, IDEMPOTENCY_TTL_HOURS, claim.leaseSeconds, claimId]);
  if (taken.length === 1) return { kind: 'claimed', held: { workspaceId: claim.workspaceId, key: claim.key, claimId } };
  const [existing] = await connection.execute<RecordRow[]>(
    `select request_hash, state, response_status, response_body, response_headers, false as claimed from idempotency_records where workspace_id = ? and key = ?`,
    [claim.workspaceId, claim.key],
  );
  if (!existing) return claimIdempotencyKey(em, claim); // released meanwhile
  if (existing.request_hash !== claim.fingerprint) {
    throw new AppError('IDEMPOTENCY_KEY_REUSED', 422, 'This Idempotency-Key was already used for a different request; use a new key per logical call.');
  }
  if (existing.state !== 'completed' || existing.response_status === null) {
    throw new AppError('REQUEST_IN_PROGRESS', 409, 'The first call with this Idempotency-Key has not answered yet; retry later with the same key.');
  }
  return { kind: 'replay', response: { status: existing.response_status, body: existing.response_body, headers: existing.response_headers ?? {} } };
}

/** Keeps a running call's claim alive; called periodically while it runs. */
export async function renewIdempotencyLease(em: EntityManager, claim: HeldClaim, leaseSeconds: number): Promise<void> {
  await em
    .getConnection()
    .execute(`update idempotency_records set lease_until = now() + make_interval(secs => ?) where workspace_id = ? and key = ? and claim_id = ? and state = 'in_progress'`, [
      leaseSeconds,
      claim.workspaceId,
      claim.key,
      claim.claimId,
    ]);
}

/**
 * The answer of a call that outlived its key's lease while a retry with the same key took it over:
 * nothing of this call is kept or charged, and the same key gets the retry's answer.
 */
export const keyTakenOver = (): AppError =>
  new AppError('CALL_EXPIRED', 503, 'The call took longer than its Idempotency-Key could be held and a retry with the same key took it over; nothing was charged for this call. Retry with the same key for that answer.');

/** A key as claimed by one call. */
export interface HeldClaim {
  workspaceId: string;
  key: string;
  claimId: string;
}

/**
 * Stores the answer to replay; runs inside the transaction that settles the call's credits. False when
 * the call no longer holds the key (its lease ran out and a retry took it over): the caller must then
 * roll back, so that only the retry's answer is stored and charged.
 */
export async function completeIdempotencyKey(em: EntityManager, claim: HeldClaim, response: StoredResponse): Promise<boolean> {
  const rows = await em
    .getConnection()
    .execute<Array<{ key: string }>>(
      `update idempotency_records set state = 'completed', response_status = ?, response_body = ?, response_headers = ?::jsonb
        where workspace_id = ? and key = ? and claim_id = ? and state = 'in_progress' returning key`,
      [response.status, response.body, JSON.stringify(response.headers), claim.workspaceId, claim.key, claim.claimId],
      'all',
      em.getTransactionContext(),
    );
  return rows.length === 1;
}

/** A call that failed on our side (5xx) may be retried with the same key at once: forget its claim. */
export async function releaseIdempotencyKey(em: EntityManager, claim: HeldClaim): Promise<void> {
  await em
    .getConnection()
    .execute(`delete from idempotency_records where workspace_id = ? and key = ? and claim_id = ? and state = 'in_progress'`, [claim.workspaceId, claim.key, claim.claimId]);
}

export async function pruneIdempotencyRecords(em: EntityManager, now: Date): Promise<number> {
  const rows = await em.getConnection().execute<Array<{ n: number }>>(
    `with gone as (delete from idempotency_records where expires_at <= ? returning 1) select count(*)::int as n from gone`,
    [now],
  );
  return rows[0]?.n ?? 0;
}
