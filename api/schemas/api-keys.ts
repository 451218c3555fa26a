import { KEY_ROTATION } from '../../config/plans';
import { API_KEY_KINDS, REVOKE_REASONS } from '../../db/entities/api-key';
import { displayName, isoDateTime, paginationSchema, storableDateTime } from './common';
import { z } from '../zod';

const nullableDate = isoDateTime.nullable();

export const apiKeySchema = z
  .object({
    id: z.string().openapi({ example: 'key_3kTMd9Q2x8Wm1pZr7YvB0c' }),
    name: z.string(),
    kind: z.enum(API_KEY_KINDS),
    status: z.enum(['active', 'ending', 'revoked', 'expired']),
    display_prefix: z.string().openapi({ description: 'Key prefix and first four characters, for recognising a key.', example: 'sk-svc-api-Ab3d' }),
    last_four: z.string(),
    workspace_id: z.string(),
    created_at: isoDateTime,
    last_used_at: nullableDate,
    expires_at: nullableDate,
    ends_at: nullableDate.openapi({ description: 'End of the rotation grace of an ending key.' }),
    revoked_at: nullableDate,
    revoke_reason: z.enum(REVOKE_REASONS).nullable(),
    rotated_from: z.string().nullable().openapi({ description: 'The key this one replaced by rotation.' }),
    rotated_at: nullableDate,
  })
  .openapi('ApiKey');

export const apiKeyWithSecretSchema = apiKeySchema
  .extend({ secret: z.string().openapi({ description: 'The key itself. Shown once, never again.' }) })
  .openapi('ApiKeyWithSecret');

export const apiKeyListSchema = z.object({ data: z.array(apiKeySchema), pagination: paginationSchema }).openapi('ApiKeyList');

export const createApiKeyBodySchema = z
  .object({
    name: displayName(),
    kind: z.enum(API_KEY_KINDS).default('api').openapi({ description: 'An admin key can only be created from a web session.' }),
    expires_at: storableDateTime.optional().openapi({ description: 'Without it the key never expires.' }),
  })
  .strict()
  .openapi('CreateApiKey');

export const rotateApiKeyBodySchema = z
  .object({
    grace_days: z
      .number()
      .int()
      .min(0)
      .max(KEY_ROTATION.maxGraceDays)
      .default(KEY_ROTATION.defaultGraceDays)
      .openapi({ description: `Days the old key keeps working (default ${KEY_ROTATION.defaultGraceDays}); 0 revokes it at once.` }),
  })
  .strict()
  .openapi('RotateApiKey');

export const rotationResultSchema = apiKeyWithSecretSchema
  .extend({ rotated_key: apiKeySchema.openapi({ description: 'The old key, now ending or revoked.' }) })
  .openapi('ApiKeyRotation');

export const keyIdParamsSchema = z.object({ keyId: z.string().min(1).max(64) });
