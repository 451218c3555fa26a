import { Client } from 'pg';
import { openOrm, type Orm } from '../../db/orm';
import { scoredFeatures } from '../../services/outcomes';
import { predictionHistory } from '../../services/predictions';
import { newId } from '../../services/ids';
import { TEST_ENV } from '../support/env';

/**
 * Migration 20261124130000 moves scored rows from one table row each to one row per call. Rows stored
 * before it (ids of 22 random characters, one per row) must keep their request_ids: outcomes still
 * find them and the history still lists them; going down gives the per-row table back.
 */
describe('migration to one stored row per call', () => {
  const adminUrl = new URL(process.env[TEST_ENV.databaseUrl]!);
  const name = `svc_migr_${process.pid}_${Date.now()}`;
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  let orm: Orm;

  async function admin(statement: string): Promise<void> {
    const client = new Client({ connectionString: adminUrl.toString() });
    await client.connect();
    try {
      await client.query(statement);
    } finally {
      await client.end();
    }
  }

  beforeAll(async () => {
    await admin(`create database ${name}`);
    orm = await openOrm(url.toString(), 2);
  });
  afterAll(async () => {
    await orm.close();
    await admin(`drop database if exists ${name} with (force)`);
  });

  it('keeps the request_ids, features and outputs of rows stored one per row, and gives them back going down', async () => {
    const migrator = orm.getMigrator();
    await migrator.up({ to: 'Migration20261123080000_billing' });
    const connection = orm.em.getConnection();
    const legacy = [0, 1, 2].map((i) => ({
      id: newId('request'),
      features: { x: i, colour: ['red', 'a\tb', 'ünï'][i] },
      output: { prediction: i % 2 ? 'yes' : 'no', proba_yes: i / 4 },
      createdAt: new Date(Date.UTC(2026, 10, 20, 12, 0, i)),
    }));
    for (const row of legacy) {
      await connection.execute(
        `insert into predictions (id, model_id, workspace_id, version_number, http_request_id, features, output, created_at) values (?, 'mdl_old', 'ws_old', 1, 'req_call', ?::jsonb, ?::jsonb, ?)`,
        [row.id, JSON.stringify({ ...row.features }), JSON.stringify({ request_id: row.id, ...row.output }), row.createdAt],
      );
    }

    await migrator.up();
    const em = orm.em.fork();
    const found = await scoredFeatures(em, 'mdl_old', [legacy[2]!.id, legacy[0]!.id, `${legacy[1]!.id.slice(0, 22)}zzzz`]);
    expect(new Map(found.map((r) => [r.id, r.features]))).toEqual(new Map([legacy[2]!, legacy[0]!].map((r) => [r.id, r.features])));
    const history = await predictionHistory(em, { id: 'mdl_old' }, { limit: 10, offset: 0 });
    expect({ total: history.total, count: history.count }).toEqual({ total: 3, count: 3 });
    const items = JSON.parse(history.itemsJson) as Array<{ request_id: string; features: unknown; output: unknown; created_at: string }>;
    expect(items.map((p) => [p.request_id, p.features, p.output, p.created_at])).toEqual(
      [...legacy].reverse().map((r) => [r.id, r.features, { request_id: r.id, ...r.output }, r.createdAt.toISOString()]),
    );

    await migrator.down();
    const back = await connection.execute<Array<{ id: string; features: unknown }>>(`select id, features from predictions order by created_at`);
    expect(back).toEqual(legacy.map((r) => ({ id: r.id, features: r.features })));
  });
});
