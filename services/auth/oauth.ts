import crypto from 'node:crypto';
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import * as oidc from 'openid-client';
import { accountExists, createAccountWithWorkspace } from '../accounts';
import { AppError, isUniqueViolation, mapDatabaseError } from '../errors';
import type { OAuthProvider, ProviderId, ProviderProfile } from './oauth-providers';
import { sealWithState, unsealWithState } from './oauth-state';
import { randomToken, sha256 } from './secrets';
import { startSession, type ClientInfo, type SessionPolicy } from './sessions';
import type { SignedIn } from './sign-in';
import type { SignInLimits } from './sign-in-limits';

/** DESIGN.md: state, PKCE and nonce live 10 minutes; the one-time code of the callback 60 seconds. */
export const OAUTH_STATE_SECONDS = 10 * 60;
export const OAUTH_CODE_SECONDS = 60;

export interface OAuthDeps {
  orm: MikroORM;
  limits: SignInLimits;
  session: SessionPolicy;
  providers: Map<ProviderId, OAuthProvider>;
  /** This API as browsers reach it: redirect URIs are built from it. */
  publicUrl: string;
  /** The console; the callback sends the browser to `<FRONTEND_URL>/sign-in#…`. */
  frontendUrl: string;
  isStaffAddress(email: string): boolean;
}

/** The cookie that binds a redirect in flight to the browser that started it (see `start`). */
export interface StateCookie {
  name: string;
  /** Empty: clear it. */
  value: string;
  path: string;
  maxAgeSeconds: number;
  secure: boolean;
}

export interface ListedProvider {
  id: ProviderId;
  name: string;
  authorizeUrl: string;
}

export interface CallbackOutcome {
  /** Where the browser goes next: the console, with `oauth_code` or `oauth_error` in the fragment. */
  location: string;
  clearCookie: StateCookie;
  /** Why the provider step failed (for the log; the browser only gets a short error code). */
  failure: { reason: string; cause?: unknown } | null;
}

type Identity = ProviderProfile & { provider: ProviderId };

const stateInvalid = (): AppError =>
  new AppError('OAUTH_STATE_INVALID', 400, 'This sign-in redirect is unknown, expired, already used or was started in another browser; start signing in again.');
const codeInvalid = (): AppError => new AppError('OAUTH_CODE_INVALID', 400, 'This sign-in code is unknown, expired or already used; sign in with the provider again.');
const staffRequired = (): AppError =>
  new AppError('STAFF_LOGIN_REQUIRED', 403, 'Staff accounts sign in with their password and an emailed code only (POST /v1/auth/login/password).');
const unknownProvider = (id: string): AppError => new AppError('NOT_FOUND', 404, `No sign-in provider ${id.slice(0, 40)} is configured.`);

const PROVIDER_ERROR = /^[A-Za-z0-9_.-]{1,64}$/;

/**
 * Sign-in and linking with GitHub, Google and a generic OpenID Connect provider (DESIGN.md, "Accounts
 * and sessions"). The protocol (authorization URL, PKCE, code exchange, ID-token and nonce checks,
 * UserInfo) is openid-client's; this service keeps the state, binds it to the browser, and decides
 * which account an identity reaches. An identity never takes over an account by claiming its address:
 * only `link`, from a signed-in session, attaches an identity to an existing account.
 */
export class OAuthSignIn {
  constructor(private readonly deps: OAuthDeps) {}

  list(): ListedProvider[] {
    return [...this.deps.providers.values()].map((p) => ({ id: p.id, name: p.name, authorizeUrl: `${this.deps.publicUrl}/v1/auth/oauth/${p.id}` }));
  }

  private provider(id: string): OAuthProvider {
    const provider = this.deps.providers.get(id as ProviderId);
    if (!provider) throw unknownProvider(id);
    return provider;
  }

  private callbackUrl(id: ProviderId): string {
    return `${this.deps.publicUrl}/v1/auth/oauth/${id}/callback`;
  }

  /**
   * The state's own cookie, scoped to the callback path: a callback is accepted only in the browser
   * that started the redirect (RFC 6749 §10.12), so that nobody can finish their own provider sign-in
   * in someone else's browser (login CSRF, or an identity linked to the victim's account). Named
   * after the state, so that two sign-ins in two tabs do not overwrite each other.
   */
  private stateCookie(id: ProviderId, state: string, value: string): StateCookie {
    const callback = new URL(this.callbackUrl(id));
    return {
      name: `oauth_state_${sha256(state).slice(0, 16)}`,
      value,
      path: callback.pathname,
      maxAgeSeconds: value === '' ? 0 : OAUTH_STATE_SECONDS,
      secure: callback.protocol === 'https:',
    };
  }

  /** The provider's authorization URL (state, PKCE S256, and a nonce for OpenID Connect), and the cookie binding it to this browser. */
  async start(providerId: string, client: ClientInfo): Promise<{ location: string; cookie: StateCookie }> {
    const provider = this.provider(providerId);
    await this.deps.limits.consume('oauth', { client: client.ip });
    const config = await provider.configuration();
    const state = oidc.randomState();
    const nonce = oidc.randomNonce();
    const verifier = oidc.randomPKCECodeVerifier();
    const now = new Date();
    await this.deps.orm.em
      .fork()
      .execute(`insert into oauth_states (state_hash, provider, code_verifier, nonce, expires_at) values (?, ?, ?, ?, ?)`, [
        sha256(state),
        provider.id,
        sealWithState(state, verifier),
        sealWithState(state, nonce),
        new Date(now.getTime() + OAUTH_STATE_SECONDS * 1000),
      ]);
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: this.callbackUrl(provider.id),
      scope: provider.scope,
      state,
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      ...(provider.openIdConnect ? { nonce } : {}),
    });
    return { location: url.href, cookie: this.stateCookie(provider.id, state, state) };
  }

  /**
   * The provider's redirect back. A state that is missing, unknown, expired, already used, of another
   * provider or not bound to this browser is a 400 (nothing else happens). With a good state the
   * browser always goes on to the console: with a one-time code, or with `oauth_error` when the
   * provider refused or failed.
   */
  async callback(providerId: string, params: URLSearchParams, cookieOf: (name: string) => string | undefined, client: ClientInfo): Promise<CallbackOutcome> {
    const provider = this.provider(providerId);
    await this.deps.limits.consume('oauth', { client: client.ip });
    const state = params.get('state');
    if (!state || state.length > 200) throw stateInvalid();
    const bound = Buffer.from(cookieOf(this.stateCookie(provider.id, state, state).name) ?? '');
    const sent = Buffer.from(state);
    if (bound.length !== sent.length || !crypto.timingSafeEqual(bound, sent)) throw stateInvalid();

    // Single use: the row is deleted by the statement that reads it.
    const now = new Date();
    const rows = await this.deps.orm.em
      .fork()
      .execute<Array<{ code_verifier: string; nonce: string; live: boolean }>>(
        `delete from oauth_states where state_hash = ? and provider = ? returning code_verifier, nonce, expires_at > ? as live`,
        [sha256(state), provider.id, now],
      );
    const row = rows[0];
    if (!row?.live) throw stateInvalid();
    const clearCookie = this.stateCookie(provider.id, state, '');
    const failed = (error: string, reason: string, cause?: unknown): CallbackOutcome => ({
      location: this.frontend({ oauth_error: error, provider: provider.id }),
      clearCookie,
      failure: { reason, cause },
    });

    const providerError = params.get('error');
    if (providerError !== null) {
      const error = PROVIDER_ERROR.test(providerError) ? providerError : 'provider_error';
      return failed(error, `the provider answered ${error}`);
    }
    let profile: ProviderProfile;
    try {
      const config = await provider.configuration();
      const tokens = await oidc.authorizationCodeGrant(config, new URL(`${this.callbackUrl(provider.id)}?${params.toString()}`), {
        pkceCodeVerifier: unsealWithState(state, row.code_verifier),
        expectedState: state,
        ...(provider.openIdConnect ? { expectedNonce: unsealWithState(state, row.nonce), idTokenExpected: true } : {}),
      });
      profile = await provider.profile(config, tokens);
    } catch (err) {
      return failed('provider_error', 'the code exchange or the profile request failed', err);
    }

    const code = randomToken('oc_');
    await this.deps.orm.em
      .fork()
      .execute(`insert into oauth_codes (code_hash, provider, subject, email, email_verified, full_name, expires_at) values (?, ?, ?, ?, ?, ?, ?)`, [
        sha256(code),
        provider.id,
        profile.subject,
        profile.email,
        profile.emailVerified,
        profile.fullName,
        new Date(now.getTime() + OAUTH_CODE_SECONDS * 1000),
      ]);
    return { location: this.frontend({ oauth_code: code, provider: provider.id }), clearCookie, failure: null };
  }

  /** In the fragment, so that the code never reaches a server log or a Referer (as the magic link's token). */
  private frontend(fragment: Record<string, string>): string {
    return `${this.deps.frontendUrl.replace(/\/$/, '')}/sign-in#${new URLSearchParams(fragment).toString()}`;
  }

  /**
   * Spends a one-time code: the conditional update lets exactly one caller through. A code is spent
   * when presented, whatever the answer that follows (a refused exchange needs a new provider sign-in).
   */
  private async consumeCode(code: string): Promise<Identity> {
    const now = new Date();
    const rows = await this.deps.orm.em
      .fork()
      .execute<Array<{ provider: ProviderId; subject: string; email: string | null; email_verified: boolean; full_name: string | null }>>(
        `update oauth_codes set used_at = ? where code_hash = ? and used_at is null and expires_at > ? returning provider, subject, email, email_verified, full_name`,
        [now, sha256(code), now],
      );
    const row = rows[0];
    if (!row) throw codeInvalid();
    return { provider: row.provider, subject: row.subject, email: row.email, emailVerified: row.email_verified, fullName: row.full_name };
  }

  /**
   * Tokens for the identity of a one-time code: its linked account; or, for an unknown identity with
   * a verified address no account uses, a new account (free plan, one workspace) linked to it.
   */
  async exchange(code: string, client: ClientInfo): Promise<SignedIn> {
    await this.deps.limits.consume('oauth', { client: client.ip });
    const identity = await this.consumeCode(code);
    const em = this.deps.orm.em.fork();
    for (let attempt = 1; ; attempt += 1) {
      try {
        return await em.transactional((tx) => this.signInIdentity(tx, identity, client));
      } catch (err) {
        // Two exchanges of one new identity at once: the loser finds the identity linked on its second try.
        const raced = isUniqueViolation(err, 'oauth_identities_pkey') || isUniqueViolation(err, 'accounts_email_unique');
        if (raced && attempt < 2) continue;
        throw mapDatabaseError(err, { accounts_email_unique: accountExists(), oauth_identities_pkey: accountExists() });
      }
    }
  }

  private async signInIdentity(tx: EntityManager, identity: Identity, client: ClientInfo): Promise<SignedIn> {
    const now = new Date();
    const method = `oauth:${identity.provider}`;
    const linked = await tx.execute<Array<{ id: string; is_staff: boolean; deleted: boolean }>>(
      `select a.id, a.is_staff, a.deleted_at is not null as deleted
         from oauth_identities i join accounts a on a.id = i.account_id
        where i.provider = ? and i.subject = ?`,
      [identity.provider, identity.subject],
    );
    const account = linked[0];
    if (account) {
      if (account.is_staff) throw staffRequired();
      if (account.deleted) throw new AppError('ACCOUNT_EXISTS', 409, 'The account of this identity is being deleted; try again in a minute.');
      // The address the provider has now, shown in the profile's identities.
      await tx.execute(`update oauth_identities set email = ? where provider = ? and subject = ?`, [identity.email, identity.provider, identity.subject]);
      return { ...(await startSession(tx, this.deps.session, { accountId: account.id, method, client }, now)), created: false };
    }

    const email = identity.email;
    if (email !== null && this.deps.isStaffAddress(email)) throw staffRequired();
    // Checked before the address is looked up: an unverified claim must not even learn whether an account uses it.
    if (email === null || !identity.emailVerified) {
      throw new AppError(
        'OAUTH_EMAIL_UNVERIFIED',
        403,
        'The provider did not give a verified email address, so no account can be created from this identity; verify the address with the provider, or sign in another way and link it.',
      );
    }
    const taken = await tx.execute<Array<{ id: string }>>(`select id from accounts where email = ?`, [email]);
    if (taken.length > 0) {
      throw new AppError(
        'ACCOUNT_EXISTS',
        409,
        'An account already uses this address. Sign in to it another way (emailed link or code), then link this provider from the signed-in session.',
      );
    }
    const { account: created } = await createAccountWithWorkspace(tx, { email, plan: 'free', fullName: identity.fullName }, now);
    await tx.execute(`insert into oauth_identities (provider, subject, account_id, email, created_at) values (?, ?, ?, ?, ?)`, [
      identity.provider,
      identity.subject,
      created.id,
      email,
      now,
    ]);
    return { ...(await startSession(tx, this.deps.session, { accountId: created.id, method, client }, now)), created: true };
  }

  /**
   * Attaches the identity of a one-time code to the signed-in account: the only way an identity
   * reaches an existing account. Idempotent for an identity already linked to this account.
   */
  async link(accountId: string, providerId: string, code: string, client: ClientInfo): Promise<void> {
    const provider = this.provider(providerId);
    await this.deps.limits.consume('oauth', { client: client.ip });
    const identity = await this.consumeCode(code);
    if (identity.provider !== provider.id) {
      throw new AppError('OAUTH_PROVIDER_MISMATCH', 400, `This code comes from a ${identity.provider} sign-in, not ${provider.id}; link it on /v1/auth/oauth/${identity.provider}/link.`);
    }
    await this.deps.orm.em.fork().transactional(async (tx) => {
      const owner = await tx.execute<Array<{ is_staff: boolean }>>(`select is_staff from accounts where id = ? and deleted_at is null for update`, [accountId]);
      // A linked identity would let a staff account in without its password and code.
      if (owner[0]?.is_staff) throw staffRequired();
      const inserted = await tx.execute<Array<{ account_id: string }>>(
        `insert into oauth_identities (provider, subject, account_id, email, created_at) values (?, ?, ?, ?, ?)
         on conflict (provider, subject) do nothing returning account_id`,
        [identity.provider, identity.subject, accountId, identity.email, new Date()],
      );
      if (inserted.length > 0) return;
      const existing = await tx.execute<Array<{ account_id: string }>>(`select account_id from oauth_identities where provider = ? and subject = ?`, [
        identity.provider,
        identity.subject,
      ]);
      if (existing[0]?.account_id !== accountId) {
        throw new AppError('IDENTITY_LINKED_ELSEWHERE', 409, 'This identity is already linked to another account.');
      }
      await tx.execute(`update oauth_identities set email = ? where provider = ? and subject = ?`, [identity.email, identity.provider, identity.subject]);
    });
  }
}
