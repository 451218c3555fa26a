import fs from 'node:fs';
import path from 'node:path';
import type { Middleware } from 'koa';
import { AppError, notFound } from '../../services/errors';
import { listFiles, sendFile, type StaticFile } from './files';

export const CONSOLE_PATH = '/console';

/** Vite names every built asset after its content hash, so a browser may keep it for good. */
const IMMUTABLE = 'public, max-age=31536000, immutable';
/** The entry page names the current assets: always revalidated, so a deployment is seen at once. */
const REVALIDATE = 'no-cache';

/**
 * The console's only script is its own bundle; it talks to this origin only. Inline styles are allowed
 * because React's `style` attributes and chart.js's canvas sizing use them.
 */
const CONSOLE_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data: blob:",
  "font-src 'self'",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

/**
 * Serves the console's Vite build (`dir`) under /console with the single-page-app fallback: a path that
 * names no file and has no extension gets index.html, so deep links (/console/models/mdl_…) work.
 * The file list is read at the first request and again whenever index.html changes (a new build).
 */
export function serveConsole(dir: string): Middleware {
  let files: Map<string, StaticFile> | null = null;
  let builtAt = 0;
  const current = (): Map<string, StaticFile> => {
    const indexPath = path.join(dir, 'index.html');
    const mtime = fs.existsSync(indexPath) ? fs.statSync(indexPath).mtimeMs : 0;
    if (mtime === 0) {
      files = null;
      throw new AppError('CONSOLE_NOT_BUILT', 503, 'The console has not been built on this server: `npm start` builds it, or run `npx tsx scripts/build-console.ts`.');
    }
    if (!files || mtime !== builtAt) {
      files = listFiles(dir);
      builtAt = mtime;
    }
    return files;
  };

  return async (ctx, next) => {
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') return next();
    // The service's root is where people land from the start banner's host: the console is theirs.
    if (ctx.path === '/') {
      ctx.redirect(CONSOLE_PATH);
      return;
    }
    const inConsole = ctx.path === CONSOLE_PATH || ctx.path.startsWith(`${CONSOLE_PATH}/`);
    if (!inConsole) return next();
    const list = current();
    const relative = ctx.path.slice(CONSOLE_PATH.length + 1);
    const asset = relative === 'index.html' ? undefined : list.get(relative);
    if (asset) return sendFile(ctx, asset, relative.startsWith('assets/') ? IMMUTABLE : REVALIDATE);
    // A missing file (an old hashed asset after a deployment) is a 404, never the page: a script tag
    // fed HTML would fail in a far more confusing way.
    if (relative !== 'index.html' && /\.[^/]+$/.test(relative)) throw notFound('The console file');
    const index = list.get('index.html');
    if (!index) throw notFound('The console page');
    ctx.set('Content-Security-Policy', CONSOLE_CSP);
    ctx.set('Referrer-Policy', 'no-referrer');
    ctx.set('X-Frame-Options', 'DENY');
    sendFile(ctx, index, REVALIDATE);
  };
}
