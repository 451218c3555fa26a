import { WEBHOOKS, WEBHOOK_EVENT_TYPES, WEBHOOK_TEST_EVENT } from '../../config/webhooks';
import { z } from '../zod';
import { isoDateTime, paginationSchema } from './common';

export const webhookEventTypeSchema = z.enum(WEBHOOK_EVENT_TYPES).openapi('WebhookEventType');

export const webhookSchema = z
  .object({
    id: z.string().openapi({ example: 'whk_3kTMd9Q2x8Wm1pZr7YvB0c' }),
    url: z.string(),
    events: z.array(webhookEventTypeSchema).openapi({ description: 'The event kinds delivered to this endpoint.' }),
    all_events: z.boolean().openapi({ description: 'Registered without `events`: receives every kind, including kinds added later.' }),
    active: z.boolean(),
    disabled_reason: z.string().nullable().openapi({ description: 'Why the endpoint is off: a 410 answer, 5 days without a successful delivery, or a PATCH.' }),
    disabled_at: isoDateTime.nullable(),
    last_success_at: isoDateTime.nullable(),
    failing_since: isoDateTime.nullable().openapi({ description: 'First failed attempt since the last success; after 5 days the endpoint is disabled.' }),
    previous_secret_expires_at: isoDateTime.nullable().openapi({ description: 'End of a secret rotation’s overlap, while the previous secret still signs.' }),
    workspace_id: z.string(),
    created_at: isoDateTime,
    updated_at: isoDateTime,
  })
  .openapi('Webhook');

const secretField = z.string().openapi({
  description: 'Signing secret (`whsec_` + base64 of 32 bytes), for Standard Webhooks verification. Shown once, never again.',
  example: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
});

export const webhookWithSecretSchema = webhookSchema.extend({ secret: secretField }).openapi('WebhookWithSecret');
export const webhookListSchema = z.object({ data: z.array(webhookSchema), pagination: paginationSchema }).openapi('WebhookList');

const urlField = z.string().trim().min(1).max(WEBHOOKS.maxUrlLength).openapi({
  description: 'Where events are POSTed: `https` to a public address (private, loopback, link-local and metadata addresses are refused, also after DNS resolution).',
  example: 'https://example.com/hooks/predictions',
});
const eventsField = z.array(webhookEventTypeSchema).min(1).max(WEBHOOK_EVENT_TYPES.length * 2);

export const createWebhookBodySchema = z
  .object({ url: urlField, events: eventsField.nullable().optional().openapi({ description: 'Omitted or null: every event kind (null means the same on PATCH).' }) })
  .strict()
  .openapi('CreateWebhook');

export const patchWebhookBodySchema = z
  .object({
    url: urlField.optional(),
    events: eventsField.nullable().optional().openapi({ description: 'null: every event kind.' }),
    active: z.boolean().optional().openapi({ description: 'true turns a disabled endpoint back on (its failure clock restarts).' }),
  })
  .strict()
  .openapi('PatchWebhook');

export const rotateWebhookSecretBodySchema = z
  .object({
    overlap_hours: z
      .number()
      .int()
      .min(0)
      .max(WEBHOOKS.maxRotationOverlapHours)
      .default(WEBHOOKS.defaultRotationOverlapHours)
      .openapi({ description: `Hours the previous secret keeps signing next to the new one (default ${WEBHOOKS.defaultRotationOverlapHours}); 0 ends it at once.` }),
  })
  .strict()
  .openapi('RotateWebhookSecret');

export const webhookIdParamsSchema = z.object({ id: z.string().min(1).max(64) });
export const deliveryParamsSchema = z.object({ id: z.string().min(1).max(64), deliveryId: z.string().min(1).max(64) });

// Event payloads: what receivers get, one schema per kind.

const modelVersionData = z.object({
  model: z.object({ id: z.string(), name: z.string(), target: z.string(), task: z.enum(['binary', 'multiclass', 'regression']), status: z.string() }),
  version: z.object({
    id: z.string(),
    number: z.number().int(),
    engine: z.object({ id: z.string(), version: z.string() }),
    trigger: z.enum(['train', 'refresh']),
    context_rows: z.number().int(),
    outcomes_folded: z.number().int(),
    validation: z.record(z.string(), z.unknown()).openapi({ description: 'The validation metric the version earned (as in GET /v1/models/{id}/versions).' }),
    created_at: isoDateTime,
  }),
});

export const modelTrainedDataSchema = modelVersionData.openapi('ModelTrainedData', { description: 'model.trained: the first version of a model is stored and serves (end of train/<mdl>).' });
export const modelRefreshedDataSchema = modelVersionData.openapi('ModelRefreshedData', {
  description: 'model.refreshed: a new version from POST /refresh or an auto_update integration serves.',
});
export const modelStaleDataSchema = z
  .object({
    model: z.object({ id: z.string(), name: z.string(), version: z.number().int().nullable() }),
    reason: z.enum(['performance', 'no_outcomes']).openapi({ description: '`performance`: the verdict left holding; `no_outcomes`: predicting with no outcome for `days` days.' }),
    verdict: z.enum(['holding', 'weak', 'dropped']).nullable(),
    expected: z.unknown().openapi({ description: 'As in GET /v1/models/{id}/performance.' }),
    observed: z.unknown().openapi({ description: 'As in GET /v1/models/{id}/performance.' }),
    predictions: z.number().int().openapi({ description: 'Predictions over the window.' }),
    last_outcome_at: isoDateTime.nullable(),
    days: z.number().int(),
  })
  .openapi('ModelStaleData', { description: 'model.stale: once per episode (a daily check); a model that recovers and relapses makes a new event.' });
export const creditsLowDataSchema = z
  .object({
    account_id: z.string(),
    threshold: z.enum(['20%', '5%', '0']).openapi({ description: 'The threshold crossed downwards: 20 % or 5 % of the monthly allowance left (purchased balance included), or nothing left.' }),
    remaining: z.number().int().openapi({ description: 'Allowance left + purchased balance when it was detected.' }),
    allowance_remaining: z.number().int(),
    purchased_balance: z.number().int(),
    monthly_allowance: z.number().int(),
    period: z.string().openapi({ description: 'Allowance period (YYYY-MM, UTC).', example: '2026-11' }),
  })
  .openapi('CreditsLowData', { description: 'credits.low: once per allowance period per threshold, sent to every workspace of the account.' });
export const webhookTestDataSchema = z.object({ webhook_id: z.string(), message: z.string() }).openapi('WebhookTestData');

const envelope = <T extends string, D extends z.ZodType>(type: T, data: D, name: string) =>
  z
    .object({
      id: z.string().openapi({ description: 'Event id (`evt_…`), also the `webhook-id` header: the same on every retry and redelivery.' }),
      type: z.literal(type),
      created_at: isoDateTime,
      workspace_id: z.string(),
      data,
    })
    .openapi(name);

export const webhookEventSchema = z
  .discriminatedUnion('type', [
    envelope('model.trained', modelTrainedDataSchema, 'ModelTrainedEvent'),
    envelope('model.refreshed', modelRefreshedDataSchema, 'ModelRefreshedEvent'),
    envelope('model.stale', modelStaleDataSchema, 'ModelStaleEvent'),
    envelope('credits.low', creditsLowDataSchema, 'CreditsLowEvent'),
    envelope(WEBHOOK_TEST_EVENT, webhookTestDataSchema, 'WebhookTestEvent'),
  ])
  .openapi('WebhookEvent', {
    description:
      'The JSON body POSTed to an endpoint, signed per Standard Webhooks: headers `webhook-id` (the event id), `webhook-timestamp` (Unix seconds) and `webhook-signature` (`v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">`, several space-separated during a secret rotation). Verify with any Standard Webhooks library and the endpoint’s secret.',
  });

export const webhookAttemptSchema = z
  .object({
    number: z.number().int().min(1),
    scheduled_at: isoDateTime,
    started_at: isoDateTime,
    duration_ms: z.number().int(),
    status: z.number().int().nullable().openapi({ description: 'HTTP status answered; null when none came (refused address, timeout, network error).' }),
    response_excerpt: z.string().nullable().openapi({ description: `At most the first ${WEBHOOKS.responseExcerptBytes} bytes of the answer.` }),
    error: z.string().nullable(),
    outcome: z.enum(['succeeded', 'retry', 'failed']),
  })
  .openapi('WebhookAttempt');

export const webhookDeliverySchema = z
  .object({
    id: z.string().openapi({ example: 'dlv_3kTMd9Q2x8Wm1pZr7YvB0c' }),
    webhook_id: z.string(),
    event_id: z.string(),
    event_type: z.string(),
    redelivery_of: z.string().nullable(),
    state: z.enum(['pending', 'succeeded', 'failed', 'cancelled']),
    attempt_count: z.number().int(),
    last_status: z.number().int().nullable(),
    last_error: z.string().nullable(),
    created_at: isoDateTime,
    completed_at: isoDateTime.nullable(),
    attempts: z.array(webhookAttemptSchema),
    payload: webhookEventSchema,
  })
  .openapi('WebhookDelivery');

export const webhookDeliveryListSchema = z.object({ data: z.array(webhookDeliverySchema), pagination: paginationSchema }).openapi('WebhookDeliveryList');

export const webhookTestResultSchema = z.object({ event_id: z.string(), delivery_id: z.string() }).openapi('WebhookTestResult');
export const redeliveryResultSchema = z.object({ delivery_id: z.string(), redelivery_of: z.string() }).openapi('WebhookRedelivery');
