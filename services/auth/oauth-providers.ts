import * as oidc from 'openid-client';
import { z } from 'zod';
import type { AppConfig } from '../../config/env';
import { emailSchema } from '../accounts';
import { AppError } from '../errors';
import { cleanDisplayName } from '../display-names';

export const PROVIDER_IDS = ['github', 'google', 'oidc'] as const;
export type ProviderId = (typeof PROVIDER_IDS)[number];

/** What a finished provider sign-in tells us about the person, normalised across providers. */
export interface ProviderProfile {
  subject: string;
  /** Trimmed and lower-cased like every address the service keeps; null when the provider gave none (or not a valid one). */
  email: string | null;
  emailVerified: boolean;
  fullName: string | null;
}

type Tokens = Awaited<ReturnType<typeof oidc.authorizationCodeGrant>>;

export interface OAuthProvider {
  id: ProviderId;
  name: string;
  /** OpenID Connect: an ID token is required and its nonce checked. GitHub is plain OAuth 2. */
  openIdConnect: boolean;
  scope: string;
  /** The client's Configuration (discovered once, lazily; a failed discovery is retried at the next call). */
  configuration(): Promise<oidc.Configuration>;
  profile(config: oidc.Configuration, tokens: Tokens): Promise<ProviderProfile>;
}

/** Outbound calls to a provider give up after this long: a hung provider must not hold a request. */
const PROVIDER_TIMEOUT_SECONDS = 10;

const unavailable = (name: string, cause: unknown): AppError =>
  new AppError('OAUTH_PROVIDER_UNAVAILABLE', 503, `${name} cannot be reached right now; try again in a moment.`, {}, cause);

function normalisedEmail(value: unknown): string | null {
  const parsed = emailSchema.safeParse(value);
  return parsed.success && parsed.data.length <= 320 ? parsed.data : null;
}

/** A profile's name held to the rules of a name (the provider's user chose it: a bidi override or a NUL, which PostgreSQL refuses, was stored as sent or failed the sign-in). */
function fullNameOf(value: unknown): string | null {
  return typeof value === 'string' ? cleanDisplayName(value) : null;
}

/** Caches the discovered Configuration; a rejected discovery is forgotten so that the next call tries again. */
function lazily(name: string, load: () => Promise<oidc.Configuration>): () => Promise<oidc.Configuration> {
  let pending: Promise<oidc.Configuration> | null = null;
  return () => {
    pending ??= load().then(
      (config) => {
        config.timeout = PROVIDER_TIMEOUT_SECONDS;
        return config;
      },
      (err: unknown) => {
        pending = null;
        throw unavailable(name, err);
      },
    );
    return pending;
  };
}

const LOOPBACK_HOSTS = new Set(['127.0.0.1', 'localhost', '[::1]']);

/**
 * openid-client refuses plain HTTP; an `http://` issuer is accepted only on a loopback address (a
 * provider running next to the service in development and in the tests), never elsewhere.
 */
function insecureAllowed(issuer: URL): boolean {
  return issuer.protocol === 'http:' && LOOPBACK_HOSTS.has(issuer.hostname);
}

// Providers put `email_verified` as a boolean, a few as the string "true".
const oidcClaimsSchema = z.object({
  sub: z.string().min(1).max(255),
  email: z.unknown().optional(),
  email_verified: z.union([z.boolean(), z.enum(['true', 'false'])]).optional(),
  name: z.unknown().optional(),
});

function openIdProvider(id: 'google' | 'oidc', name: string, issuer: URL, clientId: string, clientSecret: string): OAuthProvider {
  return {
    id,
    name,
    openIdConnect: true,
    scope: 'openid email profile',
    // client_secret_basic: the OpenID Connect default, which every conforming provider supports.
    configuration: lazily(name, () =>
      oidc.discovery(issuer, clientId, { client_secret: clientSecret }, oidc.ClientSecretBasic(clientSecret), {
        timeout: PROVIDER_TIMEOUT_SECONDS,
        ...(insecureAllowed(issuer) ? { execute: [oidc.allowInsecureRequests] } : {}),
      }),
    ),
    async profile(config, tokens) {
      const idToken = tokens.claims();
      if (!idToken) throw new Error('the token response has no ID token');
      let claims: Record<string, unknown> = { ...idToken };
      // Many providers (oidc-provider by default) put email and name in the UserInfo answer only;
      // openid-client checks that its subject is the ID token's.
      if (config.serverMetadata().userinfo_endpoint) {
        claims = { ...claims, ...(await oidc.fetchUserInfo(config, tokens.access_token, idToken.sub)) };
      }
      const parsed = oidcClaimsSchema.parse(claims);
      const email = normalisedEmail(parsed.email);
      return {
        subject: parsed.sub,
        email,
        emailVerified: email !== null && (parsed.email_verified === true || parsed.email_verified === 'true'),
        fullName: fullNameOf(parsed.name),
      };
    },
  };
}

/** GitHub's fixed endpoints (it publishes no discovery document). */
const GITHUB = {
  authorize: 'https://github.com/login/oauth/authorize',
  token: 'https://github.com/login/oauth/access_token',
  user: 'https://api.github.com/user',
  emails: 'https://api.github.com/user/emails',
};

const githubUserSchema = z.object({ id: z.number().int(), login: z.string(), name: z.string().nullable().optional(), email: z.string().nullable().optional() });
const githubEmailsSchema = z.array(z.object({ email: z.string(), primary: z.boolean(), verified: z.boolean() }));

async function githubJson(config: oidc.Configuration, accessToken: string, url: string): Promise<unknown> {
  const headers = new Headers({ accept: 'application/vnd.github+json', 'user-agent': 'prediction-service', 'x-github-api-version': '2022-11-28' });
  const response = await oidc.fetchProtectedResource(config, accessToken, new URL(url), 'GET', undefined, headers);
  if (!response.ok) throw new Error(`GitHub answered ${response.status} to ${url}`);
  return response.json();
}

function githubProvider(clientId: string, clientSecret: string): OAuthProvider {
  return {
    id: 'github',
    name: 'GitHub',
    openIdConnect: false,
    // read:user for the profile, user:email for the verified primary address (which /user may hide).
    scope: 'read:user user:email',
    configuration: lazily('GitHub', async () =>
      new oidc.Configuration(
        { issuer: 'https://github.com/login/oauth', authorization_endpoint: GITHUB.authorize, token_endpoint: GITHUB.token },
        clientId,
        { client_secret: clientSecret },
        oidc.ClientSecretPost(clientSecret),
      ),
    ),
    async profile(config, tokens) {
      const user = githubUserSchema.parse(await githubJson(config, tokens.access_token, GITHUB.user));
      const emails = githubEmailsSchema.parse(await githubJson(config, tokens.access_token, GITHUB.emails));
      const primary = emails.find((e) => e.primary);
      const email = normalisedEmail(primary?.email ?? user.email);
      return {
        // The numeric id: a login can be renamed and then taken by someone else.
        subject: String(user.id),
        email,
        emailVerified: email !== null && primary?.verified === true && normalisedEmail(primary.email) === email,
        fullName: fullNameOf(user.name) ?? fullNameOf(user.login),
      };
    },
  };
}

/** The providers whose credentials are configured, in a fixed order; the others do not exist for the service. */
export function configuredProviders(config: AppConfig): Map<ProviderId, OAuthProvider> {
  // Half a configuration is a deployment mistake: say so at start-up rather than hide the provider.
  const groups: Array<[string, Array<string | undefined>, string[]]> = [
    ['GitHub', [config.GITHUB_CLIENT_ID, config.GITHUB_CLIENT_SECRET], ['GITHUB_CLIENT_ID', 'GITHUB_CLIENT_SECRET']],
    ['Google', [config.GOOGLE_CLIENT_ID, config.GOOGLE_CLIENT_SECRET], ['GOOGLE_CLIENT_ID', 'GOOGLE_CLIENT_SECRET']],
    ['OpenID Connect', [config.OIDC_ISSUER, config.OIDC_CLIENT_ID, config.OIDC_CLIENT_SECRET], ['OIDC_ISSUER', 'OIDC_CLIENT_ID', 'OIDC_CLIENT_SECRET']],
  ];
  for (const [name, values, names] of groups) {
    const set = values.filter((v) => v !== undefined).length;
    if (set > 0 && set < values.length) throw new Error(`Invalid configuration: ${name} sign-in needs all of ${names.join(', ')}.`);
  }
  const providers = new Map<ProviderId, OAuthProvider>();
  if (config.GITHUB_CLIENT_ID && config.GITHUB_CLIENT_SECRET) providers.set('github', githubProvider(config.GITHUB_CLIENT_ID, config.GITHUB_CLIENT_SECRET));
  if (config.GOOGLE_CLIENT_ID && config.GOOGLE_CLIENT_SECRET) {
    providers.set('google', openIdProvider('google', 'Google', new URL('https://accounts.google.com'), config.GOOGLE_CLIENT_ID, config.GOOGLE_CLIENT_SECRET));
  }
  if (config.OIDC_ISSUER && config.OIDC_CLIENT_ID && config.OIDC_CLIENT_SECRET) {
    providers.set('oidc', openIdProvider('oidc', config.OIDC_DISPLAY_NAME, new URL(config.OIDC_ISSUER), config.OIDC_CLIENT_ID, config.OIDC_CLIENT_SECRET));
  }
  return providers;
}
