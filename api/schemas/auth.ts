import { PLAN_NAMES } from '../../config/plans';
import { displayName, isoDateTime, paginationSchema } from './common';
import { z } from '../zod';

/**
 * An address as the service keeps it: trimmed, lower-cased, a valid mailbox that mail can reach: at
 * most 254 characters, 64 before the @ (RFC 5321 §4.5.3.1). Longer ones passed here and the mail
 * server refused them, so a ninth probe's sign-in with 300 characters before the @ answered 503
 * SERVICE_UNAVAILABLE, which a client retries for ever.
 */
export const emailField = z
  .string()
  .trim()
  .toLowerCase()
  .max(254)
  .pipe(z.email().refine((address) => address.lastIndexOf('@') <= 64, 'an address holds at most 64 characters before the @'))
  .openapi({ type: 'string', format: 'email', maxLength: 254, example: 'ada@example.com' });
const codeField = z.string().trim().regex(/^\d{6}$/, 'a six-digit code').openapi({ example: '042917' });
const opaque = (max: number) => z.string().min(1).max(max);

export const emailBodySchema = z.object({ email: emailField }).strict().openapi('EmailBody');

export const nextStepSchema = z
  .object({
    next_step: z.enum(['magic_link', 'password']).openapi({
      description: '`magic_link`: a link and a code were emailed (exchange either on /v1/auth/magic-link/verify). `password`: a staff address; continue on /v1/auth/login/password.',
    }),
  })
  .openapi('LoginNextStep');

export const magicLinkSentSchema = z
  .object({
    next_step: z.literal('magic_link'),
    expires_in: z.number().int().openapi({ description: 'Seconds the emailed link and code stay valid.' }),
  })
  .openapi('MagicLinkSent', { description: 'The same answer for every address, known or not. At most one mail per address per minute.' });

export const magicLinkVerifyBodySchema = z
  .object({
    token: opaque(200).optional().openapi({ description: 'The token of the emailed link (after `#token=`).' }),
    email: emailField.optional().openapi({ description: 'With `code`: the address. With `token` (optional): the address the link names (after `&email=`); a token mailed to another address is refused and stays unspent.' }),
    code: codeField.optional(),
  })
  .strict()
  .openapi('MagicLinkVerify', { description: 'Either `token` (and optionally its `email`), or `email` and `code`.' });

export const passwordBodySchema = z.object({ email: emailField, password: z.string().min(1).max(1024) }).strict().openapi('StaffPassword');
export const codeSentSchema = z.object({ next_step: z.literal('code'), expires_in: z.number().int() }).openapi('StaffCodeSent');
export const codeBodySchema = z.object({ email: emailField, code: codeField }).strict().openapi('StaffCode');

export const refreshBodySchema = z.object({ refresh_token: opaque(200) }).strict().openapi('RefreshTokenBody');

export const logoutBodySchema = z
  .object({
    refresh_token: opaque(200),
    everywhere: z.boolean().optional().openapi({
      description:
        'true: end every session of the account (every browser and token pair signed in), not only this one. Only a token of a session still signed in can do it; any other token changes nothing.',
    }),
  })
  .strict()
  .openapi('LogoutBody');

export const tokenPairSchema = z
  .object({
    token_type: z.literal('Bearer'),
    access_token: z.string().openapi({ description: 'JWT (EdDSA) sent as `Authorization: Bearer …`.' }),
    expires_in: z.number().int().openapi({ description: 'Seconds the access token is valid.' }),
    refresh_token: z.string().openapi({ description: 'Opaque, single use: renew with POST /v1/auth/refresh. Presenting a used one again signs the account out everywhere.' }),
    refresh_token_expires_at: isoDateTime,
    account_id: z.string(),
    session_id: z.string(),
    account_created: z.boolean().openapi({ description: 'This sign-in created the account.' }),
  })
  .openapi('TokenPair');

export const workspaceSchema = z
  .object({ id: z.string().openapi({ example: 'ws_8fQ2mZ0aXc3VbN7rT1kLpq' }), name: z.string(), created_at: isoDateTime, updated_at: isoDateTime })
  .openapi('Workspace');

export const profileSchema = z
  .object({
    id: z.string(),
    email: z.string(),
    full_name: z.string().nullable(),
    plan: z.enum(PLAN_NAMES),
    is_staff: z.boolean(),
    created_at: isoDateTime,
    credits: z.object({
      monthly_allowance: z.number().int(),
      allowance_remaining: z.number().int(),
      purchased_balance: z.number().int(),
      remaining: z.number().int(),
    }),
    workspaces: z.array(workspaceSchema).openapi({ description: 'Oldest first; the first is a web session\'s workspace when X-Workspace-Id is not sent.' }),
    identities: z.array(z.object({ provider: z.string(), email: z.string().nullable(), linked_at: isoDateTime })),
  })
  .openapi('Profile');

export const updateProfileBodySchema = z.object({ full_name: displayName() }).strict().openapi('UpdateProfile');
export const deleteAccountBodySchema = z
  .object({ email: z.string().trim().min(1).max(320).openapi({ description: 'The account\'s own address, as confirmation.' }) })
  .strict()
  .openapi('DeleteAccount');

export const workspaceListSchema = z.object({ data: z.array(workspaceSchema), pagination: paginationSchema }).openapi('WorkspaceList');
export const workspaceBodySchema = z.object({ name: displayName() }).strict().openapi('WorkspaceName');
export const workspaceParamsSchema = z.object({ workspaceId: z.string().min(1).max(64) });

export const providersSchema = z
  .object({
    methods: z.array(z.enum(['magic_link', 'password'])).openapi({ description: 'Sign-in methods that need no provider.' }),
    providers: z.array(z.object({ id: z.enum(['github', 'google', 'oidc']), name: z.string(), authorize_url: z.string() })),
  })
  .openapi('SignInProviders');

export const geoIpQuerySchema = z.object({ ip: z.string().min(2).max(64).optional().openapi({ description: 'Default: the caller.' }) });
export const geoIpSchema = z
  .object({ ip: z.string(), country: z.string().openapi({ example: 'FR' }), country_name: z.string(), continent: z.string() })
  .openapi('GeoIp');
