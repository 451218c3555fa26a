import { createHash } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { IDEMPOTENCY_TTL_HOURS } from '../config/plans';
import { IdempotencyRecordSchema } from '../db/entities';
import { AppError } from './errors';

export interface StoredResponse {
  status: number;
  body: string | null;
  headers: Record<string, string>;
}

export type ClaimResult = { kind: 'claimed' } | { kind: 'replay'; response: StoredResponse };

export function requestFingerprint(parts: { method: string; path: string; body: unknown; file?: Buffer | null }): string {
  const hash = createHash('sha256');
  hash.update(`${parts.method.toUpperCase()} ${parts.path}\n`);
  hash.update(JSON.stringify(parts.body ?? null));
  if (parts.file) hash.update(parts.file);
  return hash.digest('hex');
}

/**
 * Claims an Idempotency-Key for a call, atomically (INSERT … ON CONFLICT DO NOTHING). A completed call
 * with the same content is replayed; other content is 422 IDEMPOTENCY_KEY_REUSED; a call still running
 * is 409 REQUEST_IN_PROGRESS. An expired record (older than 24 h) is replaced.
 */
export async function claimIdempotencyKey(em: EntityManager, workspaceId: string, key: string, fingerprint: string): Promise<ClaimResult> {
  const knex = em.getKnex();
  const now = new Date();
  const expiresAt = new Date(now.getTime() + IDEMPOTENCY_TTL_HOURS * 3_600_000);
  await knex('idempotency_records').where({ workspace_id: workspaceId, key }).andWhere('expires_at', '<=', now).delete();
  const inserted = await knex('idempotency_records')
    .insert({ workspace_id: workspaceId, key, request_hash: fingerprint, state: 'in_progress', created_at: now, expires_at: expiresAt })
    .onConflict(['workspace_id', 'key'])
    .ignore()
    .returning('key');
  if (inserted.length === 1) return { kind: 'claimed' };

  const existing = await em.fork().findOne(IdempotencyRecordSchema, { workspaceId, key });
  if (!existing) return claimIdempotencyKey(em, workspaceId, key, fingerprint); // expired and removed meanwhile
  if (existing.requestHash !== fingerprint) {
    throw new AppError('IDEMPOTENCY_KEY_REUSED', 422, 'This Idempotency-Key was already used for a different request; use a new key per logical call.');
  }
  if (existing.state !== 'completed' || existing.responseStatus === null) {
    throw new AppError('REQUEST_IN_PROGRESS', 409, 'The first call with this Idempotency-Key has not answered yet; retry later with the same key.');
  }
  return { kind: 'replay', response: { status: existing.responseStatus, body: existing.responseBody, headers: existing.responseHeaders ?? {} } };
}

export async function completeIdempotencyKey(em: EntityManager, workspaceId: string, key: string, response: StoredResponse): Promise<void> {
  await em
    .getKnex()('idempotency_records')
    .where({ workspace_id: workspaceId, key })
    .update({ state: 'completed', response_status: response.status, response_body: response.body, response_headers: JSON.stringify(response.headers) });
}

/** A call that failed on our side (5xx) may be retried with the same key: forget it. */
export async function releaseIdempotencyKey(em: EntityManager, workspaceId: string, key: string): Promise<void> {
  await em.getKnex()('idempotency_records').where({ workspace_id: workspaceId, key, state: 'in_progress' }).delete();
}

export async function pruneIdempotencyRecords(em: EntityManager, now: Date): Promise<number> {
  return em.getKnex()('idempotency_records').where('expires_at', '<=', now).delete();
}
