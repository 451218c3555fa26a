import fs from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { repoRoot } from './env';

/** Debian's Chromium: nothing is downloaded at run time (CI installs it with apt-get when missing). */
export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** Without these, Chromium's own background connections are refused here and it stalls or crashes. */
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  // Containers often mount a small /dev/shm (64 MB): several tabs then crash their renderers.
  '--disable-dev-shm-usage',
];

/** Fails (never skips) when the browser is missing: a browser test that silently does not run proves nothing. */
export async function launchChromium(): Promise<Browser> {
  if (!fs.existsSync(CHROMIUM_PATH)) {
    throw new Error(`No Chromium at ${CHROMIUM_PATH}: install it (\`apt-get install -y chromium\`) or set CHROMIUM_PATH. The browser tests fail without it.`);
  }
  return chromium.launch({ executablePath: CHROMIUM_PATH, args: CHROMIUM_ARGS, headless: true });
}

const axeSource = fs.readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');

export interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  targets: string[];
}

/**
 * Runs axe-core in the page against WCAG 2.0/2.1 A and AA and returns the serious and critical
 * violations. The script is evaluated through the DevTools protocol, which the page's CSP does not
 * govern, so the console is checked with its real CSP in force.
 */
export async function seriousAxeViolations(page: Page): Promise<AxeViolation[]> {
  await page.evaluate(axeSource);
  // A string, evaluated in the page: the tests' tsconfig has no DOM types, and this code is the page's.
  const violations = await page.evaluate<AxeViolation[]>(`(async () => {
    const result = await window.axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] }, resultTypes: ['violations'] });
    return result.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, targets: v.nodes.slice(0, 5).map((n) => n.target.map(String).join(' ')) }));
  })()`);
  return violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
}

/**
 * Screenshots of the main pages. Written to docs/screenshots (committed, shown in the README) when
 * UPDATE_SCREENSHOTS=1, else under .data/ so a normal run leaves the tree clean.
 */
export async function screenshot(page: Page, name: string): Promise<void> {
  const dir = process.env.UPDATE_SCREENSHOTS === '1' ? path.join(repoRoot, 'docs', 'screenshots') : path.join(repoRoot, '.data', 'e2e', 'screenshots');
  fs.mkdirSync(dir, { recursive: true });
  await page.screenshot({ path: path.join(dir, `${name}.png`), fullPage: true });
}
