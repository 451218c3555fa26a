import crypto from 'node:crypto';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { loadConfig } from '../../config/env';
import { ensureConsoleBuilt } from '../../scripts/lib/console-build';
import { freePort } from '../../scripts/lib/ports';
import { newId } from '../../services/ids';
import { launchChromium, seriousAxeViolations } from '../support/chromium';
import { storedRefreshToken, storeRefreshToken } from '../support/console-session';
import { startOpenIdProvider, type OpenIdProvider } from '../support/oidc-provider';
import { mailedCode, startHarness, type Harness } from '../support/harness';

const CLIENT_ID = 'prediction-service-e2e';
const CLIENT_SECRET = crypto.randomBytes(24).toString('base64url');
const PROVIDER_NAME = 'Test SSO';

/**
 * OAuth in the console, in Debian's Chromium: a real OpenID provider (oidc-provider, in a process of
 * its own, with its development login and consent pages) and the real service, whose callback sends
 * the browser to the console's sign-in page with a one-time code. Each test uses a browser context
 * of its own (its own cookies, storage and provider session); the browser is shared.
 */
describe('OAuth sign-in and linking in the console, with a real OpenID provider', () => {
  let h: Harness;
  let base: string;
  let issuer: string;
  let provider: OpenIdProvider | undefined;
  let browser: Browser;
  const contexts: BrowserContext[] = [];
  const pageErrors: string[] = [];

  /** The provider identity the linking test links (used again by the test after it). */
  let ssoLogin = '';
  const address = (prefix: string) => `${prefix}-${newId('account').slice(4).toLowerCase()}@example.test`;

  async function newPage(): Promise<Page> {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    contexts.push(context);
    const page = await context.newPage();
    page.on('pageerror', (err) => pageErrors.push(err.message));
    return page;
  }

  const onProvider = (url: URL) => url.origin === issuer;

  /**
   * The person at the provider: its login form (any password; the login becomes the subject, and the
   * verified address when it is one), then its consent form, in the browser. A provider session from
   * an earlier sign-in in this context may skip either. Returns once the browser has left the provider.
   */
  async function throughProvider(page: Page, login: string): Promise<void> {
    await page.waitForURL((url) => onProvider(url) || url.origin === base);
    for (let step = 0; step < 4 && onProvider(new URL(page.url())); step += 1) {
      const current = page.url();
      if ((await page.locator('input[name="login"]').count()) > 0) {
        await page.locator('input[name="login"]').fill(login);
        await page.locator('input[name="password"]').fill('any password');
        await page.getByRole('button', { name: 'Sign-in' }).click();
      } else {
        await page.getByRole('button', { name: 'Continue' }).click();
      }
      await page.waitForURL((url) => url.href !== current && (!onProvider(url) || url.pathname.startsWith('/interaction/')));
    }
    expect(new URL(page.url()).origin).toBe(base);
  }

  async function signInByMail(page: Page, email: string): Promise<void> {
    await page.goto(`${base}/console/sign-in`);
    const before = h.mailbox.lastId();
    await page.getByLabel('Email address').fill(email);
    await page.getByRole('button', { name: 'Email me a sign-in link' }).click();
    const { code } = await mailedCode(h, email, before);
    await page.getByLabel('Six-digit code').fill(code);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await page.getByRole('heading', { level: 1, name: 'Models' }).waitFor();
  }

  /** The account behind the page's session, read from the API with a session of its own. */
  async function accountOfPage(page: Page): Promise<{ id: string; email: string; identities: Array<{ provider: string; email: string | null }> }> {
    const refresh = await storedRefreshToken(page);
    const renewed = await h.http.post('/v1/auth/refresh').send({ refresh_token: refresh });
    expect(renewed.status).toBe(200);
    const pair = renewed.body as { access_token: string; refresh_token: string };
    await storeRefreshToken(page, pair.refresh_token);
    const me = await h.http.get('/v1/auth/me').set('Authorization', `Bearer ${pair.access_token}`);
    expect(me.status).toBe(200);
    return me.body as { id: string; email: string; identities: Array<{ provider: string; email: string | null }> };
  }

  beforeAll(async () => {
    const [port, providerPort] = await Promise.all([freePort(), freePort()]);
    base = `http://127.0.0.1:${port}`;
    [provider, browser] = await Promise.all([
      startOpenIdProvider({ port: providerPort, clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, redirectUri: `${base}/v1/auth/oauth/oidc/callback` }),
      launchChromium(),
      ensureConsoleBuilt(loadConfig({}).CONSOLE_DIR),
    ]);
    issuer = provider.issuer;
    h = await startHarness({
      port,
      devMailbox: true,
      config: { PUBLIC_URL: base, FRONTEND_URL: `${base}/console`, OIDC_ISSUER: issuer, OIDC_CLIENT_ID: CLIENT_ID, OIDC_CLIENT_SECRET: CLIENT_SECRET, OIDC_DISPLAY_NAME: PROVIDER_NAME },
    });
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await h?.stop();
    await provider?.stop();
  });

  afterEach(async () => {
    await Promise.all(contexts.splice(0).map((c) => c.close()));
    expect(pageErrors).toEqual([]);
  });

  test('the provider’s button on the sign-in page goes through its login and consent pages and lands in the console signed in to a new account', async () => {
    const page = await newPage();
    const email = address('sso');
    await page.goto(`${base}/console/sign-in`);
    const button = page.getByRole('link', { name: `Continue with ${PROVIDER_NAME}` });
    await button.waitFor();
    expect(await seriousAxeViolations(page)).toEqual([]);
    await button.click();
    await throughProvider(page, email);
    await page.getByRole('heading', { level: 1, name: 'Models' }).waitFor();
    // The one-time code left the address bar at once.
    expect(page.url()).toBe(`${base}/console/models`);
    await page.getByText(email).waitFor();
    const account = await accountOfPage(page);
    expect(account).toEqual(expect.objectContaining({ email, identities: [expect.objectContaining({ provider: 'oidc', email })] }));
  });

  test('a code this tab did not ask for is not spent: the page says so and stays signed out, and the code still works for whoever started the flow', async () => {
    const page = await newPage();
    const arrivals: string[] = [];
    page.on('framenavigated', (frame) => {
      if (frame === page.mainFrame() && frame.url().includes('oauth_code=')) arrivals.push(frame.url());
    });
    // Straight to the service's authorize route, as a link from elsewhere would: no flow marked by the console.
    await page.goto(`${base}/v1/auth/oauth/oidc`);
    await throughProvider(page, address('unasked'));
    await page.getByRole('alert').filter({ hasText: 'was not started from this tab' }).waitFor();
    expect(page.url()).toBe(`${base}/console/sign-in`);
    expect(await storedRefreshToken(page)).toBeNull();
    const code = new URLSearchParams(new URL(arrivals[0] ?? 'http://x/').hash.slice(1)).get('oauth_code');
    expect(code).toMatch(/^oc_/);
    expect((await h.http.post('/v1/auth/oauth/exchange').send({ code })).status).toBe(200);
  });

  test('a provider’s refusal (#oauth_error=access_denied, here the provider’s Cancel) shows a readable message naming the provider on the sign-in page, also when the provider list answers late', async () => {
    const page = await newPage();
    await page.goto(`${base}/console/sign-in`);
    await page.getByRole('link', { name: `Continue with ${PROVIDER_NAME}` }).click();
    await page.waitForURL((url) => onProvider(url) && url.pathname.startsWith('/interaction/'));
    // The provider list answers late on the way back: the notice must name the provider, never show its id meanwhile.
    await page.route('**/v1/auth/providers', async (route) => {
      await new Promise((resolve) => setTimeout(resolve, 800));
      await route.continue();
    });
    await page.getByRole('link', { name: '[ Cancel ]' }).click();
    const notice = page.getByTestId('oauth-error');
    await notice.waitFor();
    expect(await notice.locator('p').first().textContent()).toBe(
      `Signing in with ${PROVIDER_NAME} was cancelled: ${PROVIDER_NAME} reports that access was denied or the request was cancelled. Nothing was changed; try again when you are ready.`,
    );
    expect(page.url()).toBe(`${base}/console/sign-in`);
    expect(await page.getByRole('alert').count()).toBe(1);
  });

  test('an account made by email code links the provider from its account page; after signing out, the provider signs in to that same account', async () => {
    const page = await newPage();
    const email = address('by-mail');
    // The provider's identity may carry another address than the account's.
    ssoLogin = address('linked');
    await signInByMail(page, email);
    const before = await accountOfPage(page);
    expect(before.identities).toEqual([]);

    await page.getByRole('link', { name: 'Account' }).click();
    await page.getByRole('heading', { level: 1, name: 'Account' }).waitFor();
    const link = page.getByRole('button', { name: `Link ${PROVIDER_NAME}` });
    await link.waitFor();
    expect(await seriousAxeViolations(page)).toEqual([]);
    await link.click();
    await throughProvider(page, ssoLogin);
    // The sign-in page linked the code with the session (not exchanged it), then came back here.
    await page.getByText(`${PROVIDER_NAME} is linked to your account: you can now sign in with it.`).waitFor();
    expect(page.url()).toBe(`${base}/console/account`);
    await page.getByTestId('identities').filter({ hasText: `${PROVIDER_NAME} (${ssoLogin})` }).waitFor();
    expect(await page.getByRole('button', { name: `Link ${PROVIDER_NAME}` }).count()).toBe(0);
    const linked = await accountOfPage(page);
    expect(linked.id).toBe(before.id);
    expect(linked.identities).toEqual([expect.objectContaining({ provider: 'oidc', email: ssoLogin })]);

    await page.getByRole('button', { name: 'Sign out', exact: true }).click();
    await page.getByRole('heading', { level: 1, name: 'Sign in' }).waitFor();
    expect(await storedRefreshToken(page)).toBeNull();
    await page.getByRole('link', { name: `Continue with ${PROVIDER_NAME}` }).click();
    await throughProvider(page, ssoLogin);
    await page.getByRole('heading', { level: 1, name: 'Models' }).waitFor();
    await page.getByText(email).waitFor();
    expect((await accountOfPage(page)).id).toBe(before.id);
  });

  test('linking an identity already linked to another account shows the service’s sentence (409 IDENTITY_LINKED_ELSEWHERE) on the account page', async () => {
    expect(ssoLogin).not.toBe('');
    const page = await newPage();
    await signInByMail(page, address('other'));
    await page.getByRole('link', { name: 'Account' }).click();
    await page.getByRole('button', { name: `Link ${PROVIDER_NAME}` }).click();
    await throughProvider(page, ssoLogin);
    const alert = page.getByRole('alert').filter({ hasText: 'IDENTITY_LINKED_ELSEWHERE' });
    await alert.waitFor();
    expect(page.url()).toBe(`${base}/console/account`);
    expect(await alert.locator('p').first().textContent()).not.toMatch(/undefined|\[object/);
    expect((await accountOfPage(page)).identities).toEqual([]);
    expect(await page.getByRole('button', { name: `Link ${PROVIDER_NAME}` }).count()).toBe(1);
  });
});
