/**
 * Outgoing webhooks (DESIGN.md, "Webhooks (our choices)"; docs/DECISIONS.md, "Outgoing webhooks").
 * The per-workspace limit lives in plans.ts with the other limits.
 */
export const WEBHOOK_EVENT_TYPES = ['model.trained', 'model.refreshed', 'model.stale', 'credits.low'] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];
/** Sent only by POST /v1/webhooks/{id}/test, to that endpoint alone, whatever its `events`. */
export const WEBHOOK_TEST_EVENT = 'webhook.test';

export const WEBHOOKS = {
  /** An endpoint with no successful delivery for this long is disabled (the reason is shown). */
  disableAfterFailingMs: 5 * 86_400_000,
  /**
   * A failed attempt this long after the previous failed one starts the disable clock again: longer
   * than any wait between two attempts of one delivery (24 h + 10 % jitter, or a Retry-After of at
   * most 24 h), so failing for 5 days means attempts that kept failing for 5 days, not one failure
   * before a quiet week and one after it.
   */
  failureGapRestartsMs: 30 * 3_600_000,
  /** How much of an answer is kept with each attempt. */
  responseExcerptBytes: 1024,
  /** Spread of the retry delays (±10 %), so that many deliveries failing together do not retry together. */
  jitterRatio: 0.1,
  /** A Retry-After (429, 503) is honoured up to this wait. */
  maxRetryAfterMs: 86_400_000,
  /** Secret rotation: how long the previous secret keeps signing by default, and at most. */
  defaultRotationOverlapHours: 24,
  maxRotationOverlapHours: 7 * 24,
  /** A relay that claimed a delivery and died leaves it to another relay after this long. */
  dispatchLeaseMs: 30_000,
  /** Longest URL accepted. */
  maxUrlLength: 2048,
  /**
   * How long create/patch waits for a URL's name to resolve. The system resolver has no deadline of its
   * own a call can set (a resolver that never answers held the request open); a name not resolved by
   * then is taken as not resolving yet, and every attempt checks the address it connects to anyway.
   */
  lookupTimeoutMs: 3_000,
  /** What an attempt's activity may take beyond its HTTP bound for its database work (its start-to-close margin). */
  attemptMarginMs: 15_000,
  /**
   * The wait before a delivery tries again for a slot when its account's or endpoint's attempts in
   * flight are at their bound (services/webhooks/attempt-slots.ts), doubling at each refusal up to
   * maxBusyWaitMs; no attempt is recorded for a refusal. Each refusal is an activity and a timer in
   * the delivery's history: a backlog of hundreds of waiting deliveries asking every 15 s kept the
   * Temporal server at half a core (a twenty-sixth probe); asking at most once a minute is a quarter.
   */
  firstBusyWaitMs: 1_000,
  /**
   * Deliveries an endpoint may have waiting (pending) when a test event or a redelivery is asked for:
   * beyond, 409 TOO_MANY_PENDING_DELIVERIES. A free key could queue 20 test events a second at a
   * receiver that never answers, each a delivery waiting for a slot (a twenty-sixth probe).
   */
  maxPendingForRequestedDeliveries: 100,
  /**
   * The same across all the account's endpoints: with 100 per endpoint alone, one admin key queued 500
   * test events over its 10 endpoints in 16 s (a twenty-seventh probe).
   */
  maxPendingForRequestedDeliveriesPerAccount: 200,
  maxBusyWaitMs: 60_000,
} as const;

/** model.stale: a serving model that keeps predicting with no outcome reported for this long. */
export const STALE_NO_OUTCOME_DAYS = 30;

/** credits.low: fractions of the monthly allowance left (purchased balance included), and 0. */
export const CREDIT_ALERT_THRESHOLDS = [
  { name: '20%', percent: 20 },
  { name: '5%', percent: 5 },
  { name: '0', percent: 0 },
] as const;
export type CreditAlertThreshold = (typeof CREDIT_ALERT_THRESHOLDS)[number]['name'];
