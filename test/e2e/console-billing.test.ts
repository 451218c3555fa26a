import type { Browser, Page, Request } from 'playwright-core';
import { loadConfig } from '../../config/env';
import { ensureConsoleBuilt } from '../../scripts/lib/console-build';
import { freePort } from '../../scripts/lib/ports';
import type { StripeStandIn } from '../../scripts/lib/stripe-standin';
import { newId } from '../../services/ids';
import { startBillingHarness } from '../support/billing';
import { launchChromium, screenshot, seriousAxeViolations } from '../support/chromium';
import { storedRefreshToken, storeRefreshToken } from '../support/console-session';
import { mailedCode, type Harness } from '../support/harness';

/**
 * The billing page in Debian's Chromium against the real stack with the Stripe stand-in: its
 * checkout page "pays" and sends the signed events Stripe would, and BILLING_RETURN_URL brings the
 * browser back to the console. One person's session, in order: free plan, a refused purchase,
 * subscribing to build, buying credits, the portal.
 */
describe('the console’s billing page in a real browser, with the Stripe stand-in', () => {
  let h: Harness;
  let stripe: StripeStandIn;
  let base: string;
  let browser: Browser;
  let page: Page;
  const email = `${newId('account').toLowerCase()}@example.test`;
  const pageErrors: string[] = [];

  const heading = (name: string | RegExp) => page.getByRole('heading', { level: 1, name });
  const text = async (testId: string) => ((await page.getByTestId(testId).textContent()) ?? '').trim();
  /** The subscription as the API answers it to this account (through a session of its own). */
  const apiSubscription = async (bearer: string) => (await h.http.get('/v1/billing/subscription').set('Authorization', bearer)).body as { plan: string; monthly_allowance: number; allowance_remaining: number; purchased_balance: number };
  let bearer = '';

  beforeAll(async () => {
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    await ensureConsoleBuilt(loadConfig({}).CONSOLE_DIR);
    let harness: { h: Harness; stripe: StripeStandIn };
    [harness, browser] = await Promise.all([
      // Checkout and the portal send the customer back to the console's billing page.
      startBillingHarness({ devMailbox: true, port, config: { BILLING_RETURN_URL: `${base}/console/billing` } }),
      launchChromium(),
    ]);
    ({ h, stripe } = harness);
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    page = await context.newPage();
    page.on('pageerror', (err) => pageErrors.push(err.message));
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await h?.stop();
  });

  afterEach(() => {
    expect(pageErrors).toEqual([]);
  });

  test('signs in through the mail catcher; billing lists the plans with their prices and the free plan’s credits; no serious accessibility violation', async () => {
    await page.goto(`${base}/console/sign-in`);
    const before = h.mailbox.lastId();
    await page.getByLabel('Email address').fill(email);
    await page.getByRole('button', { name: 'Email me a sign-in link' }).click();
    const { code } = await mailedCode(h, email, before);
    await page.getByLabel('Six-digit code').fill(code);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await heading('Models').waitFor();
    // A session of the same account for the test's own reads of the API.
    const refresh = await storedRefreshToken(page);
    const renewed = await h.http.post('/v1/auth/refresh').send({ refresh_token: refresh });
    expect(renewed.status).toBe(200);
    const pair = renewed.body as { access_token: string; refresh_token: string };
    bearer = `Bearer ${pair.access_token}`;
    await storeRefreshToken(page, pair.refresh_token);

    await page.getByRole('link', { name: 'Billing' }).click();
    await heading('Billing').waitFor();
    const rows = page.getByTestId('plans').locator('tbody tr');
    await rows.first().waitFor();
    const table = await rows.evaluateAll((trs) => trs.map((tr) => [...tr.querySelectorAll('td')].slice(0, 5).map((td) => td.textContent ?? '')));
    expect(table).toEqual([
      ['free', '$0.00', '1,000', '1', 'not offered'],
      ['build', '$49.00', '20,000', '10', '$0.50'],
      ['pro', '$299.00', '200,000', '50', '$0.40'],
      ['growth', '$999.00', '1,000,000', '200', '$0.30'],
      ['contract', 'by contract', 'by contract', 'by contract', 'not offered'],
    ]);
    await page.getByTestId('plan').waitFor();
    expect(await text('plan')).toBe('free');
    expect(await text('subscription-status')).toBe('none');
    expect(await text('allowance')).toBe('1,000 of 1,000');
    expect(await text('purchased')).toBe('0');
    // No Stripe customer yet: no portal to open.
    expect(await page.getByRole('button', { name: 'Manage payment details and invoices' }).count()).toBe(0);
    const violations = await seriousAxeViolations(page);
    expect(violations).toEqual([]);
  });

  test('buying credits on the free plan shows the service’s sentence (409 PLAN_HAS_NO_UNIT_PRICE) and opens no payment page', async () => {
    // The sentence the API answers to a free account, straight from the API.
    const direct = await h.http.post('/v1/billing/credits').set('Authorization', bearer).send({ units: 100 });
    expect(direct.status).toBe(409);
    const envelope = direct.body as { message: string; messageDetail: string };
    expect(envelope.message).toBe('PLAN_HAS_NO_UNIT_PRICE');
    await page.getByLabel('Credits', { exact: true }).fill('100');
    await page.getByRole('button', { name: 'Buy 100 credits' }).click();
    const alert = page.getByRole('alert').filter({ hasText: 'PLAN_HAS_NO_UNIT_PRICE' });
    await alert.waitFor();
    expect(await alert.locator('p').first().textContent()).toBe(envelope.messageDetail);
    expect(page.url()).toBe(`${base}/console/billing`);
  });

  test('subscribes to build: the Checkout page of the stand-in is paid, the browser comes back, the plan becomes build and the allowance rises to 20,000', async () => {
    await page.getByRole('button', { name: 'Choose build' }).click();
    await page.waitForURL((url) => url.href.startsWith(`${stripe.url}/checkout/`));
    await page.getByRole('heading', { name: 'Subscription' }).waitFor();
    await page.getByRole('button', { name: 'Pay 49.00 USD' }).click();
    // Back on the console (BILLING_RETURN_URL), which follows the subscription until Stripe's event lands.
    await page.waitForURL((url) => url.origin === base && url.pathname === '/console/billing');
    await page.getByText('You are now on the build plan.').waitFor({ timeout: 20_000 });
    await page.getByTestId('plan').filter({ hasText: 'build' }).waitFor();
    expect(await text('subscription-status')).toBe('active');
    expect(await text('allowance')).toBe('20,000 of 20,000');
    expect(page.url()).toBe(`${base}/console/billing`);
    const sub = await apiSubscription(bearer);
    expect(sub).toEqual(expect.objectContaining({ plan: 'build', monthly_allowance: 20_000, allowance_remaining: 20_000 }));
    // The banner's credits follow too.
    await page.getByTestId('credits-left').filter({ hasText: '20,000' }).waitFor();
    expect(await page.getByRole('button', { name: 'Choose build' }).count()).toBe(0);
  });

  test('buys 100 credits: a second click while the browser leaves for the payment page opens no second purchase; the page is paid, the purchase settles and the purchased balance becomes 100', async () => {
    await page.getByLabel('Credits', { exact: true }).fill('100');
    await page.getByText('Price: $0.50').waitFor();
    // The payment page answers late: between the service's answer and the browser leaving, a second
    // click would open a second Checkout Session.
    const slowCheckout = `${stripe.url}/checkout/**`;
    await page.route(slowCheckout, async (route) => {
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      await route.continue();
    });
    const purchases: string[] = [];
    const onRequest = (request: Request) => {
      if (request.method() === 'POST' && request.url().endsWith('/v1/billing/credits')) purchases.push(request.url());
    };
    page.on('request', onRequest);
    // A second click 500 ms after the first, once the service has answered and while the browser is leaving.
    await page.evaluate(`(() => {
      const buy = [...document.querySelectorAll('button')].find((b) => b.textContent.trim() === 'Buy 100 credits');
      buy.addEventListener('click', () => setTimeout(() => buy.click(), 500), { once: true });
    })()`);
    await page.getByRole('button', { name: 'Buy 100 credits' }).click();
    await page.waitForURL((url) => url.href.startsWith(`${stripe.url}/checkout/`));
    page.off('request', onRequest);
    expect(purchases).toHaveLength(1);
    await page.unroute(slowCheckout);
    await page.getByRole('heading', { name: 'Credit purchase' }).waitFor();
    await page.getByRole('button', { name: 'Pay 0.50 USD' }).click();
    await page.waitForURL((url) => url.origin === base && url.pathname === '/console/billing');
    await page.getByText('100 credits were added to your balance.').waitFor({ timeout: 20_000 });
    await page.getByTestId('purchased').filter({ hasText: /^100$/ }).waitFor();
    expect(await text('billing-credits-remaining')).toBe('20,100');
    expect((await apiSubscription(bearer)).purchased_balance).toBe(100);
    const violations = await seriousAxeViolations(page);
    expect(violations).toEqual([]);
    await screenshot(page, 'billing');
  });

  test('the portal button opens the billing portal URL the service answers', async () => {
    const direct = await h.http.post('/v1/billing/portal').set('Authorization', bearer).send({});
    expect(direct.status).toBe(200);
    const portal = (direct.body as { url: string }).url;
    expect(portal.startsWith(`${stripe.url}/portal/cus_`)).toBe(true);
    await page.getByRole('button', { name: 'Manage payment details and invoices' }).click();
    await page.waitForURL(portal);
    await page.getByRole('heading', { name: 'Billing portal (Stripe stand-in)' }).waitFor();
  });
});
