import http from 'node:http';
import type Koa from 'koa';

/** A Node HTTP server for the Koa app; Koa handles its own errors, so its promise is not awaited here. */
export function createHttpServer(app: Koa): http.Server {
  const handle = app.callback();
  return http.createServer((req, res) => {
    void handle(req, res);
  });
}
