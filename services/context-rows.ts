import { gunzipSync } from 'node:zlib';
import type { Row } from './datasets';

/**
 * A version's training rows from its context's gzipped chunks (services/models.ts contextChunks), as
 * loadContext makes them: the chunks' rows in order, the oldest dropped beyond `maxRows`. Synchronous,
 * for an engine thread.
 */
export function contextRows(chunks: readonly Uint8Array[], maxRows: number | null): Row[] {
  const rows = chunks.flatMap((chunk) => JSON.parse(gunzipSync(chunk).toString('utf8')) as Row[]);
  return maxRows !== null && rows.length > maxRows ? rows.slice(rows.length - maxRows) : rows;
}
