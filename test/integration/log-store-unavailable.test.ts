import { churnRows, withoutTarget } from '../support/datasets';
import { expectError, startHarness, type Harness } from '../support/harness';

/**
 * When the tables behind the logs cannot be read, the read routes answer 503 with the contract's
 * codes (simulated by renaming the table for the duration of the call).
 */
describe('log store unavailable', () => {
  let h: Harness;
  let apiKey: string;
  let modelId: string;
  beforeAll(async () => {
    h = await startHarness();
    const account = await h.provision('build');
    apiKey = account.apiKey;
    const trained = await h.http.post('/v1/models').set('X-API-Key', apiKey).send({ target: 'churned', engine: 'tabular-gbdt', data: churnRows(60) });
    modelId = trained.body.id;
    await h.http.post(`/v1/models/${modelId}/predict`).set('X-API-Key', apiKey).send({ rows: withoutTarget(churnRows(2), 'churned') });
  });
  afterAll(() => h.stop());

  async function withTableHidden(table: string, run: () => Promise<void>): Promise<void> {
    const knex = h.orm.em.fork().getKnex();
    await h.requestLog.flush();
    await knex.raw(`alter table ${table} rename to ${table}_hidden`);
    try {
      await run();
    } finally {
      await knex.raw(`alter table ${table}_hidden rename to ${table}`);
    }
  }

  it('answers 503 REQUEST_LOG_UNAVAILABLE and USAGE_UNAVAILABLE when the request log cannot be read', async () => {
    await withTableHidden('request_log', async () => {
      expectError(await h.http.get('/v1/requests').set('X-API-Key', apiKey), 503, 'REQUEST_LOG_UNAVAILABLE');
      expectError(await h.http.get('/v1/usage').set('X-API-Key', apiKey), 503, 'USAGE_UNAVAILABLE');
    });
    expect((await h.http.get('/v1/requests').set('X-API-Key', apiKey)).status).toBe(200);
  });

  it('answers 503 PREDICTION_HISTORY_UNAVAILABLE and PERFORMANCE_UNAVAILABLE when the predictions cannot be read', async () => {
    await withTableHidden('prediction_calls', async () => {
      expectError(await h.http.get(`/v1/models/${modelId}/predictions`).set('X-API-Key', apiKey), 503, 'PREDICTION_HISTORY_UNAVAILABLE');
      expectError(await h.http.get(`/v1/models/${modelId}/performance`).set('X-API-Key', apiKey), 503, 'PERFORMANCE_UNAVAILABLE');
    });
    expect((await h.http.get(`/v1/models/${modelId}/predictions`).set('X-API-Key', apiKey)).status).toBe(200);
  });
});
