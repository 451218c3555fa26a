import fs from 'node:fs';
import type { AddressInfo } from 'node:net';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import request from 'supertest';
import { loadConfig } from '../../config/env';
import { ensureConsoleBuilt } from '../../scripts/lib/console-build';
import { newId } from '../../services/ids';
import { launchChromium, screenshot, seriousAxeViolations } from '../support/chromium';
import { storedRefreshToken, storeRefreshToken } from '../support/console-session';
import { churnRows, toCsv, withoutTarget } from '../support/datasets';
import { mailedCode, startHarness, type Harness } from '../support/harness';
import { WebhookReceiver } from '../support/webhook-receiver';

/**
 * The console in Debian's Chromium against the real stack (PostgreSQL, Temporal, the worker, the
 * mail catcher): one person's journey from signing in to revoking a key. The tests run in order and
 * share the signed-in page, as a person's session would.
 */
describe('the web console in a real browser', () => {
  let h: Harness;
  let base: string;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let receiver: WebhookReceiver;
  const email = `${newId('account').toLowerCase()}@example.test`;
  const pageErrors: string[] = [];

  const expectAccessible = async (what: string, on: Page = page) => {
    const violations = await seriousAxeViolations(on);
    expect({ page: what, violations }).toEqual({ page: what, violations: [] });
  };
  const heading = (name: string | RegExp) => page.getByRole('heading', { level: 1, name });
  /** Polls `check` (through locators: the page's own globals are not typed in the tests' tsconfig). */
  const until = async (what: string, check: () => Promise<boolean>, timeoutMs = 15_000) => {
    const deadline = Date.now() + timeoutMs;
    while (!(await check())) {
      if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  };
  const creditsLeft = async () => Number((await page.getByTestId('credits-left').textContent())?.replace(/[^0-9]/g, ''));

  beforeAll(async () => {
    // The harness serves the build from the configuration's default place (config/env.ts).
    await ensureConsoleBuilt(loadConfig({}).CONSOLE_DIR);
    [h, browser, receiver] = await Promise.all([
      startHarness({ devMailbox: true, config: { WEBHOOKS_ALLOW_LOOPBACK_HTTP: true } }),
      launchChromium(),
      new WebhookReceiver().start(),
    ]);
    base = `http://127.0.0.1:${(h.server.address() as AddressInfo).port}`;
    context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: base });
    page = await context.newPage();
    page.on('pageerror', (err) => pageErrors.push(err.message));
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await receiver?.stop();
    await h?.stop();
  });

  afterEach(() => {
    // An uncaught exception in the page is a bug even when the assertions passed.
    expect(pageErrors).toEqual([]);
  });

  test('the console is served as static files: deep links get the page, hashed assets are immutable, a missing asset is a 404', async () => {
    // Plain supertest: these pages are outside the JSON API, so the harness's contract check does not apply.
    const deep = await request(h.server).get('/console/models/mdl_anything');
    expect(deep.status).toBe(200);
    expect(deep.headers['content-type']).toMatch(/text\/html/);
    expect(deep.headers['cache-control']).toBe('no-cache');
    expect(deep.headers['content-security-policy']).toContain("script-src 'self'");
    const asset = /src="(\/console\/assets\/[^"]+\.js)"/.exec(deep.text)?.[1] ?? '';
    expect(asset).not.toBe('');
    const js = await request(h.server).get(asset);
    expect(js.status).toBe(200);
    expect(js.headers['content-type']).toMatch(/javascript/);
    expect(js.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    const again = await request(h.server).get(asset).set('If-None-Match', js.headers.etag ?? '');
    expect(again.status).toBe(304);
    const missing = await request(h.server).get('/console/assets/gone-123.js');
    expect(missing.status).toBe(404);
    expect(missing.body).toEqual(expect.objectContaining({ status: 'error', message: 'NOT_FOUND' }));
    // Static pages are not part of the JSON API's contract.
    const doc = (await request(h.server).get('/openapi.json')).body as { paths: Record<string, unknown> };
    expect(Object.keys(doc.paths).filter((p) => p.startsWith('/console') || p.startsWith('/docs'))).toEqual([]);
  });

  test('signs in with the code mailed to the local mail catcher; the sign-in page has no serious accessibility violation', async () => {
    await page.goto(`${base}/console`);
    await page.waitForURL(/\/console\/sign-in$/);
    // The console routes on the client: the URL changes before the page has rendered, so wait for the heading.
    await heading('Sign in').waitFor();
    await expectAccessible('sign-in');
    await screenshot(page, 'sign-in');
    const before = h.mailbox.lastId();
    await page.getByLabel('Email address').fill(email);
    await page.getByRole('button', { name: 'Email me a sign-in link' }).click();
    const { code } = await mailedCode(h, email, before);
    await page.getByLabel('Six-digit code').fill(code);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await heading('Models').waitFor();
    await page.getByText(email).waitFor();
    expect(await creditsLeft()).toBe(1000);
    await expectAccessible('models (empty)');
  });

  test('creates a model from an uploaded CSV: columns offered, validation report and trial verdict before training, progress, then the model page', async () => {
    await page.getByRole('link', { name: 'New model' }).click();
    await heading('New model').waitFor();
    await page.getByLabel('CSV file').setInputFiles({ name: 'churn.csv', mimeType: 'text/csv', buffer: Buffer.from(toCsv(churnRows(150))) });
    await page.getByText('churn.csv: 150 rows, 4 columns.').waitFor();
    expect(await page.getByLabel('Column to predict').locator('option').allTextContents()).toEqual(['x1', 'x2', 'colour', 'churned']);
    await page.getByLabel('Column to predict').selectOption('churned');
    // The engine catalogue arrives from GET /v1/engines after the page: wait for it, as a person would.
    await page.getByLabel('Engine').locator('option').first().waitFor({ state: 'attached' });
    expect(await page.getByLabel('Engine').locator('option').count()).toBeGreaterThan(0);
    await page.getByLabel('Name (optional)').fill('Churn e2e');
    await page.getByRole('button', { name: 'Check the data' }).click();
    const verdict = page.getByTestId('trial-verdict');
    await verdict.waitFor();
    expect(await verdict.getAttribute('data-level')).toMatch(/^(usable|weak|no_signal)$/);
    await expect(page.getByTestId('validation-report').textContent()).resolves.toContain('The data can be trained on.');
    await expectAccessible('new model with its validation report');
    await screenshot(page, 'new-model');

    await page.getByRole('button', { name: 'Train the model' }).click();
    // Training takes seconds: the page says so while the call runs.
    await page.getByRole('status').filter({ hasText: 'Training the model' }).waitFor();
    await heading('Churn e2e').waitFor({ timeout: 60_000 });
    expect(await page.getByTestId('model-status').textContent()).toBe('serving');
    await expect(page.getByTestId('versions').textContent()).resolves.toMatch(/v1\s*serving/);
    // Top factors as a bar chart, with the plotted values in a table.
    const factors = await page.getByTestId('top-factors').locator('tbody tr td:first-child').allTextContents();
    expect(factors.length).toBeGreaterThan(0);
    expect(factors.every((f) => ['x1', 'x2', 'colour'].includes(f))).toBe(true);
    await page.getByText('Last 30 days:').waitFor();
  });

  test('scores a CSV on the model page, downloads the predictions and sees the credits drop by the rows scored', async () => {
    const before = await creditsLeft();
    const rows = withoutTarget(churnRows(20, 7), 'churned');
    await page.getByRole('group', { name: 'Rows to score' }).getByLabel('CSV file').setInputFiles({ name: 'to-score.csv', mimeType: 'text/csv', buffer: Buffer.from(toCsv(rows)) });
    await page.getByRole('button', { name: 'Score 20 rows' }).click();
    await page.getByTestId('score-summary').waitFor({ timeout: 30_000 });
    expect(await page.getByTestId('score-summary').textContent()).toBe(`Scored 20 rows for 20 credits; ${before - 20} credits left.`);
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Download the predictions (CSV)' }).click()]);
    const csv = fs.readFileSync(await download.path(), 'utf8').trim().split(/\r?\n/);
    expect(csv[0]).toBe('x1,x2,colour,prediction,proba_no,proba_yes,request_id');
    expect(csv).toHaveLength(21);
    expect(csv[1]?.startsWith(`${rows[0]?.x1},${rows[0]?.x2},${rows[0]?.colour},`)).toBe(true);
    await until('the credits drop by 20', async () => (await creditsLeft()) === before - 20);
    await page.getByTestId('prediction-history').waitFor();
    expect(await page.getByTestId('prediction-history').locator('tbody tr').count()).toBe(20);
    await expectAccessible('model page');
    await screenshot(page, 'model');
  });

  test('forecasts a pasted series: the plotted values in the page equal the API’s CSV; the backtest verdict with per-window scores', async () => {
    await page.getByRole('link', { name: 'Forecast' }).click();
    await heading('Forecast playground').waitFor();
    const before = await creditsLeft();
    const series = Array.from({ length: 56 }, (_, i) => ({ date: new Date(Date.UTC(2026, 0, 1 + i)).toISOString().slice(0, 10), sales: Math.round((100 + 12 * Math.sin((2 * Math.PI * i) / 7) + 0.5 * i) * 100) / 100 }));
    await page.getByLabel('or paste CSV text (header row first)').fill(toCsv(series));
    await page.getByText('56 rows, columns date, sales.').waitFor();
    await page.getByLabel('Horizon (steps)').fill('7');
    await page.getByLabel('Quantiles').fill('0.1, 0.9');
    await page.getByRole('button', { name: 'Backtest (free)' }).click();
    await page.getByTestId('backtest-verdict').waitFor({ timeout: 30_000 });
    expect(await page.getByTestId('backtest-verdict').textContent()).toMatch(/^(usable|no signal)$/);
    expect(await page.getByRole('region', { name: 'Backtest windows' }).locator('tbody tr').count()).toBeGreaterThan(0);

    await page.getByRole('button', { name: 'Forecast', exact: true }).click();
    const table = page.getByTestId('forecast-chart').locator('table');
    await table.waitFor({ state: 'attached', timeout: 30_000 });
    const header = await table.locator('thead th').allTextContents();
    expect(header).toEqual(['date', 'sales_prediction', 'quantile_0.1', 'quantile_0.9']);
    const plotted = await table.locator('tbody tr').evaluateAll((trs) => trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent ?? '')));
    expect(plotted).toHaveLength(7);
    expect(await page.getByTestId('forecast-chart').locator('canvas[role="img"]').count()).toBe(1);

    // The same request straight to the API: the page plots exactly what the service answered.
    const account = await h.provision('build');
    const direct = await h.http
      .post('/v1/forecast')
      .set('X-API-Key', account.apiKey)
      .send({ target: 'sales', horizon: 7, quantiles: [0.1, 0.9], point_estimate: 'mean', data: series });
    expect(direct.status).toBe(200);
    const expected = direct.text.trim().split('\n').slice(1).map((line) => line.split(','));
    expect(plotted.map((r) => r[0])).toEqual(expected.map((r) => r[0]));
    for (const [i, row] of plotted.entries()) for (const c of [1, 2, 3]) expect(Number(row[c])).toBeCloseTo(Number(expected[i]?.[c]), 9);
    for (const row of plotted) expect(Number(row[2])).toBeLessThanOrEqual(Number(row[3]));

    await until('the credits drop by 7', async () => (await creditsLeft()) === before - 7);
    await page.getByTestId('forecast-summary').waitFor();
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Download the forecast (CSV)' }).click()]);
    expect(fs.readFileSync(await download.path(), 'utf8').trim()).toBe(direct.text.trim());
    await expectAccessible('forecast');
    await screenshot(page, 'forecast');
  });

  test('usage shows the credits left (allowance and balance), credits by day and operation, and the request log with its error filter', async () => {
    // A refused call of this workspace, for the error filter: a model that does not exist.
    await page.goto(`${base}/console/models/mdl_unknown`);
    await page.getByRole('alert').filter({ hasText: 'was not found' }).waitFor();
    await page.getByRole('link', { name: 'Usage' }).click();
    await heading('Usage').waitFor();
    expect(await page.getByTestId('credits-remaining').textContent()).toBe('973');
    expect(await page.getByTestId('allowance-remaining').textContent()).toBe('973 of 1,000');
    expect(await page.getByTestId('purchased-balance').textContent()).toBe('0');
    const usage = page.getByTestId('usage-chart').locator('tbody tr');
    await usage.first().waitFor({ state: 'attached' });
    const cells = await usage.evaluateAll((trs) => trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent ?? '')));
    const byOperation = Object.fromEntries(cells.map(([, op, credits]) => [op, Number(credits)]));
    expect(byOperation).toEqual(expect.objectContaining({ forecast: 7 }));
    expect(Object.values(byOperation).reduce((a: number, b) => a + Number(b), 0)).toBe(27);
    const log = page.getByTestId('request-log');
    await log.waitFor();
    expect(await log.locator('tbody tr').count()).toBeGreaterThan(5);
    await page.getByLabel('Errors only').check();
    await until('only failed calls are listed', async () => {
      const statuses = (await log.locator('tbody tr td:nth-child(3)').allTextContents()).map(Number);
      return statuses.length > 0 && statuses.every((status) => status >= 400);
    });
    await expect(log.textContent()).resolves.toContain('/v1/models/mdl_unknown');
    await expectAccessible('usage');
    await screenshot(page, 'usage');
  });

  test('API keys: creates a key whose secret is shown once with a copy button, the key works, then revokes it and the API refuses it', async () => {
    await page.getByRole('link', { name: 'API keys' }).click();
    await heading('API keys').waitFor();
    await page.getByLabel('Name', { exact: true }).fill('e2e key');
    await page.getByRole('button', { name: 'Create the key' }).click();
    const secret = (await page.getByTestId('secret').textContent()) ?? '';
    expect(secret).toMatch(/^sk-svc-api-/);
    await page.getByRole('button', { name: /^Copy the secret/ }).click();
    await page.getByText('Copied to the clipboard.').waitFor();
    expect(await page.evaluate<string>(`navigator.clipboard.readText()`)).toBe(secret);
    expect((await h.http.get('/v1/models').set('X-API-Key', secret)).status).toBe(200);
    await expectAccessible('API keys');
    await screenshot(page, 'api-keys');

    const row = page.locator('tr', { hasText: 'e2e key' });
    await row.getByRole('button', { name: 'Revoke' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Revoke' }).click();
    await row.getByText('revoked').waitFor();
    const refused = await h.http.get('/v1/models').set('X-API-Key', secret);
    expect({ status: refused.status, code: (refused.body as { message: string }).message }).toEqual({ status: 401, code: 'API_KEY_INVALID' });
  });

  test('webhooks: registers an endpoint (secret once), sends a test event, shows the delivery with its attempts, redelivers', async () => {
    await page.getByRole('link', { name: 'Webhooks' }).click();
    await heading('Webhooks').waitFor();
    await page.getByLabel('URL (https)').fill(receiver.url('/e2e'));
    await page.getByLabel('model.trained').check();
    await page.getByRole('button', { name: 'Register the endpoint' }).click();
    expect(await page.getByTestId('secret').textContent()).toMatch(/^whsec_/);
    await page.getByRole('button', { name: 'Send a test event' }).click();
    await receiver.waitFor('/e2e', 1);
    const delivery = page.getByTestId('delivery').filter({ hasText: 'succeeded' }).first();
    for (let i = 0; i < 40 && (await delivery.count()) === 0; i++) {
      await page.getByRole('button', { name: 'Refresh deliveries' }).click();
      await page.waitForTimeout(250);
    }
    await delivery.locator('summary').click();
    expect(await delivery.locator('tbody tr').first().textContent()).toContain('succeeded');
    await expectAccessible('webhooks');
    await screenshot(page, 'webhooks');
    await delivery.getByRole('button', { name: 'Redeliver' }).click();
    await receiver.waitFor('/e2e', 2);
  });

  test('the emailed link signs in on /console/sign-in#token=… once its account is confirmed, the token leaves the address bar, and a link pushed at a signed-in person is not spent unless they continue', async () => {
    const fresh = await browser.newContext();
    try {
      const other = await fresh.newPage();
      const linkOf = async (address: string) => {
        const before = h.mailbox.lastId();
        expect((await h.http.post('/v1/auth/login').send({ email: address })).status).toBe(200);
        const { text } = await mailedCode(h, address, before);
        // The mail links to FRONTEND_URL; this test's server listens elsewhere.
        return `${base}/console/sign-in${/#token=\S+/.exec(text)![0]}`;
      };
      const address = `${newId('account').toLowerCase()}@example.test`;
      await other.goto(await linkOf(address));
      await other.getByText(`This link signs you in as ${address}.`).waitFor();
      expect(other.url()).not.toContain('token=');
      await other.getByRole('button', { name: 'Continue' }).click();
      await other.getByRole('heading', { level: 1, name: 'Models' }).waitFor();
      await other.getByText(address).waitFor();

      // someone else's link, opened while signed in: it names both accounts, and Cancel keeps the session
      const intruder = `${newId('account').toLowerCase()}@example.test`;
      const pushed = await linkOf(intruder);
      await other.goto(pushed);
      await other.getByText(`This link signs you in as ${intruder}.`).waitFor();
      await other.getByText(`You are signed in as ${address}`).waitFor();
      await other.getByRole('button', { name: 'Cancel' }).click();
      await other.getByRole('heading', { level: 1, name: 'Models' }).waitFor();
      await other.getByText(address).waitFor();
      const token = decodeURIComponent(/#token=([^&]+)/.exec(pushed)![1]!);
      // not spent: it still signs its own address in
      expect((await h.http.post('/v1/auth/magic-link/verify').send({ token, email: intruder })).status).toBe(200);
    } finally {
      await fresh.close();
    }
  });

  test('tabs opened at once share one session: their renewals are serialised, so the single-use refresh token is never replayed', async () => {
    const tabs = await Promise.all([context.newPage(), context.newPage(), context.newPage()]);
    for (const tab of tabs) {
      tab.on('pageerror', (err) => pageErrors.push(err.message));
      tab.on('crash', () => pageErrors.push(`a tab's renderer crashed at ${tab.url()}`));
    }
    // Each tab starts with no access token in memory, so each needs a renewal at the same moment.
    await Promise.all(tabs.map((tab) => tab.goto(`${base}/console/usage`)));
    // Waited for one by one in front: a background tab's animation frames (which Playwright polls with) are paused.
    const allShowTheirCredits = async () => {
      for (const tab of tabs) {
        await tab.bringToFront();
        // On a timeout, say where the tab is and what it shows (a sign-in page means the session ended).
        await tab
          .getByTestId('credits-remaining')
          .waitFor()
          .catch(async (err: Error) => {
            throw new Error(`${err.message}\nthe tab is at ${tab.url()} showing: ${(await tab.locator('main').textContent({ timeout: 2_000 }).catch(() => '?')) ?? ''}`);
          });
        expect(tab.url()).toBe(`${base}/console/usage`);
      }
    };
    await allShowTheirCredits();
    await Promise.all(tabs.map((tab) => tab.reload()));
    await allShowTheirCredits();
    // A replay would have revoked every session of the account: the stored token still renews.
    const stored = await storedRefreshToken(page);
    const renewed = await h.http.post('/v1/auth/refresh').send({ refresh_token: stored });
    expect(renewed.status).toBe(200);
    await storeRefreshToken(page, (renewed.body as { refresh_token: string }).refresh_token);
    await Promise.all(tabs.map((tab) => tab.close()));
  });

  test('phone width: the navigation sits behind a menu button and the pages stay usable; billing shows the service’s sentence when its routes answer an error', async () => {
    const phone = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
    try {
      const tab = await phone.newPage();
      tab.on('pageerror', (err) => pageErrors.push(err.message));
      tab.on('crash', () => pageErrors.push(`the phone tab's renderer crashed at ${tab.url()}`));
      // The same session in a phone-sized window (another context shares no storage by itself).
      const stored = await storedRefreshToken(page);
      if (!stored) throw new Error('the main page holds no session to share');
      await tab.goto(`${base}/console/sign-in`);
      await storeRefreshToken(tab, stored);
      await tab.goto(`${base}/console/models`);
      await tab.getByRole('heading', { level: 1, name: 'Models' }).waitFor();
      expect(await tab.getByRole('link', { name: 'Usage' }).isVisible()).toBe(false);
      await tab.getByRole('button', { name: 'Menu' }).click();
      await tab.getByRole('link', { name: 'Billing' }).click();
      await tab.getByRole('heading', { level: 1, name: 'Billing' }).waitFor();
      // Whatever billing answers on this deployment, an error is shown as the envelope's sentence.
      const alerts = tab.getByRole('alert');
      await until('billing has answered', async () => (await tab.getByText('Loading the subscription').count()) === 0);
      for (const text of await alerts.allTextContents()) expect(text).not.toMatch(/undefined|\[object/);
      const scrollWidth = await tab.evaluate<number>('document.documentElement.scrollWidth');
      expect(scrollWidth).toBeLessThanOrEqual(390);
      await tab.getByRole('button', { name: 'Menu' }).click();
      await tab.getByRole('link', { name: 'Forecast' }).click();
      await tab.getByRole('heading', { level: 1, name: 'Forecast playground' }).waitFor();
      await screenshot(tab, 'phone-forecast');
      await expectAccessible('forecast at phone width', tab);
    } finally {
      await phone.close();
    }
  });
});

