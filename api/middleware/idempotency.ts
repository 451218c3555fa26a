import type { Context } from 'koa';
import type { MikroORM } from '@mikro-orm/postgresql';
import { AppError } from '../../services/errors';
import {
  claimIdempotencyKey,
  completeIdempotencyKey,
  releaseIdempotencyKey,
  requestFingerprint,
  type StoredResponse,
} from '../../services/idempotency';
import type { UploadedFile } from './body';

export const REMAINING_HEADER = 'X-Service-Predictions-Remaining';
const REPLAYED_HEADERS = ['content-type', REMAINING_HEADER.toLowerCase()];

function serialiseBody(body: unknown): string | null {
  if (body === undefined || body === null) return null;
  if (typeof body === 'string') return body;
  if (Buffer.isBuffer(body)) return body.toString('utf8');
  return JSON.stringify(body);
}

function replay(ctx: Context, stored: StoredResponse): void {
  ctx.status = stored.status;
  for (const [name, value] of Object.entries(stored.headers)) ctx.set(name, value);
  const contentType = stored.headers['content-type'] ?? '';
  ctx.body = stored.body === null ? null : contentType.includes('json') ? (JSON.parse(stored.body) as unknown) : stored.body;
  if (stored.headers['content-type']) ctx.type = stored.headers['content-type'];
  ctx.set('Idempotent-Replayed', 'true');
}

/**
 * Runs `handle` at most once per (workspace, Idempotency-Key): a retry with the same content gets the
 * stored status, body and remaining-credits header, and is charged nothing.
 */
export async function withIdempotency(
  ctx: Context,
  deps: { orm: MikroORM },
  workspaceId: string,
  upload: UploadedFile | null,
  handle: () => Promise<void>,
): Promise<void> {
  const key = ctx.get('idempotency-key');
  if (!key) return handle();
  if (key.length > 255 || !/^[\x21-\x7e]+$/.test(key)) {
    throw new AppError('VALIDATION_ERROR', 400, 'Idempotency-Key must be 1 to 255 visible ASCII characters.');
  }
  const em = deps.orm.em.fork();
  const fingerprint = requestFingerprint({ method: ctx.method, path: ctx.path, body: ctx.request.body ?? null, file: upload?.content ?? null });
  const claim = await claimIdempotencyKey(em, workspaceId, key, fingerprint);
  if (claim.kind === 'replay') return replay(ctx, claim.response);
  try {
    await handle();
  } catch (err) {
    const status = (err as { status?: number }).status;
    if (err instanceof AppError && status !== undefined && status < 500) {
      await completeIdempotencyKey(em, workspaceId, key, {
        status,
        body: JSON.stringify({ status: 'error', message: err.code, messageDetail: err.detail, ...err.extra }),
        headers: { 'content-type': 'application/json; charset=utf-8' },
      });
    } else {
      await releaseIdempotencyKey(em, workspaceId, key);
    }
    throw err;
  }
  if (ctx.status >= 500) return releaseIdempotencyKey(em, workspaceId, key);
  const headers: Record<string, string> = {};
  for (const name of REPLAYED_HEADERS) {
    const value = ctx.response.get(name);
    if (value) headers[name] = String(value);
  }
  await completeIdempotencyKey(em, workspaceId, key, { status: ctx.status, body: serialiseBody(ctx.body), headers });
}
