import { EARLIEST_INSTANT_MS, LATEST_INSTANT_MS, OUTSIDE_STORABLE_YEARS, isStorableInstant } from '../api/schemas/common';
import { AppError, notFound, validationError } from './errors';
import { getWorkspace } from './workspaces';
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

export interface LogWindow {
  from: Date;
  to: Date;
}

const DAY_MS = 86_400_000;
const MAX_WINDOW_DAYS = 30;
const DEFAULT_WINDOW_DAYS = 7;

const DATE_ONLY = /^\d{4}-\d{2}-\d{2}$/;

/**
 * The window a log or usage query reads: `to` defaults to now and a date alone includes that whole day;
 * `from` defaults to 7 days before `to`; at most 30 days, within the storable years (400 otherwise).
 */
export function logWindow(from: string | undefined, to: string | undefined): LogWindow {
  // `to=2026-11-01` means up to the end of that day, so from=D&to=D is the day D (9999-12-31: up to its last millisecond)
  const end = to ? new Date(DATE_ONLY.test(to) ? Math.min(new Date(to).getTime() + DAY_MS, LATEST_INSTANT_MS) : new Date(to).getTime()) : new Date();
  const start = from ? new Date(from) : new Date(Math.max(end.getTime() - DEFAULT_WINDOW_DAYS * DAY_MS, EARLIEST_INSTANT_MS));
  // a bound past the storable instants (a year 0 or 10000 once its offset is applied) failed the query: 503
  for (const [name, bound] of [['from', start], ['to', end]] as const) {
    if (!isStorableInstant(bound.getTime())) throw validationError(`Invalid query.${name}: ${OUTSIDE_STORABLE_YEARS}`);
  }
  if (start > end) throw validationError('Invalid query.from: it must be before query.to.');
  if (end.getTime() - start.getTime() > MAX_WINDOW_DAYS * DAY_MS) throw validationError(`The window from..to is at most ${MAX_WINDOW_DAYS} days.`);
  return { from: start, to: end };
}

export interface RequestLogRow {
  id: string;
  method: string;
  path: string;
  operation: string;
  status: number;
  error_code: string | null;
  credits: number;
  duration_ms: number;
  key_id: string | null;
  created_at: Date;
}

/** A page of a workspace's calls in a window, newest first; 503 REQUEST_LOG_UNAVAILABLE when unreadable. */
export async function requestLogPage(
  em: EntityManager,
  log: RequestLogWriter,
  workspaceId: string,
  query: LogWindow & { errorsOnly: boolean; limit: number; offset: number },
): Promise<{ items: RequestLogRow[]; total: number }> {
  // the calls answered just before this one are listed
  await log.flush();
  try {
    const filter = `workspace_id = ? and created_at >= ? and created_at <= ?${query.errorsOnly ? ' and status >= 400' : ''}`;
    const params = [workspaceId, query.from, query.to];
    const connection = em.getConnection();
    const [counted] = await connection.execute<Array<{ n: number }>>(`select count(*)::int as n from request_log where ${filter}`, params);
    const items = await connection.execute<RequestLogRow[]>(
      `select id, method, path, operation, status, error_code, credits, duration_ms, key_id, created_at from request_log where ${filter}
        order by created_at desc, id desc limit ? offset ?`,
      [...params, query.limit, query.offset],
    );
    return { items, total: counted?.n ?? 0 };
  } catch (err) {
    throw new AppError('REQUEST_LOG_UNAVAILABLE', 503, 'The request log cannot be read right now; retry later.', {}, err);
  }
}

/**
 * Credits and calls of a workspace by UTC day and operation; 503 USAGE_UNAVAILABLE when unreadable.
 * The credit sums are read as float8 (exact to 2^53): a contract account's month can charge about two
 * billion credits, more than a 32-bit integer holds (a twelfth probe got 503 for it).
 */
export async function usageByDay(em: EntityManager, workspaceId: string, window: LogWindow): Promise<Array<{ day: string; operation: string; credits: number; calls: number }>> {
  try {
    const rows = await em.getConnection().execute<Array<{ day: string; operation: string; credits: number; calls: number }>>(
      `select to_char(created_at at time zone 'UTC', 'YYYY-MM-DD') as day, operation, coalesce(sum(credits), 0)::float8 as credits, count(*)::int as calls
         from request_log where workspace_id = ? and created_at >= ? and created_at <= ?
        group by day, operation order by day, operation`,
      [workspaceId, window.from, window.to],
    );
    return rows;
  } catch (err) {
    throw new AppError('USAGE_UNAVAILABLE', 503, 'Usage cannot be read right now; retry later.', {}, err);
  }
}

/** Who reads usage: an API key acts on its one workspace, a web session on any workspace of its account. */
export interface UsageReader {
  type: 'api_key' | 'session';
  workspaceId: string;
  accountId: string;
}

export interface WorkspaceUsage {
  workspaceId: string;
  window: LogWindow;
  totalCredits: number;
  totalCalls: number;
  byDay: Array<{ day: string; operation: string; credits: number; calls: number }>;
}

/**
 * Usage of the workspace `requested` names (the caller's own when absent). A web session may read any
 * workspace of its account, as X-Workspace-Id would let it act on; a key only its own. Anything else is
 * 404, so a workspace of another account is not told apart from one that does not exist.
 */
export async function workspaceUsage(em: EntityManager, log: RequestLogWriter, reader: UsageReader, requested: string | undefined, window: LogWindow): Promise<WorkspaceUsage> {
  const workspaceId = requested ?? reader.workspaceId;
  if (workspaceId !== reader.workspaceId) {
    if (reader.type !== 'session') throw notFound(`Workspace ${workspaceId}`);
    await getWorkspace(em, reader.accountId, workspaceId);
  }
  // the calls answered just before this one are counted
  await log.flush();
  const byDay = await usageByDay(em, workspaceId, window);
  return { workspaceId, window, totalCredits: byDay.reduce((s, r) => s + r.credits, 0), totalCalls: byDay.reduce((s, r) => s + r.calls, 0), byDay };
}
