import fs from 'node:fs';
import type { Middleware } from 'koa';
import type { StaticFile } from './files';
import { sendFile } from './files';

export const DOCS_PATH = '/docs';

/**
 * Scalar's browser bundle from our own node_modules (no CDN: the reference works offline and the page
 * loads no third-party code). Resolved through the package's exports map, so an upgrade that moves it
 * fails at start-up rather than at the first visit.
 */
const scalarBundlePath = require.resolve('@scalar/api-reference/browser/standalone.js');

/**
 * Scalar's settings. The security schemes are named as in our OpenAPI document (api/openapi.ts):
 * the reader pastes an API key (X-API-Key) or a web session's access token (Bearer) in "try it".
 * Nothing is persisted (persistAuth off: a pasted secret must not outlive the tab), no telemetry, no
 * web fonts from Scalar's CDN, requests go straight to this origin (no proxy.scalar.com).
 */
const INIT_SCRIPT = `Scalar.createApiReference('#app', {
  url: '/openapi.json',
  servers: [{ url: window.location.origin, description: 'This service' }],
  withDefaultFonts: false,
  telemetry: false,
  persistAuth: false,
  hideClientButton: false,
  showDeveloperTools: 'never',
  // Its "Ask AI" agent talks to Scalar's servers: off, the reference is ours and works offline.
  agent: { disabled: true },
  documentDownloadType: 'json',
  metaData: { title: 'Prediction service API reference' },
  authentication: {
    preferredSecurityScheme: 'ApiKeyHeader',
    securitySchemes: { ApiKeyHeader: { value: '' }, BearerAuth: { token: '' } },
  },
});
`;

const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>API reference · Prediction service</title>
</head>
<body>
<noscript>The interactive reference needs JavaScript; the raw document is at <a href="/openapi.json">/openapi.json</a>.</noscript>
<div id="app"></div>
<script src="${DOCS_PATH}/scalar.js"></script>
<script src="${DOCS_PATH}/init.js"></script>
</body>
</html>
`;

/** Scalar renders with inline styles and may compile code snippets with eval-free workers from blobs. */
const DOCS_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data: blob:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "worker-src 'self' blob:",
  "object-src 'none'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
].join('; ');

/** GET /docs: the interactive API reference (Scalar) of /openapi.json. Not part of the JSON API. */
export function serveApiReference(): Middleware {
  const stat = fs.statSync(scalarBundlePath);
  const bundle: StaticFile = { absolutePath: scalarBundlePath, contentType: 'text/javascript; charset=utf-8', size: stat.size, mtime: stat.mtime };
  return async (ctx, next) => {
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') return next();
    if (ctx.path === DOCS_PATH || ctx.path === `${DOCS_PATH}/`) {
      ctx.set('Content-Security-Policy', DOCS_CSP);
      ctx.set('Referrer-Policy', 'no-referrer');
      // as the console's page: for browsers that do not read CSP frame-ancestors
      ctx.set('X-Frame-Options', 'DENY');
      ctx.set('Cache-Control', 'no-cache');
      ctx.type = 'text/html; charset=utf-8';
      ctx.body = PAGE;
      return;
    }
    // Not hashed: a day's cache, revalidated by its ETag (size and mtime change with the package).
    if (ctx.path === `${DOCS_PATH}/scalar.js`) return sendFile(ctx, bundle, 'public, max-age=86400');
    if (ctx.path === `${DOCS_PATH}/init.js`) {
      ctx.set('Cache-Control', 'no-cache');
      ctx.type = 'text/javascript; charset=utf-8';
      ctx.body = INIT_SCRIPT;
      return;
    }
    return next();
  };
}
