import fs from 'node:fs';
import type { AddressInfo } from 'node:net';
import request from 'supertest';
import type { Browser, Page } from 'playwright-core';
import { launchChromium, screenshot } from '../support/chromium';
import { startHarness, type Harness } from '../support/harness';

/** The interactive reference (Scalar) served by the API process itself, in Debian's Chromium. */
describe('the API reference at /docs', () => {
  let h: Harness;
  let base: string;
  let browser: Browser;
  let page: Page;
  const requested: string[] = [];

  beforeAll(async () => {
    [h, browser] = await Promise.all([startHarness({ withoutWorker: true }), launchChromium()]);
    base = `http://127.0.0.1:${(h.server.address() as AddressInfo).port}`;
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    page = await context.newPage();
    page.on('request', (r) => requested.push(r.url()));
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await h?.stop();
  });

  test('renders /openapi.json with Scalar from our own files only (no CDN, no third-party call: it works offline)', async () => {
    const bundle = await request(h.server).get('/docs/scalar.js');
    expect(bundle.status).toBe(200);
    expect(Number(bundle.headers['content-length'])).toBe(fs.statSync(require.resolve('@scalar/api-reference/browser/standalone.js')).size);
    await page.goto(`${base}/docs`);
    await page.getByText('Selected Auth Type').first().waitFor();
    await page.getByRole('button', { name: /^Models/ }).first().waitFor();
    expect(requested.length).toBeGreaterThanOrEqual(4);
    expect(requested.filter((url) => !url.startsWith(`${base}/`) && !url.startsWith('data:') && !url.startsWith('blob:'))).toEqual([]);
    expect(requested).toEqual(expect.arrayContaining([`${base}/docs/scalar.js`, `${base}/openapi.json`]));
    await screenshot(page, 'api-reference');
  });

  test('"try it" sends the API key the reader pasted, as X-API-Key, to this service', async () => {
    const account = await h.provision('build');
    await page.getByPlaceholder('QUxMIFlPVVIgQkFTRSBBUkUgQkVMT05HIFRPIFVT').first().fill(account.apiKey);
    await page.getByRole('button', { name: /^Models/ }).first().click();
    await page.getByRole('button', { name: /^List serving models/ }).first().click();
    await page.locator('button').filter({ hasText: /^Test Request\(get \/v1\/models\)$/ }).click();
    const dialog = page.getByRole('dialog');
    const answered = page.waitForResponse((r) => r.url() === `${base}/v1/models`);
    await dialog.getByRole('button', { name: /^Send/ }).first().click();
    const response = await answered;
    expect(response.request().headers()['x-api-key']).toBe(account.apiKey);
    expect(response.status()).toBe(200);
    await expect(response.json()).resolves.toEqual(expect.objectContaining({ data: [] }));
  });
});
