import type { EntityManager } from '@mikro-orm/postgresql';

interface PgConnection {
  query(text: string, params: unknown[]): Promise<{ rows: unknown[] }>;
}

interface PooledClient {
  acquireConnection(): Promise<PgConnection>;
  releaseConnection(connection: PgConnection): Promise<void>;
}

/**
 * One statement straight on a connection of the ORM's own pool (`$1`-style parameters), for the
 * few statements every paid call runs: the ORM's and the query builder's layers cost more CPU than
 * the statement itself there. Not for statements inside an ORM transaction.
 */
export async function sql<T>(em: EntityManager, text: string, params: unknown[]): Promise<T[]> {
  const client = em.getKnex().client as unknown as PooledClient;
  const connection = await client.acquireConnection();
  try {
    return (await connection.query(text, params)).rows as T[];
  } finally {
    await client.releaseConnection(connection);
  }
}

/** `?` placeholders, in order, as `$1`, `$2`, … (for statements written in the ORM's style). */
export function positional(text: string): string {
  let n = 0;
  return text.replace(/\?/g, () => `$${(n += 1)}`);
}
