import type { AddressInfo } from 'node:net';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { loadConfig } from '../../config/env';
import { ensureConsoleBuilt } from '../../scripts/lib/console-build';
import { launchChromium } from '../support/chromium';
import { storeRefreshToken } from '../support/console-session';
import { startHarness, signInByMail, type Harness, type WebSession } from '../support/harness';

/**
 * What a demanding user does to the console beyond the happy path of console.test.ts: several tabs on
 * several workspaces, retries after a lost answer, double clicks. Each test opens its own browser
 * context on a session signed in by mail.
 */
describe('the console under a demanding user', () => {
  let h: Harness;
  let base: string;
  let browser: Browser;
  const pageErrors: string[] = [];

  beforeAll(async () => {
    await ensureConsoleBuilt(loadConfig({}).CONSOLE_DIR);
    [h, browser] = await Promise.all([startHarness({ devMailbox: true, config: { WEBHOOKS_ALLOW_LOOPBACK_HTTP: true } }), launchChromium()]);
    base = `http://127.0.0.1:${(h.server.address() as AddressInfo).port}`;
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
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
});
