import { gunzipJsonSync } from './compression';
import type { Row } from './datasets';

/** The newest `maxRows` of a context's rows (all of them without a cap): a plan trains on at most its training rows. */
export function newestRows(rows: Row[], maxRows: number | null): Row[] {
  return maxRows !== null && rows.length > maxRows ? rows.slice(rows.length - maxRows) : rows;
}

/**
 * A version's training rows from its context's gzipped chunks (services/models.ts contextChunks), as
 * loadContext makes them: the chunks' rows in order, the oldest dropped beyond `maxRows`. Synchronous,
 * for an engine thread.
 */
export function contextRows(chunks: readonly Uint8Array[], maxRows: number | null): Row[] {
  return newestRows(
    chunks.flatMap((chunk) => gunzipJsonSync<Row[]>(chunk)),
    maxRows,
  );
}
