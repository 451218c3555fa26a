import type { MikroORM } from '@mikro-orm/postgresql';
import { createWorkspace, getWorkspace, listWorkspaces, renameWorkspace } from '../../services/workspaces';
import { presentWorkspace } from '../presenters';
import { route, type AnyRoute } from '../route';
import { workspaceBodySchema, workspaceListSchema, workspaceParamsSchema, workspaceSchema } from '../schemas/auth';
import { pageOf, pageQuerySchema } from '../schemas/common';
import { requireAuth } from './helpers';

export function workspaceRoutes(deps: { orm: MikroORM }): AnyRoute[] {
  return [
    route({
      method: 'get',
      path: '/v1/workspaces',
      summary: 'The account\'s workspaces, oldest first',
      tag: 'Workspaces',
      auth: 'session',
      query: pageQuerySchema(),
      responses: { 200: { description: 'The account\'s workspaces, a page of them.', schema: workspaceListSchema } },
      errors: [],
      async handler(ctx, { query, auth }) {
        ctx.body = pageOf((await listWorkspaces(deps.orm.em.fork(), requireAuth(auth).accountId)).map(presentWorkspace), query);
      },
    }),
    route({
      method: 'post',
      path: '/v1/workspaces',
      summary: 'Create a workspace (select it with the X-Workspace-Id header)',
      tag: 'Workspaces',
      auth: 'session',
      idempotent: true,
      idempotencyScope: 'account',
      body: workspaceBodySchema,
      responses: { 201: { description: 'Created.', schema: workspaceSchema } },
      errors: [[409, 'TOO_MANY_WORKSPACES']],
      async handler(ctx, { body, auth }) {
        ctx.status = 201;
        ctx.body = presentWorkspace(await createWorkspace(deps.orm.em.fork(), requireAuth(auth).accountId, body.name));
      },
    }),
    route({
      method: 'get',
      path: '/v1/workspaces/:workspaceId',
      summary: 'One workspace of the account',
      tag: 'Workspaces',
      auth: 'session',
      params: workspaceParamsSchema,
      responses: { 200: { description: 'The workspace.', schema: workspaceSchema } },
      errors: [[404, 'NOT_FOUND']],
      async handler(ctx, { params, auth }) {
        ctx.body = presentWorkspace(await getWorkspace(deps.orm.em.fork(), requireAuth(auth).accountId, params.workspaceId));
      },
    }),
    route({
      method: 'patch',
      path: '/v1/workspaces/:workspaceId',
      summary: 'Rename a workspace',
      tag: 'Workspaces',
      auth: 'session',
      params: workspaceParamsSchema,
      body: workspaceBodySchema,
      responses: { 200: { description: 'The workspace.', schema: workspaceSchema } },
      errors: [[404, 'NOT_FOUND']],
      async handler(ctx, { params, body, auth }) {
        ctx.body = presentWorkspace(await renameWorkspace(deps.orm.em.fork(), requireAuth(auth).accountId, params.workspaceId, body.name));
      },
    }),
  ];
}
