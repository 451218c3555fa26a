import http from 'node:http';
import https from 'node:https';
import { ForeignKeyConstraintViolationException } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import { Webhook } from 'standardwebhooks';
import { WEBHOOKS } from '../../config/webhooks';
import { storableText } from '../json';
import { claimAttemptSlots, releaseAttemptSlots, type AttemptBounds } from './attempt-slots';
import { execIn } from './events';
import type { SecretBox } from './secrets';
import { attemptAgent, schemeAllowed, type TargetPolicy } from './targets';

export interface DeliverySettings {
  box: SecretBox;
  policy: TargetPolicy;
  timeoutMs: number;
  /** Attempts of one account, and of one endpoint, in flight at once across every worker (services/webhooks/attempt-slots.ts). */
  attemptsInFlight: AttemptBounds;
}

export interface AttemptRequest {
  deliveryId: string;
  /** 1 for the first attempt; a retried activity repeats its number and overwrites its record. */
  number: number;
  /** When the workflow scheduled this attempt (Temporal's clock): the clock of the 5-day rule. */
  scheduledAt: Date;
  lastAttempt: boolean;
}

export interface AttemptResult {
  /**
   * `retry`: the workflow waits and tries again; `busy`: nothing was sent, every slot of the account or
   * the endpoint being taken, and the workflow makes the same attempt later; anything else ends the delivery.
   */
  outcome: 'succeeded' | 'retry' | 'failed' | 'cancelled' | 'busy';
  /** The wait the receiver asked for (429 or 503 with Retry-After). */
  retryAfterMs: number | null;
  status: number | null;
}

interface Answer {
  status: number | null;
  retryAfter: string | null;
  excerpt: string | null;
  error: string | null;
  durationMs: number;
}

interface Target {
  state: string;
  account_id: string;
  event_id: string;
  payload: unknown;
  endpoint_id: string;
  url: string;
  active: boolean;
  secret_ciphertext: string;
  previous_secret_ciphertext: string | null;
  previous_secret_expires_at: Date | null;
}

const truncate = (text: string, max: number): string => (text.length > max ? `${text.slice(0, max - 1)}…` : text);

/**
 * One POST: no redirect is followed (Node's client never follows them), the whole exchange is bounded
 * by the timeout, and at most `responseExcerptBytes` of the answer are read.
 */
function post(url: URL, body: string, headers: Record<string, string>, policy: TargetPolicy, timeoutMs: number): Promise<Answer> {
  const started = performance.now();
  const agent = attemptAgent(url, policy);
  const client = url.protocol === 'https:' ? https : http;
  return new Promise<Answer>((resolve) => {
    let status: number | null = null;
    let retryAfter: string | null = null;
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    const finish = (error: string | null) => {
      if (settled) return;
      settled = true;
      agent.destroy();
      // a receiver's bytes are kept as text PostgreSQL can store (a NUL failed the attempt's row, so the
      // activity was retried and the event sent again and again)
      const excerpt = status === null ? null : storableText(Buffer.concat(chunks).toString('utf8'));
      resolve({ status, retryAfter, excerpt, error: error === null ? null : storableText(error), durationMs: Math.round(performance.now() - started) });
    };
    const request = client.request(
      url,
      { method: 'POST', agent, headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) }, signal: AbortSignal.timeout(timeoutMs) },
      (response) => {
        status = response.statusCode ?? null;
        const header = response.headers['retry-after'];
        retryAfter = typeof header === 'string' ? header : null;
        response.on('data', (chunk: Buffer) => {
          const room = WEBHOOKS.responseExcerptBytes - size;
          if (room > 0) chunks.push(chunk.subarray(0, room));
          size += chunk.length;
          // Enough read: the rest of the answer is not ours to keep.
          if (size >= WEBHOOKS.responseExcerptBytes) {
            finish(null);
            response.destroy();
          }
        });
        response.on('end', () => finish(null));
        response.on('error', (err) => finish(status === null ? describe(err, timeoutMs) : null));
      },
    );
    request.on('error', (err) => finish(describe(err, timeoutMs)));
    request.end(body);
  });
}

function describe(err: Error, timeoutMs: number): string {
  if (err.name === 'AbortError' || err.name === 'TimeoutError') return `No answer within ${timeoutMs / 1000} s.`;
  const code = (err as NodeJS.ErrnoException).code;
  return truncate(`${code ? `${code}: ` : ''}${err.message}`, 500);
}

/** An HTTP date as RFC 9110 asks senders to write it (IMF-fixdate): `Sun, 06 Nov 1994 08:49:37 GMT`. */
const IMF_FIXDATE = /^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d{2} (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{4} \d{2}:\d{2}:\d{2} GMT$/;

/**
 * Retry-After as whole seconds or an HTTP date, bounded; null when absent, unreadable or asking for no
 * wait (0, a date passed): the schedule then applies. `Date.parse` read `-5`, `1.5` or `0.5` as dates
 * of 1970-2001, and a wait of 0 (or a past date) spent a delivery's whole schedule in under a second
 * (a twenty-third probe).
 */
export function retryAfterMs(value: string | null, now: number): number | null {
  if (!value) return null;
  const trimmed = value.trim();
  const ms = /^\d+$/.test(trimmed) ? Number(trimmed) * 1000 : IMF_FIXDATE.test(trimmed) ? Date.parse(trimmed) - now : Number.NaN;
  if (!Number.isFinite(ms) || ms <= 0) return null;
  return Math.min(ms, WEBHOOKS.maxRetryAfterMs);
}

/** The Standard Webhooks signature header: one `v1,…` per secret in use, space-separated. */
export function signatures(secrets: string[], messageId: string, timestamp: Date, body: string): string {
  return secrets.map((secret) => new Webhook(secret).sign(messageId, timestamp, body)).join(' ');
}

async function loadTarget(em: EntityManager, deliveryId: string): Promise<Target | undefined> {
  const [row] = await execIn<Target>(
    em,
    `select d.state, d.event_id, e.payload, w.account_id, p.id as endpoint_id, p.url, p.active, p.secret_ciphertext, p.previous_secret_ciphertext, p.previous_secret_expires_at
       from webhook_deliveries d join webhook_events e on e.id = d.event_id join webhook_endpoints p on p.id = d.endpoint_id join workspaces w on w.id = p.workspace_id
      where d.id = ?`,
    [deliveryId],
  );
  return row;
}

async function close(em: EntityManager, deliveryId: string, state: 'cancelled', error: string): Promise<void> {
  await execIn(em, `update webhook_deliveries set state = ?, last_error = ?, completed_at = now() where id = ? and state = 'pending'`, [state, error, deliveryId]);
}

/**
 * One attempt of a delivery, recorded with its status, duration, excerpt and error, and its effect on
 * the endpoint: a success clears the failure clock; a 410 disables the endpoint; a failure when the
 * endpoint has had no success for 5 days disables it too. Idempotent: a delivery already finished is
 * not sent again, and a repeated attempt number overwrites its own record.
 */
export async function attemptDelivery(em: EntityManager, settings: DeliverySettings, request: AttemptRequest): Promise<AttemptResult> {
  const target = await loadTarget(em, request.deliveryId);
  // The endpoint (or its workspace) was deleted: its deliveries went with it.
  if (!target) return { outcome: 'cancelled', retryAfterMs: null, status: null };
  if (target.state !== 'pending') return { outcome: target.state as AttemptResult['outcome'], retryAfterMs: null, status: null };
  if (!target.active) {
    await close(em, request.deliveryId, 'cancelled', 'The webhook was disabled before this delivery could be made.');
    return { outcome: 'cancelled', retryAfterMs: null, status: null };
  }
  // The lease outlives the attempt's HTTP bound by the activity's margin, so a worker lost mid-attempt
  // holds its slot no longer than Temporal waits before retrying the attempt.
  const slots = await claimAttemptSlots(
    em,
    { accountId: target.account_id, endpointId: target.endpoint_id },
    request.deliveryId,
    settings.attemptsInFlight,
    settings.timeoutMs + WEBHOOKS.attemptMarginMs,
  );
  if (!slots) return { outcome: 'busy', retryAfterMs: null, status: null };
  try {
    return await sendAndRecord(em, settings, request, target);
  } catch (err) {
    // The endpoint, its workspace or its account was deleted while the attempt was in flight: its
    // delivery went with it, so there is nothing to record (each such attempt failed, was retried by
    // Temporal and logged a foreign-key error; a twenty-sixth probe).
    if (err instanceof ForeignKeyConstraintViolationException) return { outcome: 'cancelled', retryAfterMs: null, status: null };
    throw err;
  } finally {
    await releaseAttemptSlots(em, slots);
  }
}

/** The attempt itself, once its slot is held: the POST, then its record and its effect on the endpoint. */
async function sendAndRecord(em: EntityManager, settings: DeliverySettings, request: AttemptRequest, target: Target): Promise<AttemptResult> {
  const url = new URL(target.url);
  const now = new Date();
  const body = typeof target.payload === 'string' ? target.payload : JSON.stringify(target.payload);
  let answer: Answer;
  if (!schemeAllowed(url, settings.policy)) {
    answer = { status: null, retryAfter: null, excerpt: null, error: 'The URL is no longer allowed (https only).', durationMs: 0 };
  } else {
    const secrets = [settings.box.open(target.secret_ciphertext)];
    if (target.previous_secret_ciphertext && target.previous_secret_expires_at && new Date(target.previous_secret_expires_at) > now) {
      secrets.push(settings.box.open(target.previous_secret_ciphertext));
    }
    answer = await post(
      url,
      body,
      {
        'content-type': 'application/json',
        'user-agent': 'prediction-service-webhooks/1',
        'webhook-id': target.event_id,
        'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
        'webhook-signature': signatures(secrets, target.event_id, now, body),
      },
      settings.policy,
      settings.timeoutMs,
    );
  }

  const status = answer.status;
  const succeeded = status !== null && status >= 200 && status < 300;
  const gone = status === 410;
  const waitAsked = status === 429 || status === 503 ? retryAfterMs(answer.retryAfter, now.getTime()) : null;
  const error = succeeded ? null : (answer.error ?? (status !== null ? `The endpoint answered ${status}${status >= 300 && status < 400 ? ' (redirects are not followed)' : ''}.` : 'No answer.'));

  return em.transactional(async (tx) => {
    let disabledReason: string | null = null;
    if (succeeded) {
      await execIn(tx, `update webhook_endpoints set last_success_at = ?, failing_since = null where id = ?`, [now, target.endpoint_id]);
    } else {
      const [endpoint] = await execIn<{ failing_since: Date }>(
        tx,
        `update webhook_endpoints
            set failing_since = case when failing_since is null or last_failure_at is null or last_failure_at < ?::timestamptz - make_interval(secs => ?) then ?::timestamptz else failing_since end,
                last_failure_at = greatest(last_failure_at, ?::timestamptz)
          where id = ? returning failing_since`,
        [request.scheduledAt, WEBHOOKS.failureGapRestartsMs / 1000, request.scheduledAt, request.scheduledAt, target.endpoint_id],
      );
      const failingMs = endpoint ? request.scheduledAt.getTime() - new Date(endpoint.failing_since).getTime() : 0;
      if (gone) disabledReason = `The endpoint answered 410 Gone on ${now.toISOString()}; deliveries stopped.`;
      else if (failingMs >= WEBHOOKS.disableAfterFailingMs) disabledReason = `No successful delivery for ${Math.round(WEBHOOKS.disableAfterFailingMs / 86_400_000)} days (failing since ${new Date(endpoint!.failing_since).toISOString()}).`;
      if (disabledReason) {
        await execIn(tx, `update webhook_endpoints set active = false, disabled_reason = ?, disabled_at = ? where id = ? and active`, [disabledReason, now, target.endpoint_id]);
      }
    }
    const outcome: AttemptResult['outcome'] = succeeded ? 'succeeded' : disabledReason || request.lastAttempt ? 'failed' : 'retry';
    await execIn(
      tx,
      `insert into webhook_attempts (delivery_id, number, scheduled_at, started_at, duration_ms, status, response_excerpt, error, outcome)
       values (?, ?, ?, ?, ?, ?, ?, ?, ?)
       on conflict (delivery_id, number) do update set scheduled_at = excluded.scheduled_at, started_at = excluded.started_at,
         duration_ms = excluded.duration_ms, status = excluded.status, response_excerpt = excluded.response_excerpt, error = excluded.error, outcome = excluded.outcome`,
      [request.deliveryId, request.number, request.scheduledAt, now, answer.durationMs, status, answer.excerpt, error, outcome],
    );
    await execIn(
      tx,
      `update webhook_deliveries set attempts = greatest(attempts, ?), last_status = ?, last_error = ?, state = ?,
              completed_at = case when ? = 'pending' then null else now() end
        where id = ?`,
      [request.number, status, disabledReason ?? error, outcome === 'retry' ? 'pending' : outcome, outcome === 'retry' ? 'pending' : outcome, request.deliveryId],
    );
    return { outcome, retryAfterMs: outcome === 'retry' ? waitAsked : null, status };
  });
}
