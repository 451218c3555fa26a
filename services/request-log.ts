import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { REQUEST_LOG_RETENTION_DAYS } from '../config/plans';
import type { Logger } from 'pino';
import type { RequestLogEntry } from '../db/entities';

/**
 * Writes the request log off the request path: entries are buffered and inserted in batches (every
 * `flushMs` or `maxBatch` entries), so a call never waits for its own log line.
 */
export class RequestLogWriter {
  private buffer: RequestLogEntry[] = [];
  private timer: NodeJS.Timeout | null = null;
  private inFlight: Promise<void> = Promise.resolve();

  constructor(
    private readonly orm: MikroORM,
    private readonly logger: Logger,
    private readonly flushMs = 250,
    private readonly maxBatch = 200,
  ) {}

  record(entry: RequestLogEntry): void {
    this.buffer.push(entry);
    if (this.buffer.length >= this.maxBatch) this.schedule(0);
    else this.schedule(this.flushMs);
  }

  private schedule(delay: number): void {
    if (this.timer && delay > 0) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = null;
      void this.flush();
    }, delay);
    this.timer.unref();
  }

  /** Writes what is buffered; resolves once every entry recorded so far is stored. */
  async flush(): Promise<void> {
    const batch = this.buffer;
    this.buffer = [];
    const previous = this.inFlight;
    this.inFlight = (async () => {
      await previous;
      if (batch.length === 0) return;
      try {
        await this.orm.em
          .fork()
          .getKnex()('request_log')
          .insert(
            batch.map((e) => ({
              id: e.id,
              workspace_id: e.workspaceId,
              account_id: e.accountId,
              key_id: e.keyId,
              method: e.method,
              path: e.path.slice(0, 500),
              operation: e.operation,
              status: e.status,
              error_code: e.errorCode,
              credits: e.credits,
              duration_ms: e.durationMs,
              created_at: e.createdAt,
            })),
          );
      } catch (err) {
        this.logger.error({ err, lost: batch.length }, 'request log batch not written');
      }
    })();
    return this.inFlight;
  }

  async close(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.flush();
  }
}

/** Drops log entries older than the retention (30 days); run by the sweep Schedule. */
export async function pruneRequestLog(em: EntityManager, now: Date): Promise<number> {
  const cutoff = new Date(now.getTime() - REQUEST_LOG_RETENTION_DAYS * 86_400_000);
  return em.getKnex()('request_log').where('created_at', '<', cutoff).delete();
}
