import http from 'node:http';
import { Webhook } from 'standardwebhooks';

export interface Received {
  path: string;
  headers: Record<string, string>;
  body: string;
  at: number;
  /** When the exchange ended (answered, or the sender gave up); absent while it is still open. */
  closedAt?: number;
}

export interface Reply {
  status: number;
  headers?: Record<string, string>;
  body?: string;
  /** Never answers (the request hangs until the caller gives up). */
  hang?: boolean;
}

/**
 * A real HTTP receiver on loopback: records every request and answers from a script of replies
 * (the last one repeats), per path.
 */
export class WebhookReceiver {
  readonly received: Received[] = [];
  private readonly scripts = new Map<string, Reply[]>();
  private server: http.Server | null = null;
  private port = 0;

  async start(): Promise<this> {
    this.server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const path = req.url ?? '/';
        const headers: Record<string, string> = {};
        for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string') headers[k] = v;
        const record: Received = { path, headers, body: Buffer.concat(chunks).toString('utf8'), at: Date.now() };
        this.received.push(record);
        res.on('close', () => (record.closedAt = Date.now()));
        const script = this.scripts.get(path) ?? [];
        const reply = (script.length > 1 ? script.shift() : script[0]) ?? { status: 200, body: 'ok' };
        if (reply.hang) return;
        res.writeHead(reply.status, reply.headers ?? {});
        res.end(reply.body ?? '');
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as { port: number }).port;
    return this;
  }

  url(path: string, host = '127.0.0.1'): string {
    return `http://${host}:${this.port}${path}`;
  }

  /** What `path` answers, in order; the last reply repeats. */
  script(path: string, replies: Reply[]): void {
    this.scripts.set(path, [...replies]);
  }

  at(path: string): Received[] {
    return this.received.filter((r) => r.path === path);
  }

  /** The most requests to any of `paths` that were open at one time. */
  maxOpen(paths: string[]): number {
    const edges = this.received
      .filter((r) => paths.includes(r.path))
      .flatMap((r) => [
        { t: r.at, d: 1 },
        { t: r.closedAt ?? Number.POSITIVE_INFINITY, d: -1 },
      ])
      // at equal times a close comes first: an exchange that ended as another began never overlapped it
      .sort((a, b) => a.t - b.t || a.d - b.d);
    let open = 0;
    let most = 0;
    for (const edge of edges) most = Math.max(most, (open += edge.d));
    return most;
  }

  /** Waits until `path` has received `count` requests (real time). */
  async waitFor(path: string, count: number, timeoutMs = 30_000): Promise<Received[]> {
    const deadline = Date.now() + timeoutMs;
    while (this.at(path).length < count) {
      if (Date.now() > deadline) throw new Error(`${path} received ${this.at(path).length} of ${count} requests`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    return this.at(path);
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}

/** Verifies a received request with the standardwebhooks package; returns the parsed payload or throws. */
export function verify(secret: string, request: Received): Record<string, unknown> {
  return new Webhook(secret).verify(request.body, {
    'webhook-id': request.headers['webhook-id'] ?? '',
    'webhook-timestamp': request.headers['webhook-timestamp'] ?? '',
    'webhook-signature': request.headers['webhook-signature'] ?? '',
  }) as Record<string, unknown>;
}
