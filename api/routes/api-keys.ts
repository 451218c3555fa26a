import type { MikroORM } from '@mikro-orm/postgresql';
import { issueKey, listKeys, revokeKey, rotateKeyWithGrace } from '../../services/api-keys';
import { presentKey } from '../presenters';
import type { TemporalGateway } from '../../services/temporal/gateway';
import { route, type AnyRoute } from '../route';
import { requireAuth } from './helpers';
import { pageQuerySchema, paginated } from '../schemas/common';
import {
  apiKeyListSchema,
  apiKeyWithSecretSchema,
  createApiKeyBodySchema,
  keyIdParamsSchema,
  rotateApiKeyBodySchema,
  rotationResultSchema,
} from '../schemas/api-keys';

export function apiKeyRoutes(deps: { orm: MikroORM; temporal: TemporalGateway }): AnyRoute[] {
  return [
    route({
      method: 'get',
      path: '/v1/api-keys',
      summary: 'List the API keys of the workspace (secrets are never shown)',
      tag: 'API keys',
      auth: 'admin',
      query: pageQuerySchema(),
      responses: { 200: { description: 'A page of keys, newest first.', schema: apiKeyListSchema } },
      errors: [],
      async handler(ctx, { query, auth }) {
        const now = new Date();
        const { items, total } = await listKeys(deps.orm.em.fork(), requireAuth(auth).workspaceId, query);
        ctx.body = paginated(
          items.map((key) => presentKey(key, now)),
          total,
          query,
        );
      },
    }),
    route({
      method: 'post',
      path: '/v1/api-keys',
      summary: 'Create an API key (the secret is returned once)',
      tag: 'API keys',
      auth: 'admin',
      idempotent: true,
      secretAnswer: true,
      body: createApiKeyBodySchema,
      responses: { 201: { description: 'The new key with its secret.', schema: apiKeyWithSecretSchema } },
      errors: [[403, 'WEB_SESSION_REQUIRED'], [409, 'TOO_MANY_API_KEYS']],
      async handler(ctx, { body, auth }) {
        const caller = requireAuth(auth);
        const now = new Date();
        const created = await issueKey(
          deps.orm.em.fork(),
          { workspaceId: caller.workspaceId, viaApiKey: caller.type === 'api_key' },
          { name: body.name, kind: body.kind, expiresAt: body.expires_at ? new Date(body.expires_at) : null },
          now,
        );
        ctx.status = 201;
        ctx.body = { ...presentKey(created.key, now), secret: created.secret };
      },
    }),
    route({
      method: 'delete',
      path: '/v1/api-keys/:keyId',
      summary: 'Revoke an API key at once',
      tag: 'API keys',
      auth: 'admin',
      params: keyIdParamsSchema,
      responses: { 204: { description: 'Revoked.' } },
      errors: [[404, 'NOT_FOUND']],
      async handler(ctx, { params, auth }) {
        await revokeKey(deps.orm.em.fork(), requireAuth(auth).workspaceId, params.keyId, new Date());
        ctx.status = 204;
      },
    }),
    route({
      method: 'post',
      path: '/v1/api-keys/:keyId/rotate',
      summary: 'Rotate a key: a twin of the same kind is created; the old one ends after grace_days',
      tag: 'API keys',
      auth: 'admin',
      idempotent: true,
      secretAnswer: true,
      params: keyIdParamsSchema,
      body: rotateApiKeyBodySchema,
      responses: { 201: { description: 'The new key (secret once) and the old key’s new state.', schema: rotationResultSchema } },
      errors: [
        [403, 'WEB_SESSION_REQUIRED'],
        [404, 'NOT_FOUND'],
        [409, 'KEY_NOT_ACTIVE'],
        [409, 'TOO_MANY_API_KEYS'],
      ],
      async handler(ctx, { params, body, auth }) {
        const now = new Date();
        const caller = requireAuth(auth);
        const rotation = await rotateKeyWithGrace(deps.orm.em.fork(), deps.temporal, { workspaceId: caller.workspaceId, keyId: caller.type === 'api_key' ? caller.keyId : null }, params.keyId, body.grace_days, now);
        ctx.status = 201;
        ctx.body = {
          ...presentKey(rotation.created.key, now),
          secret: rotation.created.secret,
          rotated_key: presentKey(rotation.old, now),
        };
      },
    }),
  ];
}
