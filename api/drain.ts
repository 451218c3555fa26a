import type http from 'node:http';
import type { Middleware } from 'koa';

/** Whether the process is shutting down: /health answers 503 and connections are not kept alive. */
export class DrainState {
  private draining = false;

  get active(): boolean {
    return this.draining;
  }

  begin(): void {
    this.draining = true;
  }
}

/**
 * While draining, every answer (including those of requests already running when the signal came)
 * closes its connection, so keep-alive clients reconnect to another instance instead of this one.
 */
export function closeConnectionsWhileDraining(drain: DrainState): Middleware {
  return async (ctx, next) => {
    try {
      await next();
    } finally {
      if (drain.active) ctx.set('Connection', 'close');
    }
  };
}

/**
 * Stops accepting connections and waits for the requests in flight; after `graceMs` the connections
 * still open are cut. Resolves with whether the grace ran out.
 */
export function drainHttpServer(server: http.Server, graceMs: number): Promise<{ forced: boolean }> {
  return new Promise((resolve) => {
    let forced = false;
    const timer = setTimeout(() => {
      forced = true;
      server.closeAllConnections();
    }, graceMs);
    server.close(() => {
      clearTimeout(timer);
      resolve({ forced });
    });
    // Idle keep-alive sockets would otherwise hold close() open until their own timeout.
    server.closeIdleConnections();
  });
}
