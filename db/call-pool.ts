import { Pool } from 'pg';
import type { Logger } from 'pino';

/**
 * The connections that carry the statements every paid call runs: authentication, the rate budgets,
 * the scoring model, the credit reservation and the stored answer with its settlement.
 *
 * Their transactions commit without waiting for the WAL flush (`synchronous_commit = off`). A call
 * reserves its credits on the account's row, and with a synchronous commit that row stays locked
 * through the flush (2-3 ms on this kind of disk), so every call of an account would queue behind
 * the previous one's fsync: that capped a workspace at ~450 calls per second whatever the CPU.
 * Committed asynchronously, a statement is visible and its locks released at once; PostgreSQL flushes
 * the WAL within `wal_writer_delay` × 3 (600 ms by default) and in commit order, so the ledger stays
 * consistent: a settlement is never durable without the reservation before it. What a crash of the
 * PostgreSQL server itself (not of the API process) can lose is the last fraction of a second of
 * calls, charge and answer together. Money coming in (purchases, Stripe events), accounts, keys and
 * everything else stay on the ORM's pool with synchronous commits. See docs/DECISIONS.md.
 */
export function openCallPool(databaseUrl: string, max: number, logger?: Logger): Pool {
  const pool = new Pool({ connectionString: databaseUrl, max, options: '-c synchronous_commit=off' });
  // An idle connection cut by a PostgreSQL restart must not take the process down; the next query
  // opens a new one (and a call that meets the outage answers 503).
  pool.on('error', (err) => logger?.warn({ err }, 'idle PostgreSQL connection of the call pool lost'));
  return pool;
}
