import type { AddressInfo } from 'node:net';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { loadConfig } from '../../config/env';
import { ensureConsoleBuilt } from '../../scripts/lib/console-build';
import { launchChromium } from '../support/chromium';
import { storeRefreshToken } from '../support/console-session';
import { churnRows, toCsv, withoutTarget } from '../support/datasets';
import { startHarness, signInByMail, type Harness, type WebSession } from '../support/harness';
import { WebhookReceiver } from '../support/webhook-receiver';

/**
 * What a demanding user does to the console beyond the happy path of console.test.ts: several tabs on
 * several workspaces, retries after a lost answer, double clicks. Each test opens its own browser
 * context on a session signed in by mail.
 */
describe('the console under a demanding user', () => {
  let h: Harness;
  let base: string;
  let browser: Browser;
  let receiver: WebhookReceiver;
  const pageErrors: string[] = [];

  beforeAll(async () => {
    await ensureConsoleBuilt(loadConfig({}).CONSOLE_DIR);
    [h, browser, receiver] = await Promise.all([startHarness({ devMailbox: true, config: { WEBHOOKS_ALLOW_LOOPBACK_HTTP: true } }), launchChromium(), new WebhookReceiver().start()]);
    base = `http://127.0.0.1:${(h.server.address() as AddressInfo).port}`;
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await receiver?.stop();
    await h?.stop();
  });

  afterEach(() => {
    expect(pageErrors.splice(0)).toEqual([]);
  });

  /** A browser context signed in as a new account (its refresh token stored as the console keeps it). */
  const signedInContext = async (): Promise<{ context: BrowserContext; page: Page; session: WebSession }> => {
    const session = await signInByMail(h);
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await openTab(context);
    await page.goto(`${base}/console/sign-in`);
    await storeRefreshToken(page, session.refreshToken);
    return { context, page, session };
  };
  const openTab = async (context: BrowserContext): Promise<Page> => {
    const page = await context.newPage();
    page.on('pageerror', (err) => pageErrors.push(err.message));
    return page;
  };
  const api = (session: WebSession, method: 'get' | 'post', path: string, workspaceId?: string) => {
    const req = h.http[method](path).set('Authorization', session.bearer);
    return workspaceId ? req.set('X-Workspace-Id', workspaceId) : req;
  };

  test('each tab acts on the workspace it shows: a switch in another tab neither sends this tab’s writes elsewhere nor fills its lists with the other workspace', async () => {
    const { context, page, session } = await signedInContext();
    try {
      const first = ((await api(session, 'get', '/v1/auth/me')).body as { workspaces: Array<{ id: string }> }).workspaces[0]!.id;
      const created = await api(session, 'post', '/v1/workspaces').send({ name: 'Second' });
      expect(created.status).toBe(201);
      const second = (created.body as { id: string }).id;
      expect((await api(session, 'post', '/v1/api-keys', second).send({ name: 'key of the second' })).status).toBe(201);

      await page.goto(`${base}/console/keys`);
      await page.getByLabel('Workspace', { exact: true }).selectOption(second);
      await page.getByTestId('keys').getByRole('cell', { name: 'key of the second', exact: true }).waitFor();

      // Another tab of the same console switches to the first workspace.
      const other = await openTab(context);
      await other.goto(`${base}/console/keys`);
      await other.getByTestId('keys').waitFor();
      await other.getByLabel('Workspace', { exact: true }).selectOption(first);
      await other.getByTestId('keys').waitFor();
      expect(await other.getByTestId('keys').getByRole('cell', { name: 'key of the second', exact: true }).count()).toBe(0);

      // Back in the first tab, still showing the second workspace: a new key lands there.
      await page.bringToFront();
      expect(await page.getByLabel('Workspace', { exact: true }).inputValue()).toBe(second);
      await page.getByLabel('Name', { exact: true }).fill('made in the first tab');
      await page.getByRole('button', { name: 'Create the key' }).click();
      await page.getByTestId('secret').waitFor();
      await page.getByTestId('keys').getByRole('cell', { name: 'made in the first tab', exact: true }).waitFor();
      expect(await page.getByTestId('keys').getByRole('cell', { name: 'key of the second', exact: true }).count()).toBe(1);
      const names = (workspaceId: string) =>
        api(session, 'get', '/v1/api-keys', workspaceId).then((res) => (res.body as { data: Array<{ name: string }> }).data.map((k) => k.name));
      expect(await names(second)).toEqual(expect.arrayContaining(['made in the first tab', 'key of the second']));
      expect(await names(first)).not.toContain('made in the first tab');
    } finally {
      await context.close();
    }
  });

  /** The next call to `path` runs on the service but its answer never reaches the page (a dropped connection). */
  const loseNextAnswer = async (page: Page, path: RegExp) => {
    const keys: string[] = [];
    await page.route(path, async (route) => {
      keys.push(route.request().headers()['idempotency-key'] ?? '');
      if (keys.length === 1) {
        await route.fetch();
        await route.abort('connectionreset');
      } else await route.continue();
    });
    return keys;
  };

  test('a retry after a lost answer reuses the Idempotency-Key: training makes one model, scoring charges once', async () => {
    const { context, page, session } = await signedInContext();
    try {
      await page.goto(`${base}/console/models/new`);
      await page.getByLabel('Workspace', { exact: true }).waitFor();
      await page.getByLabel('CSV file').setInputFiles({ name: 'churn.csv', mimeType: 'text/csv', buffer: Buffer.from(toCsv(churnRows(150))) });
      await page.getByLabel('Column to predict').selectOption('churned');
      await page.getByLabel('Engine').locator('option').first().waitFor({ state: 'attached' });
      await page.getByLabel('Name (optional)').fill('Retried');
      await page.getByRole('button', { name: 'Check the data' }).click();
      await page.getByTestId('trial-verdict').waitFor();

      const trainKeys = await loseNextAnswer(page, /\/v1\/models$/);
      await page.getByRole('button', { name: 'Train the model' }).click();
      await page.getByRole('alert').filter({ hasText: 'could not be reached' }).waitFor({ timeout: 60_000 });
      // The free plan holds one model: a second training would be refused with QUOTA_MODELS_EXCEEDED.
      await page.getByRole('button', { name: 'Train the model' }).click();
      await page.getByRole('heading', { level: 1, name: 'Retried' }).waitFor({ timeout: 60_000 });
      expect(trainKeys).toHaveLength(2);
      expect(trainKeys[1]).toBe(trainKeys[0]);
      expect(((await api(session, 'get', '/v1/models')).body as { pagination: { total: number } }).pagination.total).toBe(1);

      const scoreKeys = await loseNextAnswer(page, /\/predict$/);
      await page.getByRole('group', { name: 'Rows to score' }).getByLabel('CSV file').setInputFiles({ name: 'score.csv', mimeType: 'text/csv', buffer: Buffer.from(toCsv(withoutTarget(churnRows(20, 7), 'churned'))) });
      await page.getByRole('button', { name: 'Score 20 rows' }).click();
      await page.getByRole('alert').filter({ hasText: 'could not be reached' }).waitFor({ timeout: 30_000 });
      await page.getByRole('button', { name: 'Score 20 rows' }).click();
      await page.getByTestId('score-summary').waitFor({ timeout: 30_000 });
      expect(scoreKeys).toHaveLength(2);
      expect(scoreKeys[1]).toBe(scoreKeys[0]);
      const me = (await api(session, 'get', '/v1/auth/me')).body as { credits: { remaining: number } };
      expect(me.credits.remaining).toBe(1000 - 20);

      // Scoring the same file again afterwards is a new call: a new key, charged again.
      await page.getByRole('button', { name: 'Score 20 rows' }).click();
      await page.getByTestId('score-summary').filter({ hasText: `${1000 - 40} credits left` }).waitFor({ timeout: 30_000 });
      expect(scoreKeys).toHaveLength(3);
      expect(scoreKeys[2]).not.toBe(scoreKeys[0]);
    } finally {
      await context.close();
    }
  });

  test('creating a key or a workspace again after a lost answer reuses the Idempotency-Key: one key, whose secret is shown, and one workspace', async () => {
    const { context, page, session } = await signedInContext();
    try {
      await page.goto(`${base}/console/keys`);
      await page.getByLabel('Name', { exact: true }).fill('deploy bot');
      const keyCalls = await loseNextAnswer(page, /\/v1\/api-keys$/);
      await page.getByRole('button', { name: 'Create the key' }).click();
      await page.getByRole('alert').filter({ hasText: 'could not be reached' }).waitFor({ timeout: 30_000 });
      await page.getByRole('button', { name: 'Create the key' }).click();
      const secret = (await page.getByTestId('secret').textContent()) ?? '';
      expect(keyCalls).toHaveLength(2);
      expect(keyCalls[0]).not.toBe('');
      expect(keyCalls[1]).toBe(keyCalls[0]);
      const keys = (await api(session, 'get', '/v1/api-keys')).body as { data: Array<{ name: string }> };
      expect(keys.data.filter((k) => k.name === 'deploy bot')).toHaveLength(1);
      expect((await h.http.get('/v1/models').set('X-API-Key', secret)).status).toBe(200);

      await page.goto(`${base}/console/account`);
      await page.getByLabel('New workspace name').fill('Staging');
      const workspaceCalls = await loseNextAnswer(page, /\/v1\/workspaces$/);
      await page.getByRole('button', { name: 'Create a workspace' }).click();
      await page.getByRole('alert').filter({ hasText: 'could not be reached' }).waitFor({ timeout: 30_000 });
      await page.getByRole('button', { name: 'Create a workspace' }).click();
      await page.getByText('Workspace Staging created and selected.').waitFor({ timeout: 30_000 });
      expect(workspaceCalls).toHaveLength(2);
      expect(workspaceCalls[0]).not.toBe('');
      expect(workspaceCalls[1]).toBe(workspaceCalls[0]);
      const workspaces = (await api(session, 'get', '/v1/workspaces')).body as { data: Array<{ name: string }> };
      expect(workspaces.data.filter((w) => w.name === 'Staging')).toHaveLength(1);
    } finally {
      await context.close();
    }
  });

  test('a first visit keeps what the user did before the profile arrived: adopting the oldest workspace does not remount the page', async () => {
    const { context, page } = await signedInContext();
    try {
      // No workspace remembered in this browser; the profile answers late.
      await page.route(/\/v1\/auth\/me$/, async (route) => {
        await new Promise((resolve) => setTimeout(resolve, 1500));
        await route.continue();
      });
      await page.goto(`${base}/console/models/new`);
      await page.getByLabel('CSV file').setInputFiles({ name: 'early.csv', mimeType: 'text/csv', buffer: Buffer.from(toCsv(churnRows(30))) });
      await page.getByText('early.csv: 30 rows, 4 columns.').waitFor();
      await page.getByLabel('Workspace', { exact: true }).waitFor();
      await page.waitForTimeout(300);
      expect(await page.getByText('early.csv: 30 rows, 4 columns.').count()).toBe(1);
    } finally {
      await context.close();
    }
  });

  test('the model page reports outcomes from a CSV (by request_id or by features) and refreshes the model into a new serving version', async () => {
    const { context, page, session } = await signedInContext();
    try {
      const trained = await api(session, 'post', '/v1/models').send({ target: 'churned', engine: 'tabular-gbdt', name: 'Feedback', data: churnRows(150) });
      expect(trained.status).toBe(201);
      const modelId = (trained.body as { id: string }).id;
      const scored = await api(session, 'post', `/v1/models/${modelId}/predict`).send({ rows: withoutTarget(churnRows(3, 9), 'churned') });
      expect(scored.status).toBe(200);
      const requestIds = (scored.body as { predictions: Array<{ request_id: string }> }).predictions.map((p) => p.request_id);

      await page.goto(`${base}/console/models/${modelId}`);
      await page.getByRole('heading', { level: 1, name: 'Feedback' }).waitFor();
      const feedback = page.getByRole('region', { name: 'Outcomes and refresh' });
      // Nothing pending yet: the refresh is refused with the service's sentence.
      await feedback.getByRole('button', { name: 'Refresh the model' }).click();
      await feedback.getByRole('alert').filter({ hasText: 'NO_PENDING_OUTCOMES' }).waitFor();

      await feedback.getByLabel('CSV file').setInputFiles({ name: 'bad.csv', mimeType: 'text/csv', buffer: Buffer.from('request_id,result\nreq_x,yes\n') });
      await feedback.getByText('The CSV needs an “actual” column').waitFor();
      const extra = churnRows(1, 11)[0]!;
      const outcomes = ['request_id,x1,x2,colour,actual', ...requestIds.map((id, i) => `${id},,,,${i % 2 ? 'yes' : 'no'}`), `,${extra.x1},${extra.x2},${extra.colour},yes`].join('\n');
      await feedback.getByLabel('CSV file').setInputFiles({ name: 'outcomes.csv', mimeType: 'text/csv', buffer: Buffer.from(outcomes) });
      await feedback.getByRole('button', { name: 'Report 4 outcomes' }).click();
      await feedback.getByTestId('feedback-result').filter({ hasText: '4 outcomes recorded; 4 pending.' }).waitFor();

      await feedback.getByRole('button', { name: 'Refresh the model' }).click();
      await feedback.getByTestId('feedback-result').filter({ hasText: 'Version v2 serves now, with 4 outcomes folded in.' }).waitFor({ timeout: 60_000 });
      // the versions list reloads after the result is shown: wait for it rather than read it at once
      await page.getByTestId('versions').filter({ hasText: /v2\s*serving/ }).waitFor({ timeout: 30_000 });
      await page.getByTestId('prediction-history').getByText('"yes"').first().waitFor();
    } finally {
      await context.close();
    }
  });

  test('webhooks: a test event’s delivery shows up and settles without a manual refresh; the signing secret is rotated with its overlap and shown once', async () => {
    const { context, page } = await signedInContext();
    try {
      await page.goto(`${base}/console/webhooks`);
      await page.getByLabel('URL (https)').fill(receiver.url('/actions'));
      await page.getByRole('button', { name: 'Register the endpoint' }).click();
      const first = (await page.getByTestId('secret').textContent()) ?? '';
      expect(first).toMatch(/^whsec_/);
      const hook = page.getByTestId('webhook');
      await hook.getByText('No delivery yet.').waitFor();
      await hook.getByRole('button', { name: 'Send a test event' }).click();
      await receiver.waitFor('/actions', 1);
      // No click on "Refresh deliveries": the page follows the delivery it just started.
      await hook.getByTestId('delivery').filter({ hasText: 'succeeded' }).waitFor({ timeout: 15_000 });

      await hook.getByRole('button', { name: 'Rotate the secret' }).click();
      const dialog = page.getByRole('dialog');
      await dialog.getByLabel(/Overlap/).fill('');
      expect(await dialog.getByRole('button', { name: 'Rotate', exact: true }).isDisabled()).toBe(true);
      await dialog.getByLabel(/Overlap/).fill('2');
      await dialog.getByRole('button', { name: 'Rotate', exact: true }).click();
      await page.getByTestId('secret').filter({ hasNotText: first }).waitFor();
      expect(await page.getByTestId('secret').textContent()).toMatch(/^whsec_/);
    } finally {
      await context.close();
    }
  });

  test('API keys: a rotation’s grace period left empty is not taken as 0 (which would end the old key at once)', async () => {
    const { context, page, session } = await signedInContext();
    try {
      expect((await api(session, 'post', '/v1/api-keys').send({ name: 'kept' })).status).toBe(201);
      await page.goto(`${base}/console/keys`);
      const row = page.locator('tr', { has: page.getByRole('cell', { name: 'kept', exact: true }) });
      await row.getByRole('button', { name: 'Rotate' }).click();
      const dialog = page.getByRole('dialog');
      await dialog.getByLabel(/Grace period/).fill('');
      const confirm = dialog.getByRole('button', { name: 'Rotate', exact: true });
      if (!(await confirm.isDisabled())) await confirm.click();
      await page.waitForTimeout(1000);
      const keys = (await api(session, 'get', '/v1/api-keys')).body as { data: Array<{ name: string; status: string }> };
      expect(keys.data.map((k) => k.status)).toEqual(['active']);
      await dialog.getByLabel(/Grace period/).fill('3');
      await confirm.click();
      await page.getByTestId('secret').waitFor();
      const after = (await api(session, 'get', '/v1/api-keys')).body as { data: Array<{ status: string }> };
      expect(after.data.map((k) => k.status).sort()).toEqual(['active', 'ending']);
    } finally {
      await context.close();
    }
  });

  test('account: a new workspace says so, the workspace is renamed in place, and deleting the account (confirmed with its address) signs out', async () => {
    const { context, page, session } = await signedInContext();
    try {
      await page.goto(`${base}/console/account`);
      await page.getByLabel('New workspace name').fill('Lab');
      await page.getByRole('button', { name: 'Create a workspace' }).click();
      await page.getByRole('status').filter({ hasText: 'Workspace Lab created and selected.' }).waitFor();
      // The workspace list arrives with the profile, just after the answer.
      // A locator, not a string predicate: polling a string needs eval, which the console's CSP refuses.
      await page.locator('#workspace-select option:checked', { hasText: /^Lab$/ }).waitFor({ state: 'attached' });

      await page.getByLabel('Name of this workspace').fill('Laboratory');
      await page.getByRole('button', { name: 'Rename' }).click();
      await page.getByLabel('Workspace', { exact: true }).locator('option', { hasText: 'Laboratory' }).waitFor({ state: 'attached' });

      await page.getByRole('button', { name: 'Delete my account' }).click();
      const dialog = page.getByRole('dialog');
      await dialog.getByLabel(/Type your email address/).fill('someone@else.test');
      expect(await dialog.getByRole('button', { name: 'Delete everything' }).isDisabled()).toBe(true);
      await dialog.getByLabel(/Type your email address/).fill(session.email);
      await dialog.getByRole('button', { name: 'Delete everything' }).click();
      await page.getByRole('heading', { level: 1, name: 'Sign in' }).waitFor();
      await page.getByText('Your account was deleted').waitFor();
      expect((await h.http.get('/v1/auth/me').set('Authorization', session.bearer)).status).toBe(401);
    } finally {
      await context.close();
    }
  });

  test('account: signing out everywhere (confirmed) lands on the sign-in page and ends the account’s other sign-ins too; a call that never reached the service is reported and signs nothing out', async () => {
    const { context, page, session } = await signedInContext();
    const elsewhere = await signInByMail(h, session.email);
    try {
      await page.goto(`${base}/console/account`);
      // A call that never reaches the service is reported, and this browser stays signed in to try again.
      await page.route(/\/v1\/auth\/logout$/, (route) => route.abort());
      await page.getByRole('button', { name: 'Sign out everywhere' }).click();
      await page.getByRole('dialog').getByRole('button', { name: 'Sign out everywhere' }).click();
      await page.getByRole('alert').waitFor();
      expect(await page.getByRole('heading', { level: 1, name: 'Account' }).isVisible()).toBe(true);
      expect((await h.http.get('/v1/auth/me').set('Authorization', elsewhere.bearer)).status).toBe(200);
      await page.unroute(/\/v1\/auth\/logout$/);
      await page.getByRole('button', { name: 'Sign out everywhere' }).click();
      await page.getByRole('dialog').getByRole('button', { name: 'Sign out everywhere' }).click();
      await page.getByRole('heading', { level: 1, name: 'Sign in' }).waitFor();
      await page.getByText('You signed out on every device.').waitFor();
      for (const other of [session, elsewhere]) expect((await h.http.get('/v1/auth/me').set('Authorization', other.bearer)).status).toBe(401);
      expect((await h.http.post('/v1/auth/refresh').send({ refresh_token: elsewhere.refreshToken })).status).toBe(401);
    } finally {
      await context.close();
    }
  });

  test('each page’s tab title names the page, a model’s page the model, so tabs and history entries can be told apart', async () => {
    const { context, page, session } = await signedInContext();
    try {
      const trained = await api(session, 'post', '/v1/models').send({ target: 'churned', engine: 'tabular-gbdt', name: 'Churn by region', data: churnRows(120) });
      expect(trained.status).toBe(201);
      const site = 'Console · Prediction service';
      const titled = async (title: string) => {
        const expected = `${title} · ${site}`;
        const deadline = Date.now() + 15_000;
        while ((await page.title()) !== expected) {
          if (Date.now() > deadline) throw new Error(`the tab's title is "${await page.title()}", not "${expected}"`);
          await page.waitForTimeout(50);
        }
      };
      // One load, then the console's own links: a reload while a renewal is on the wire would spend the
      // stored refresh token without keeping its successor (docs/DECISIONS.md, "Renewals are serialised").
      await page.goto(`${base}/console/models`);
      await titled('Models');
      await page.getByRole('link', { name: 'Churn by region' }).click();
      await titled('Churn by region (model)');
      const nav = page.getByRole('navigation');
      await nav.getByRole('link', { name: 'Models' }).click();
      await page.getByRole('link', { name: 'New model' }).click();
      await titled('New model');
      for (const [link, title] of [
        ['Forecast', 'Forecast playground'],
        ['Usage', 'Usage'],
        ['API keys', 'API keys'],
        ['Webhooks', 'Webhooks'],
        ['Billing', 'Billing'],
        ['Account', 'Account'],
      ] as const) {
        await nav.getByRole('link', { name: link, exact: true }).click();
        await titled(title);
      }
    } finally {
      await context.close();
    }
  });

  test('a page load logs no error in the browser console (the favicon is part of the build, not a 404)', async () => {
    const context = await browser.newContext();
    try {
      const page = await openTab(context);
      const errors: string[] = [];
      page.on('console', (message) => {
        if (message.type() === 'error') errors.push(message.text());
      });
      await page.goto(`${base}/console/sign-in`);
      await page.getByRole('heading', { level: 1, name: 'Sign in' }).waitFor();
      await page.waitForTimeout(500);
      expect(errors).toEqual([]);
    } finally {
      await context.close();
    }
  });

  test('a session whose stored refresh token is gone (storage cleared or evicted) lands on the sign-in page instead of pages of errors', async () => {
    const { context, page } = await signedInContext();
    try {
      await page.goto(`${base}/console/keys`);
      await page.getByTestId('keys').waitFor();
      await page.evaluate(`new Promise((resolve) => { const r = indexedDB.deleteDatabase('console'); r.onsuccess = r.onerror = r.onblocked = () => resolve(null); })`);
      await page.reload();
      await page.getByRole('heading', { level: 1, name: 'Sign in' }).waitFor({ timeout: 10_000 });
      expect(page.url()).toBe(`${base}/console/sign-in`);
    } finally {
      await context.close();
    }
  });
});
