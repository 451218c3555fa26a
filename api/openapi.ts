import { OpenAPIRegistry, OpenApiGeneratorV31, type ResponseConfig, type RouteConfig } from '@asteasolutions/zod-to-openapi';
import type { ZodObject, ZodType } from 'zod';
import { REMAINING_HEADER } from './middleware/errors';
import type { AnyRoute } from './route';
import { errorEnvelopeSchema, idempotencyHeaderSchema } from './schemas/common';
import { fieldKind, z } from './zod';

const GENERIC_ERRORS: Array<[number, string]> = [
  [400, 'VALIDATION_ERROR'],
  [400, 'INVALID_JSON'],
  [413, 'PAYLOAD_TOO_LARGE'],
  [415, 'UNSUPPORTED_MEDIA_TYPE'],
  [500, 'INTERNAL_ERROR'],
  [503, 'SERVICE_UNAVAILABLE'],
];

const RATE_HEADERS = {
  'RateLimit-Limit': { description: 'Requests allowed in the current window (the tighter of the key and workspace budgets).', schema: { type: 'integer' as const } },
  'RateLimit-Remaining': { description: 'Requests left in the current window, as the answering API process counts them (with several processes, points another process holds unspent count as spent).', schema: { type: 'integer' as const } },
  'RateLimit-Reset': { description: 'Seconds until the window resets.', schema: { type: 'integer' as const } },
};

const AUTH_ERRORS: Record<AnyRoute['auth'], Array<[number, string]>> = {
  public: [],
  // 404 NOT_FOUND: a web session's X-Workspace-Id that is not one of its account's workspaces.
  key_or_session: [
    [400, 'AMBIGUOUS_CREDENTIALS'],
    [401, 'AUTH_REQUIRED'],
    [401, 'API_KEY_INVALID'],
    [401, 'TOKEN_INVALID'],
    [404, 'NOT_FOUND'],
    [429, 'RATE_LIMITED'],
  ],
  admin: [
    [400, 'AMBIGUOUS_CREDENTIALS'],
    [401, 'AUTH_REQUIRED'],
    [401, 'API_KEY_INVALID'],
    [401, 'TOKEN_INVALID'],
    [403, 'ADMIN_KEY_REQUIRED'],
    [404, 'NOT_FOUND'],
    [429, 'RATE_LIMITED'],
  ],
  // An API key is read before the route refuses its kind: an unknown or revoked one is API_KEY_INVALID
  // here too (the contract: an unknown key, anywhere), which the document did not name (a nineteenth probe).
  session: [
    [400, 'AMBIGUOUS_CREDENTIALS'],
    [401, 'AUTH_REQUIRED'],
    [401, 'API_KEY_INVALID'],
    [401, 'TOKEN_INVALID'],
    [404, 'NOT_FOUND'],
    [429, 'RATE_LIMITED'],
  ],
};

const workspaceHeaderSchema = z.object({
  'x-workspace-id': z
    .string()
    .min(1)
    .optional()
    .openapi({ description: 'Web sessions: the workspace to act on (one of the account\'s; default, when the header is left out, the oldest; sent empty it names none: 404). Ignored for API keys, which belong to one workspace.' }),
});

const SECURITY: Record<AnyRoute['auth'], RouteConfig['security']> = {
  public: [],
  key_or_session: [{ ApiKeyHeader: [] }, { BearerAuth: [] }],
  admin: [{ ApiKeyHeader: [] }, { BearerAuth: [] }],
  session: [{ BearerAuth: [] }],
};

/**
 * What an Idempotency-Key adds to a route that accepts one (runCommitted): the header, its refusals and
 * the replay's header. The document named none of it, so a client generated from it could not send the
 * key the contract asks retries to reuse (a seventh probe).
 */
const IDEMPOTENCY_ERRORS: Array<[number, string]> = [
  [409, 'REQUEST_IN_PROGRESS'],
  [422, 'IDEMPOTENCY_KEY_REUSED'],
  // the call outlived its credit hold or its key's lease (a retry took the key over): nothing charged
  [503, 'CALL_EXPIRED'],
];
const REPLAYED_HEADER = {
  'Idempotent-Replayed': {
    description: 'true when this is the stored answer of an earlier call with the same Idempotency-Key (not charged again).',
    schema: { type: 'string' as const, enum: ['true'] },
  },
};

/** The route's own documented headers, plus X-Workspace-Id on every route a web session may call, and Idempotency-Key where accepted. */
function headersOf(route: AnyRoute): { headers?: ZodObject } {
  let headers = route.headers as ZodObject | undefined;
  if (route.idempotent) headers = headers ? headers.extend(idempotencyHeaderSchema.shape) : idempotencyHeaderSchema;
  if (route.auth !== 'public') headers = headers ? headers.extend(workspaceHeaderSchema.shape) : workspaceHeaderSchema;
  return headers ? { headers } : {};
}

const toOpenApiPath = (koaPath: string): string => koaPath.replace(/:([A-Za-z_]+)/g, '{$1}');

/** The headers errorHeaders (middleware/errors.ts) sets on an error answer, documented. */
function errorHeadersDoc(status: number, codes: string[]): Pick<ResponseConfig, 'headers'> {
  if (status === 429) return { headers: { ...RATE_HEADERS, 'Retry-After': { description: 'Seconds to wait before retrying.', schema: { type: 'integer' as const } } } };
  if (codes.includes('CREDITS_EXHAUSTED')) {
    return { headers: { [REMAINING_HEADER]: { description: 'On CREDITS_EXHAUSTED: credits left (monthly allowance + purchased balance), as the body\'s `balance`.', schema: { type: 'integer' as const } } } };
  }
  return {};
}

function responsesOf(route: AnyRoute): Record<string, ResponseConfig> {
  const responses: Record<string, ResponseConfig> = {};
  for (const [status, doc] of Object.entries(route.responses)) {
    const contentType = doc.contentType ?? 'application/json';
    responses[status] = {
      description: doc.description,
      ...(doc.schema ? { content: { [contentType]: { schema: doc.schema } } } : {}),
      ...(doc.headers || route.idempotent ? { headers: { ...doc.headers, ...(route.idempotent ? REPLAYED_HEADER : {}) } } : {}),
    };
  }
  const byStatus = new Map<number, string[]>();
  for (const [status, code] of [...route.errors, ...(route.idempotent ? IDEMPOTENCY_ERRORS : []), ...AUTH_ERRORS[route.auth], ...GENERIC_ERRORS]) {
    byStatus.set(status, [...new Set([...(byStatus.get(status) ?? []), code])]);
  }
  for (const [status, codes] of byStatus) {
    const documented = responses[String(status)];
    if (documented && !('$ref' in documented)) {
      // A status with its own documented body (health's 503) still names its codes.
      documented.description = `${documented.description} \`message\`: ${codes.join(', ')}.`;
      continue;
    }
    responses[String(status)] = {
      description: `Error envelope; \`message\` is one of: ${codes.join(', ')}.`,
      content: { 'application/json': { schema: errorEnvelopeSchema } },
      ...errorHeadersDoc(status, codes),
    };
  }
  return responses;
}

/**
 * The multipart form of a dataset route (bodyKind `dataset`): the body's fields as form fields, as
 * coerceFormFields reads them (a list as JSON text, numbers also comma-separated), and the rows as a
 * CSV or JSON file in `file`. The contract accepts this form on every such route; the document only
 * described the JSON body, so a client generated from it could not upload a file.
 */
function multipartFormOf(body: ZodObject): ZodObject {
  const fields = Object.fromEntries(
    Object.entries(body.shape as Record<string, ZodType>).map(([name, field]) => {
      const { kind, element } = fieldKind(field);
      if (kind !== 'array') return [name, field];
      const numbers = element === 'number' ? ', or as comma-separated numbers (`0.1,0.9`)' : '';
      return [name, z.string().optional().openapi({ description: `The \`${name}\` list written as JSON (\`[…]\`)${numbers}.` })];
    }),
  );
  return z.object({
    ...fields,
    file: z
      .string()
      .optional()
      .openapi({ format: 'binary', description: 'The rows as a file: CSV (comma, semicolon, tab or pipe separated; numeric text typed) or a JSON list of objects. One file part at most.' }),
  }).strict();
}

/** The request body of a route: JSON, with the multipart form beside it on dataset routes. */
function requestBodyOf(route: AnyRoute): Pick<NonNullable<RouteConfig['request']>, 'body'> {
  if (route.rawBodyDoc) {
    return { body: { required: true, description: route.rawBodyDoc.description, content: { [route.rawBodyDoc.contentType]: { schema: route.rawBodyDoc.schema } } } };
  }
  if (!route.body) return {};
  const content: Record<string, { schema: ZodType }> = { 'application/json': { schema: route.body } };
  if (route.bodyKind === 'dataset') content['multipart/form-data'] = { schema: multipartFormOf(route.body as ZodObject) };
  return { body: { required: true, content } };
}

/** The OpenAPI 3.1 document, generated from the very route definitions and zod schemas the app serves. */
export function buildOpenApiDocument(routes: AnyRoute[], info: { version: string; serverUrl?: string }) {
  const registry = new OpenAPIRegistry();
  registry.registerComponent('securitySchemes', 'ApiKeyHeader', { type: 'apiKey', in: 'header', name: 'X-API-Key' });
  registry.registerComponent('securitySchemes', 'BearerAuth', {
    type: 'http',
    scheme: 'bearer',
    bearerFormat: 'API key or JWT',
    description: 'An API key (sk-svc-api-…, sk-svc-admin-…) or a web session\'s access token (a JWT from /v1/auth/*; 15 minutes; renew with POST /v1/auth/refresh).',
  });
  for (const route of routes) {
    registry.registerPath({
      method: route.method,
      path: toOpenApiPath(route.path),
      summary: route.summary,
      tags: [route.tag],
      security: SECURITY[route.auth],
      request: {
        ...(route.params ? { params: route.params as ZodObject } : {}),
        ...(route.query ? { query: route.query as ZodObject } : {}),
        ...headersOf(route),
        ...requestBodyOf(route),
      },
      responses: responsesOf(route),
    });
  }
  return new OpenApiGeneratorV31(registry.definitions).generateDocument({
    openapi: '3.1.0',
    info: {
      title: 'Prediction service API',
      version: info.version,
      description: 'Tabular models, zero-shot forecasting, accounts, billing and webhooks. Every error uses the envelope {status, message, messageDetail}; every response carries x-request-id.',
    },
    servers: info.serverUrl ? [{ url: info.serverUrl }] : [],
  });
}
