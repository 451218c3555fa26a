import type { Context } from 'koa';
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { callExpired, releaseReservation, settleReservation, settleReservationAlone } from '../../services/credits';
import type { Queryable } from '../../services/sql';
import { AppError } from '../../services/errors';
import {
  claimIdempotencyKey,
  completeIdempotencyKey,
  keyTakenOver,
  releaseIdempotencyKey,
  renewIdempotencyLease,
  type HeldClaim,
  requestFingerprint,
  type StoredResponse,
} from '../../services/idempotency';
import type { SecretBox } from '../../services/webhooks/secrets';
import { idempotencyKeySchema } from '../schemas/common';
import type { UploadedFile } from './body';
import { envelopeOf, errorHeaders, REMAINING_HEADER } from './errors';

const REPLAYED_HEADERS = ['content-type', REMAINING_HEADER.toLowerCase()];

function serialiseBody(body: unknown): string | null {
  if (body === undefined || body === null) return null;
  if (typeof body === 'string') return body;
  if (Buffer.isBuffer(body)) return body.toString('utf8');
  return JSON.stringify(body);
}

/** How a route's answers are kept for replay: as sent (null), or sealed when they show a secret once. */
type AnswerStore = Pick<SecretBox, 'seal' | 'open'> | null;

function replay(ctx: Context, stored: StoredResponse, sealed: AnswerStore): void {
  ctx.status = stored.status;
  for (const [name, value] of Object.entries(stored.headers)) ctx.set(name, value);
  const contentType = stored.headers['content-type'] ?? '';
  const body = stored.body === null || !sealed ? stored.body : sealed.open(stored.body);
  ctx.body = body === null ? null : contentType.includes('json') ? (JSON.parse(body) as unknown) : body;
  if (stored.headers['content-type']) ctx.type = stored.headers['content-type'];
  ctx.set('Idempotent-Replayed', 'true');
}

function storedAnswer(ctx: Context, sealed: AnswerStore): StoredResponse {
  const headers: Record<string, string> = {};
  for (const name of REPLAYED_HEADERS) {
    const value = ctx.response.get(name);
    if (value) headers[name] = String(value);
  }
  const body = serialiseBody(ctx.body);
  return { status: ctx.status, body: body === null || !sealed ? body : sealed.seal(body), headers };
}

/** What a call writes in the transaction that settles its credits with its stored answer. */
export type WrittenWithAnswer = (tx: EntityManager) => Promise<void>;

/**
 * A paid route's handler names the credits it holds here, and what it writes with its answer (a
 * predict's rows): the answer settles them, and those writes commit with it or not at all.
 */
export function holdCredits(ctx: Context, reservationId: string | null, writeWithAnswer: WrittenWithAnswer | null = null): void {
  if (reservationId) ctx.state.reservationId = reservationId;
  if (writeWithAnswer) ctx.state.writeWithAnswer = writeWithAnswer;
}

/** Whether the call's answer is stored for replay (then it settles with that, not on its own). */
export const answersForReplay = (ctx: Context, idempotent: boolean): boolean => idempotent && ctx.get('idempotency-key') !== '';

export interface CommitDeps {
  orm: MikroORM;
  callPool: Queryable;
  idempotencyLeaseSeconds: number;
  /** Seals the stored answers of routes whose answer holds a secret shown once (`scope.secretAnswer`). */
  box: SecretBox;
}

/**
 * Runs a route's handler so that its answer and its credits go together:
 * - with an Idempotency-Key, the call runs at most once per (workspace, key) while its lease is
 *   renewed; a retry with the same content replays the stored answer and is charged nothing, and a
 *   retry after the first call died (its lease ran out) runs it again;
 * - the credits the handler reserved are settled in the same transaction that stores the answer for
 *   replay, before the answer is sent; a failed call releases them at once, a call whose process
 *   dies leaves them to the sweep.
 */
export async function runCommitted(
  ctx: Context,
  deps: CommitDeps,
  /**
   * `workspaceId`: whose keys these are (a workspace's, or an account's for account-level writes).
   * `path`: the route's path with its parameters (app.ts routePath). `bodyFingerprint`: a staged
   * body's fingerprint, made by the thread that parsed it (the body is not parsed here). `secretAnswer`: the answer shows a secret once (a new key's, a webhook's): it is kept
   * sealed for its replay, and replayed only to the credential that made it (`principal`); another
   * credential of the workspace sending the same key is told the key was used for another call.
   */
  scope: { workspaceId: string; path: string; idempotent: boolean; upload: UploadedFile | null; bodyFingerprint?: string | null; secretAnswer?: boolean; principal?: string },
  handle: () => Promise<void>,
): Promise<void> {
  // Present but empty (or only blanks, which HTTP trims) is a bad key, not no key: such a call ran
  // without one and a retry was charged again (a ninth probe).
  const sent = scope.idempotent ? ctx.headers['idempotency-key'] : undefined;
  const key = typeof sent === 'string' ? sent : '';
  if (sent !== undefined && !idempotencyKeySchema.safeParse(sent).success) {
    throw new AppError('VALIDATION_ERROR', 400, 'Idempotency-Key must be 1 to 255 visible ASCII characters.');
  }
  // Forked on first use: a call without a key and without a failure never needs it.
  let forked: EntityManager | null = null;
  const em = (): EntityManager => (forked ??= deps.orm.em.fork());
  const { workspaceId } = scope;
  const sealed: AnswerStore = scope.secretAnswer ? deps.box : null;
  let renewal: NodeJS.Timeout | null = null;
  let held: HeldClaim | null = null;
  if (key) {
    const fingerprint =
      scope.bodyFingerprint ??
      requestFingerprint({ method: ctx.method, path: scope.path, body: ctx.request.body ?? null, file: scope.upload?.content ?? null, principal: scope.secretAnswer ? scope.principal : undefined });
    const claim = await claimIdempotencyKey(em(), { workspaceId, key, fingerprint, leaseSeconds: deps.idempotencyLeaseSeconds });
    if (claim.kind === 'replay') return replay(ctx, claim.response, sealed);
    held = claim.held;
    const renewEveryMs = (deps.idempotencyLeaseSeconds * 1000) / 3;
    renewal = setInterval(() => {
      renewIdempotencyLease(deps.orm.em.fork(), claim.held, deps.idempotencyLeaseSeconds).catch(() => undefined);
    }, renewEveryMs);
    renewal.unref();
  }
  const reservation = (): string | undefined => ctx.state.reservationId as string | undefined;
  try {
    try {
      await handle();
    } finally {
      if (renewal) clearInterval(renewal);
    }
    if (ctx.status >= 500) throw new AppError('INTERNAL_ERROR', ctx.status, 'The call failed on our side; retry it.');
    const reservationId = reservation();
    if (!held) {
      // Nothing to store for replay: the settlement is one statement on the call pool.
      if (reservationId && !(await settleReservationAlone(deps.callPool, reservationId))) throw callExpired();
      return;
    }
    const claim = held;
    const writeWithAnswer = ctx.state.writeWithAnswer as WrittenWithAnswer | undefined;
    await em().transactional(async (tx) => {
      if (reservationId && !(await settleReservation(tx, reservationId))) throw callExpired();
      if (writeWithAnswer) await writeWithAnswer(tx);
      // A retry that took the key over (this call outlived its lease) answers for it: this call's
      // settlement is rolled back with it, so the key's call is charged once.
      if (!(await completeIdempotencyKey(tx, claim, storedAnswer(ctx, sealed)))) throw keyTakenOver();
    });
  } catch (err) {
    const reservationId = reservation();
    if (reservationId) await releaseReservation(deps.orm.em.fork(), reservationId);
    if (held) {
      if (err instanceof AppError && err.status < 500 && err.status !== 429) {
        // A refusal is an answer: the same call with the same key gets it again. A 429 is not: the
        // contract has the caller retry it with the same key once its wait is over (a twentieth probe
        // got a checkout's stored 429 back after the budget was free again), so it releases the key.
        const refusal = JSON.stringify(envelopeOf(err));
        await completeIdempotencyKey(em(), held, {
          status: err.status,
          body: sealed ? sealed.seal(refusal) : refusal,
          headers: { 'content-type': 'application/json; charset=utf-8', ...errorHeaders(err) },
        });
      } else {
        await releaseIdempotencyKey(em(), held);
      }
    }
    throw err;
  }
}
