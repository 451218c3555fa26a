import crypto from 'node:crypto';
import pino from 'pino';
import { webhookSettings } from '../../services/webhooks/settings';
import { createActivities } from '../../activities';
import { freePort } from '../../scripts/lib/ports';
import { sealWithState } from '../../services/auth/oauth-state';
import { newId } from '../../services/ids';
import { Browser, type BrowserResponse } from '../support/browser';
import { startOpenIdProvider, type OpenIdProvider } from '../support/oidc-provider';
import { STAFF_DOMAIN, expectError, signInByMail, startHarness, type Harness } from '../support/harness';

const CLIENT_ID = 'prediction-service-test';
const CLIENT_SECRET = crypto.randomBytes(24).toString('base64url');
const FRONTEND_URL = 'http://127.0.0.1:1/console';

let h: Harness;
let base: string;
let provider: OpenIdProvider | undefined;

beforeAll(async () => {
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  provider = await startOpenIdProvider({ port: await freePort(), clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, redirectUri: `${base}/v1/auth/oauth/oidc/callback` });
  const issuer = provider.issuer;
  h = await startHarness({
    port,
    config: { PUBLIC_URL: base, FRONTEND_URL, OIDC_ISSUER: issuer, OIDC_CLIENT_ID: CLIENT_ID, OIDC_CLIENT_SECRET: CLIENT_SECRET, OIDC_DISPLAY_NAME: 'Test SSO' },
  });
});

afterAll(async () => {
  await h?.stop();
  await provider?.stop();
});

const newAddress = (prefix = 'oauth') => `${prefix}-${newId('account').slice(4).toLowerCase()}@example.test`;
const browser = () => new Browser({ checker: h.checker, origin: base });
const sha256 = (value: string) => crypto.createHash('sha256').update(value).digest('hex');
const fragmentOf = (location: string) => new URLSearchParams(new URL(location).hash.slice(1));

function formOf(html: string): { action: string; prompt: string | null } {
  const action = /<form[^>]*action="([^"]+)"/.exec(html)?.[1];
  if (!action) throw new Error(`no form in the provider's page: ${html.slice(0, 300)}`);
  return { action: action.replace(/&amp;/g, '&'), prompt: /name="prompt" value="([a-z]+)"/.exec(html)?.[1] ?? null };
}

interface ProviderRun {
  /** The authorization URL our service redirected to. */
  authorizeUrl: string;
  /** The provider's redirect to our callback, not yet followed (`untilCallback`), or our callback's redirect to the console. */
  location: string;
  callback: BrowserResponse | null;
}

/**
 * Drives a sign-in as a person would: our authorize route, the provider's login form (any password;
 * the login is the subject, and the email when it is an address), its consent form, then our
 * callback, which sends the browser to the console. `untilCallback` stops before our callback.
 */
async function throughProvider(b: Browser, login: string, options: { untilCallback?: boolean; abort?: boolean } = {}): Promise<ProviderRun> {
  const start = await b.request('GET', `${base}/v1/auth/oauth/oidc`);
  expect(start.status).toBe(302);
  const authorizeUrl = start.location!;
  let res = await b.request('GET', authorizeUrl);
  for (let step = 0; step < 20; step += 1) {
    if (res.status >= 300 && res.status < 400) {
      const next = res.location!;
      if (next.startsWith(FRONTEND_URL)) return { authorizeUrl, location: next, callback: res };
      if (next.startsWith(`${base}/v1/auth/oauth/oidc/callback`) && options.untilCallback) return { authorizeUrl, location: next, callback: null };
      res = await b.request('GET', next);
    } else if (res.status === 200) {
      const form = formOf(res.text);
      if (options.abort) {
        res = await b.request('GET', `${form.action.replace(/\/(login|confirm)$/, '')}/abort`);
      } else if (form.prompt === 'login') {
        res = await b.request('POST', form.action, { prompt: 'login', login, password: 'any password' });
      } else {
        res = await b.request('POST', form.action, { prompt: 'consent' });
      }
    } else {
      throw new Error(`unexpected ${res.status} from ${res.location ?? ''}: ${res.text.slice(0, 300)}`);
    }
  }
  throw new Error('too many redirects');
}

/** A full provider sign-in; the one-time code from the console URL. */
async function oauthCode(login: string, b = browser()): Promise<string> {
  const run = await throughProvider(b, login);
  const code = fragmentOf(run.location).get('oauth_code');
  if (!code) throw new Error(`no code in ${run.location}`);
  return code;
}

async function identities(subject: string) {
  return h.orm.em.fork().execute<Array<{ account_id: string; email: string | null }>>(`select account_id, email from oauth_identities where provider = 'oidc' and subject = ?`, [subject]);
}

describe('providers', () => {
  test('only the configured provider is listed (oidc, not github or google), with its authorize URL', async () => {
    const res = await h.http.get('/v1/auth/providers');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ methods: ['magic_link', 'password'], providers: [{ id: 'oidc', name: 'Test SSO', authorize_url: `${base}/v1/auth/oauth/oidc` }] });
  });

  test('an unconfigured or unknown provider is a 404 on authorize, callback and link', async () => {
    expectError(await h.http.get('/v1/auth/oauth/github'), 404, 'NOT_FOUND');
    expectError(await h.http.get('/v1/auth/oauth/nope'), 404, 'NOT_FOUND');
    expectError(await h.http.get('/v1/auth/oauth/google/callback?state=x&code=y'), 404, 'NOT_FOUND');
    const session = await signInByMail(h);
    expectError(await h.http.post('/v1/auth/oauth/github/link').set('Authorization', session.bearer).send({ code: 'oc_x' }), 404, 'NOT_FOUND');
  });

  test('the redirect carries state, an S256 PKCE challenge and a nonce; the database keeps only the state hash and sealed values', async () => {
    const start = await browser().request('GET', `${base}/v1/auth/oauth/oidc`);
    expect(start.status).toBe(302);
    expect(start.text).toBe('');
    const url = new URL(start.location!);
    const q = url.searchParams;
    expect({
      redirect_uri: q.get('redirect_uri'),
      client_id: q.get('client_id'),
      response_type: q.get('response_type'),
      method: q.get('code_challenge_method'),
      scope: q.get('scope'),
    }).toEqual({ redirect_uri: `${base}/v1/auth/oauth/oidc/callback`, client_id: CLIENT_ID, response_type: 'code', method: 'S256', scope: 'openid email profile' });
    const state = q.get('state')!;
    const nonce = q.get('nonce')!;
    expect(q.get('code_challenge')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(start.setCookies.join('\n')).toContain(`=${state}; Path=/v1/auth/oauth/oidc/callback; Max-Age=600; HttpOnly; SameSite=Lax`);
    const rows = await h.orm.em
      .fork()
      .execute<Array<{ state_hash: string; code_verifier: string; nonce: string; ttl: number }>>(
        `select state_hash, code_verifier, nonce, extract(epoch from expires_at - now())::int as ttl from oauth_states where state_hash = ?`,
        [sha256(state)],
      );
    expect(rows).toHaveLength(1);
    expect(rows[0]!.nonce).not.toContain(nonce);
    expect(rows[0]!.ttl).toBeGreaterThan(590);
    expect(rows[0]!.ttl).toBeLessThanOrEqual(600);
  });
});

describe('sign-in', () => {
  test('a first sign-in creates the account (free plan, one workspace) linked to the identity; a second one reaches the same account', async () => {
    const email = newAddress();
    const b = browser();
    const run = await throughProvider(b, email);
    const landing = new URL(run.location);
    expect(`${landing.origin}${landing.pathname}`).toBe(`${FRONTEND_URL}/sign-in`);
    expect(landing.search).toBe('');
    expect(fragmentOf(run.location).get('provider')).toBe('oidc');
    const code = fragmentOf(run.location).get('oauth_code')!;
    expect(code).toMatch(/^oc_/);

    const first = await h.http.post('/v1/auth/oauth/exchange').send({ code });
    expect(first.status).toBe(200);
    expect(first.body.account_created).toBe(true);
    const me = await h.http.get('/v1/auth/me').set('Authorization', `Bearer ${first.body.access_token}`);
    expect({ email: me.body.email, plan: me.body.plan, workspaces: me.body.workspaces.length, name: me.body.full_name, identities: me.body.identities.map((i: { provider: string; email: string }) => [i.provider, i.email]) }).toEqual({
      email,
      plan: 'free',
      workspaces: 1,
      name: `Test ${email.split('@')[0]}`,
      identities: [['oidc', email]],
    });
    const sessions = await h.orm.em.fork().execute<Array<{ method: string }>>(`select method from sessions where id = ?`, [first.body.session_id]);
    expect(sessions).toEqual([{ method: 'oauth:oidc' }]);

    // The same browser still has its provider session: the provider may skip its forms this time.
    const again = await h.http.post('/v1/auth/oauth/exchange').send({ code: await oauthCode(email, b) });
    expect({ status: again.status, account: again.body.account_id, created: again.body.account_created }).toEqual({ status: 200, account: first.body.account_id, created: false });
    expect(await identities(email)).toEqual([{ account_id: first.body.account_id, email }]);
  });

  test('a refusal at the provider sends the browser to the console with oauth_error, and no code', async () => {
    const run = await throughProvider(browser(), newAddress(), { abort: true });
    const fragment = fragmentOf(run.location);
    expect({ error: fragment.get('oauth_error'), provider: fragment.get('provider'), code: fragment.get('oauth_code') }).toEqual({ error: 'access_denied', provider: 'oidc', code: null });
  });

  test('a tampered state is a 400 OAUTH_STATE_INVALID and spends nothing: the real callback still works', async () => {
    const b = browser();
    const run = await throughProvider(b, newAddress(), { untilCallback: true });
    const tampered = new URL(run.location);
    const state = tampered.searchParams.get('state')!;
    tampered.searchParams.set('state', `${state.slice(0, -2)}${state.endsWith('AA') ? 'BB' : 'AA'}`);
    const refused = await b.request('GET', tampered.href);
    expect({ status: refused.status, message: (refused.body as { message: string }).message }).toEqual({ status: 400, message: 'OAUTH_STATE_INVALID' });
    const missing = new URL(run.location);
    missing.searchParams.delete('state');
    expect((await b.request('GET', missing.href)).status).toBe(400);
    const nonAscii = new URL(run.location);
    const accented = 'é'.repeat(8);
    nonAscii.searchParams.set('state', accented);
    // A binding cookie as long in characters but not in bytes: still a plain 400.
    b.cookies('127.0.0.1').set(`oauth_state_${sha256(accented).slice(0, 16)}`, { value: 'e'.repeat(8), path: '/' });
    expect((await b.request('GET', nonAscii.href)).status).toBe(400);

    const real = await b.request('GET', run.location);
    expect(real.status).toBe(302);
    expect(fragmentOf(real.location!).get('oauth_code')).toMatch(/^oc_/);
  });

  test('a callback replayed (same state twice) is a 400 OAUTH_STATE_INVALID', async () => {
    const b = browser();
    const run = await throughProvider(b, newAddress(), { untilCallback: true });
    // The replay carries the binding cookie again, as a replaying attacker holding it would.
    const cookies = new Map(b.cookies('127.0.0.1'));
    const first = await b.request('GET', run.location);
    expect(first.status).toBe(302);
    for (const [name, cookie] of cookies) b.cookies('127.0.0.1').set(name, cookie);
    const replay = await b.request('GET', run.location);
    expect({ status: replay.status, message: (replay.body as { message: string }).message }).toEqual({ status: 400, message: 'OAUTH_STATE_INVALID' });
  });

  test('a callback opened in another browser (no binding cookie) is a 400 OAUTH_STATE_INVALID: nobody finishes their sign-in in a victim\'s browser', async () => {
    const attacker = browser();
    const run = await throughProvider(attacker, newAddress(), { untilCallback: true });
    const victim = browser();
    const res = await victim.request('GET', run.location);
    expect({ status: res.status, message: (res.body as { message: string }).message }).toEqual({ status: 400, message: 'OAUTH_STATE_INVALID' });
    expect((await attacker.request('GET', run.location)).status).toBe(302);
  });

  test('an expired state is a 400 OAUTH_STATE_INVALID', async () => {
    const b = browser();
    const run = await throughProvider(b, newAddress(), { untilCallback: true });
    const state = new URL(run.location).searchParams.get('state')!;
    await h.orm.em.fork().execute(`update oauth_states set expires_at = now() - interval '1 second' where state_hash = ?`, [sha256(state)]);
    expect((await b.request('GET', run.location)).status).toBe(400);
  });

  test.each([
    ['an ID token whose nonce is not the one this redirect sent', 'nonce', /unexpected ID Token .{0,2}nonce.{0,2} claim value/],
    ['a PKCE verifier that does not match the challenge sent', 'code_verifier', /invalid_grant/],
  ])('%s is refused: the console gets oauth_error=provider_error and no code', async (_what, column, why) => {
    const b = browser();
    const run = await throughProvider(b, newAddress(), { untilCallback: true });
    const state = new URL(run.location).searchParams.get('state')!;
    // What an attacker replaying someone else's provider answer would hold: the right state, other secrets.
    const other = column === 'nonce' ? 'another-nonce' : crypto.randomBytes(32).toString('base64url');
    await h.orm.em.fork().execute(`update oauth_states set ${column} = ? where state_hash = ?`, [sealWithState(state, other), sha256(state)]);
    const res = await b.request('GET', run.location);
    expect(res.status).toBe(302);
    const fragment = fragmentOf(res.location!);
    expect({ error: fragment.get('oauth_error'), code: fragment.get('oauth_code') }).toEqual({ error: 'provider_error', code: null });
    // Refused by the check meant (openid-client's nonce check; the provider's PKCE check), not by accident.
    expect(h.logLines.filter((l) => l.includes('OAuth sign-in failed')).at(-1)).toMatch(why);
  });

  test('a one-time code works once: the second exchange is a 400 OAUTH_CODE_INVALID', async () => {
    const code = await oauthCode(newAddress());
    expect((await h.http.post('/v1/auth/oauth/exchange').send({ code })).status).toBe(200);
    expectError(await h.http.post('/v1/auth/oauth/exchange').send({ code }), 400, 'OAUTH_CODE_INVALID');
    expectError(await h.http.post('/v1/auth/oauth/exchange').send({ code: 'oc_unknown' }), 400, 'OAUTH_CODE_INVALID');
  });

  test('two concurrent exchanges of one code give exactly one token pair', async () => {
    const code = await oauthCode(newAddress());
    const answers = await Promise.all([0, 1].map(() => h.http.post('/v1/auth/oauth/exchange').send({ code })));
    expect(answers.map((r) => r.status).sort()).toEqual([200, 400]);
  });

  test('an expired code (older than 60 seconds) is a 400 OAUTH_CODE_INVALID and creates no account', async () => {
    const email = newAddress();
    const code = await oauthCode(email);
    const ttl = await h.orm.em.fork().execute<Array<{ ttl: number }>>(`select extract(epoch from expires_at - now())::int as ttl from oauth_codes where code_hash = ?`, [sha256(code)]);
    expect(ttl[0]!.ttl).toBeLessThanOrEqual(60);
    await h.orm.em.fork().execute(`update oauth_codes set expires_at = now() - interval '1 second' where code_hash = ?`, [sha256(code)]);
    expectError(await h.http.post('/v1/auth/oauth/exchange').send({ code }), 400, 'OAUTH_CODE_INVALID');
    expect(await h.orm.em.fork().execute(`select id from accounts where email = ?`, [email])).toEqual([]);
  });

  test('an unverified provider address creates no account: 403 OAUTH_EMAIL_UNVERIFIED', async () => {
    const email = newAddress('unverified');
    expectError(await h.http.post('/v1/auth/oauth/exchange').send({ code: await oauthCode(email) }), 403, 'OAUTH_EMAIL_UNVERIFIED');
    expect(await h.orm.em.fork().execute(`select id from accounts where email = ?`, [email])).toEqual([]);
    expect(await identities(email)).toEqual([]);
  });

  test('a staff address never signs in by a provider: 403 STAFF_LOGIN_REQUIRED', async () => {
    const email = `oauth-${newId('account').slice(4).toLowerCase()}@${STAFF_DOMAIN}`;
    expectError(await h.http.post('/v1/auth/oauth/exchange').send({ code: await oauthCode(email) }), 403, 'STAFF_LOGIN_REQUIRED');
    expect(await h.orm.em.fork().execute(`select id from accounts where email = ?`, [email])).toEqual([]);
  });
});

describe('no takeover by address, and linking', () => {
  test('an identity claiming the address of an existing account gets 409 ACCOUNT_EXISTS and is linked to nothing; once linked from a session it reaches that account', async () => {
    const owner = await signInByMail(h, newAddress());
    const refused = await h.http.post('/v1/auth/oauth/exchange').send({ code: await oauthCode(owner.email) });
    expectError(refused, 409, 'ACCOUNT_EXISTS');
    expect(await identities(owner.email)).toEqual([]);
    const rows = await h.orm.em
      .fork()
      .execute<Array<{ accounts: string; oauth_sessions: string }>>(
        `select (select count(*) from accounts where email = ?) as accounts, (select count(*) from sessions where account_id = ? and method like 'oauth:%') as oauth_sessions`,
        [owner.email, owner.accountId],
      );
    expect(rows).toEqual([{ accounts: '1', oauth_sessions: '0' }]);

    // The way in the 409 points to: signed in another way, the owner links the identity.
    const linked = await h.http.post('/v1/auth/oauth/oidc/link').set('Authorization', owner.bearer).send({ code: await oauthCode(owner.email) });
    expect(linked.status).toBe(204);
    const signedIn = await h.http.post('/v1/auth/oauth/exchange').send({ code: await oauthCode(owner.email) });
    expect({ status: signedIn.status, account: signedIn.body.account_id, created: signedIn.body.account_created }).toEqual({ status: 200, account: owner.accountId, created: false });
  });

  test('an identity linked from a signed-in session (another address) then signs in to that account, and linking it again is idempotent', async () => {
    const owner = await signInByMail(h, newAddress());
    const other = newAddress('github-like');
    expect((await h.http.post('/v1/auth/oauth/oidc/link').set('Authorization', owner.bearer).send({ code: await oauthCode(other) })).status).toBe(204);
    expect((await h.http.post('/v1/auth/oauth/oidc/link').set('Authorization', owner.bearer).send({ code: await oauthCode(other) })).status).toBe(204);
    expect(await identities(other)).toEqual([{ account_id: owner.accountId, email: other }]);

    const signedIn = await h.http.post('/v1/auth/oauth/exchange').send({ code: await oauthCode(other) });
    expect({ status: signedIn.status, account: signedIn.body.account_id, created: signedIn.body.account_created }).toEqual({ status: 200, account: owner.accountId, created: false });
    expect(await h.orm.em.fork().execute(`select id from accounts where email = ?`, [other])).toEqual([]);
  });

  test('linking an identity linked to another account is a 409 IDENTITY_LINKED_ELSEWHERE and moves nothing', async () => {
    const email = newAddress();
    const created = await h.http.post('/v1/auth/oauth/exchange').send({ code: await oauthCode(email) });
    expect(created.status).toBe(200);
    const someoneElse = await signInByMail(h, newAddress());
    expectError(await h.http.post('/v1/auth/oauth/oidc/link').set('Authorization', someoneElse.bearer).send({ code: await oauthCode(email) }), 409, 'IDENTITY_LINKED_ELSEWHERE');
    expect(await identities(email)).toEqual([{ account_id: created.body.account_id, email }]);
  });

  test('linking needs a web session: 401 AUTH_REQUIRED without one and with an API key; the code is not spent', async () => {
    const code = await oauthCode(newAddress());
    expectError(await h.http.post('/v1/auth/oauth/oidc/link').send({ code }), 401, 'AUTH_REQUIRED');
    const { apiKey } = await h.provision();
    expectError(await h.http.post('/v1/auth/oauth/oidc/link').set('X-API-Key', apiKey).send({ code }), 401, 'AUTH_REQUIRED');
    expect((await h.http.post('/v1/auth/oauth/exchange').send({ code })).status).toBe(200);
  });

  test('a code of another provider is a 400 OAUTH_PROVIDER_MISMATCH and links nothing', async () => {
    const owner = await signInByMail(h, newAddress());
    const code = `oc_${crypto.randomBytes(32).toString('base64url')}`;
    const subject = `g-${newId('account')}`;
    // Only oidc is configured here, so the code of a Google sign-in is written as the callback would.
    await h.orm.em
      .fork()
      .execute(`insert into oauth_codes (code_hash, provider, subject, email, email_verified, expires_at) values (?, 'google', ?, null, false, now() + interval '60 seconds')`, [sha256(code), subject]);
    expectError(await h.http.post('/v1/auth/oauth/oidc/link').set('Authorization', owner.bearer).send({ code }), 400, 'OAUTH_PROVIDER_MISMATCH');
    expect(await h.orm.em.fork().execute(`select 1 from oauth_identities where subject = ?`, [subject])).toEqual([]);
  });
});

describe('sweep', () => {
  test('the periodic sweep prunes expired OAuth states and codes, expired challenges, and sessions expired for more than a day', async () => {
    const em = h.orm.em.fork();
    const live = await browser().request('GET', `${base}/v1/auth/oauth/oidc`);
    const liveState = sha256(new URL(live.location!).searchParams.get('state')!);
    const stale = await browser().request('GET', `${base}/v1/auth/oauth/oidc`);
    const staleState = sha256(new URL(stale.location!).searchParams.get('state')!);
    await em.execute(`update oauth_states set expires_at = now() - interval '1 second' where state_hash = ?`, [staleState]);
    const staleCode = await oauthCode(newAddress());
    await em.execute(`update oauth_codes set expires_at = now() - interval '1 second' where code_hash = ?`, [sha256(staleCode)]);
    const oldSession = await signInByMail(h, newAddress());
    const recentSession = await signInByMail(h, newAddress());
    await em.execute(`update sessions set expires_at = now() - interval '25 hours' where id = (select session_id from refresh_tokens where token_hash = ?)`, [sha256(oldSession.refreshToken)]);
    await em.execute(`update refresh_tokens set expires_at = now() - interval '25 hours' where token_hash = ?`, [sha256(oldSession.refreshToken)]);
    await em.execute(`update sessions set expires_at = now() - interval '1 hour' where id = (select session_id from refresh_tokens where token_hash = ?)`, [sha256(recentSession.refreshToken)]);

    const activities = createActivities({ orm: h.orm, logger: pino({ level: 'silent' }), enginePool: h.enginePool, strandedAfterMs: 120_000, fitHeartbeatTimeoutMs: 30_000, webhooks: webhookSettings(h.config).delivery, stripe: null });
    const swept = await activities.sweepEndedKeys();
    expect(swept.oauthStatesPruned).toBeGreaterThanOrEqual(1);
    expect(swept.oauthCodesPruned).toBeGreaterThanOrEqual(1);
    expect(swept.sessionsPruned).toBeGreaterThanOrEqual(1);

    const left = await em.execute<Array<{ states: string[]; codes: string; tokens: string[] }>>(
      `select array(select state_hash from oauth_states where state_hash in (?, ?) order by 1) as states,
              (select count(*) from oauth_codes where code_hash = ?) as codes,
              array(select token_hash from refresh_tokens where token_hash in (?, ?) order by 1) as tokens`,
      [liveState, staleState, sha256(staleCode), sha256(oldSession.refreshToken), sha256(recentSession.refreshToken)],
    );
    expect(left).toEqual([{ states: [liveState], codes: '0', tokens: [sha256(recentSession.refreshToken)] }]);
  });
});
