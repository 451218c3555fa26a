import fs from 'node:fs';
import path from 'node:path';
import type { Context } from 'koa';

/** Content types of the files a Vite build and Scalar's bundle are made of; anything else is not served. */
const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.webp': 'image/webp',
  '.woff2': 'font/woff2',
  '.txt': 'text/plain; charset=utf-8',
};

export interface StaticFile {
  absolutePath: string;
  contentType: string;
  size: number;
  mtime: Date;
}

/**
 * Every servable file under `root`, keyed by its URL path relative to root ("assets/index-3f2a.js").
 * Requests are looked up in this map and never joined onto the file system, so no URL (`..`, encoded
 * slashes, NUL) can reach a file outside the build: path traversal is impossible by construction.
 */
export function listFiles(root: string): Map<string, StaticFile> {
  const files = new Map<string, StaticFile>();
  const walk = (dir: string): void => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      if (entry.name.startsWith('.')) continue;
      const absolutePath = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(absolutePath);
      else if (entry.isFile()) {
        const contentType = CONTENT_TYPES[path.extname(entry.name).toLowerCase()];
        if (!contentType) continue;
        const stat = fs.statSync(absolutePath);
        files.set(path.relative(root, absolutePath).split(path.sep).join('/'), { absolutePath, contentType, size: stat.size, mtime: stat.mtime });
      }
    }
  };
  walk(root);
  return files;
}

/** Streams `file` with validators, answering 304 when the browser's copy is current. */
export function sendFile(ctx: Context, file: StaticFile, cacheControl: string): void {
  ctx.set('Cache-Control', cacheControl);
  ctx.set('X-Content-Type-Options', 'nosniff');
  ctx.lastModified = file.mtime;
  ctx.etag = `W/"${file.size.toString(16)}-${file.mtime.getTime().toString(16)}"`;
  ctx.type = file.contentType;
  // Koa's freshness check only applies to a 2xx answer.
  ctx.status = 200;
  if (ctx.fresh) {
    ctx.status = 304;
    return;
  }
  // Koa sends no body to HEAD; opening a stream it would never read would leak its descriptor.
  if (ctx.method !== 'HEAD') ctx.body = fs.createReadStream(file.absolutePath);
  ctx.length = file.size;
}
