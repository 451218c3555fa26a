import { createHash } from 'node:crypto';

/** What runs one statement: a pg pool (the call pool, db/call-pool.ts) or one of its clients. */
export interface Queryable {
  query(statement: { name: string; text: string; values: unknown[] }): Promise<{ rows: unknown[] }>;
}

const statementNames = new Map<string, string>();

/** A prepared statement's name for its text: each connection parses and plans it once, not per call. */
function statementName(text: string): string {
  let name = statementNames.get(text);
  if (!name) {
    name = `s${createHash('sha1').update(text).digest('hex').slice(0, 16)}`;
    // The texts are the service's own (a few dozen shapes); the bound keeps a mistake from growing it.
    if (statementNames.size < 1_000) statementNames.set(text, name);
  }
  return name;
}

/**
 * One statement with `$1`-style parameters, without the ORM, prepared once per connection: for the
 * few statements every paid call runs, where the ORM's layers and planning a statement of several
 * CTEs each time cost more than running it.
 */
export async function sql<T>(db: Queryable, text: string, params: unknown[]): Promise<T[]> {
  return (await db.query({ name: statementName(text), text, values: params })).rows as T[];
}

/** The `$n` placeholders of a statement being built, with their values in order. */
export class SqlParams {
  readonly values: unknown[] = [];
  add(value: unknown): string {
    this.values.push(value);
    return `$${this.values.length}`;
  }
}

/**
 * The same with `?` placeholders, for a statement run on the ORM's connection (inside one of its
 * transactions); the values are added in the order their placeholders appear in the text.
 */
export class OrmParams {
  readonly values: unknown[] = [];
  add(value: unknown): string {
    this.values.push(value);
    return '?';
  }
}

/** `?` placeholders, in order, as `$1`, `$2`, … (for statements written in the ORM's style). */
export function positional(text: string): string {
  let n = 0;
  return text.replace(/\?/g, () => `$${(n += 1)}`);
}
