import { z } from '../zod';

export const oauthProviderParamsSchema = z.object({
  provider: z.string().min(1).max(40).openapi({ example: 'github', description: '`github`, `google` or `oidc`; 404 when that provider is not configured.' }),
});

/**
 * RFC 6749 limits these values to printable ASCII (VSCHAR); the bounds keep a whole callback URL well
 * under Node's 16 KiB request-head limit even when every character is percent-encoded.
 */
const callbackParam = (description: string, max: number) =>
  z
    .string()
    .max(max)
    .regex(/^[\x20-\x7e]*$/, 'printable ASCII (RFC 6749)')
    .optional()
    .openapi({ description });

/** What providers send back (RFC 6749 §4.1.2 and §4.1.2.1, RFC 9207's `iss`); the exchange itself reads the raw query. */
export const oauthCallbackQuerySchema = z.object({
  state: callbackParam('The state of the redirect this callback finishes.', 128),
  code: callbackParam('The provider\'s authorization code.', 1024),
  iss: callbackParam('The provider\'s issuer (RFC 9207), checked when the provider announces it.', 256),
  error: callbackParam('The provider\'s refusal (`access_denied`, …).', 64),
  error_description: callbackParam('The provider\'s explanation of `error`.', 512),
  scope: callbackParam('Scopes granted (some providers echo them).', 512),
});

export const oauthCodeBodySchema = z
  .object({
    code: z.string().min(1).max(200).openapi({ description: 'The one-time code of the callback (`oauth_code` in the fragment of the console URL); valid 60 seconds, single use.' }),
  })
  .strict()
  .openapi('OAuthCode');
