import { ContextChunkSchema, CreditLedgerSchema, ModelSchema } from '../../db/entities';
import { gunzipText } from '../../services/compression';
import { churnRows, withoutTarget } from '../support/datasets';
import { expectError, startHarness, trainedChurnModel, type Harness } from '../support/harness';
import { padPastStaging, stagedCount as stagedCountOf } from '../support/staged';

const ENGINE = 'tabular-gbdt';

/**
 * A prediction or new model's body of STAGED_JSON_FROM_BYTES or more is read on an engine thread
 * (services/staged-bodies.ts, prediction-body.ts, training-body.ts). Each test sends the same JSON value
 * twice: as it is (read on the event loop) and padded with blanks past the threshold (read on a
 * thread), and expects the same answer, charge and stored rows.
 */
describe('large prediction and training bodies read on an engine thread', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(() => h.stop());

  const rows = (n: number, seed = 7) => withoutTarget(churnRows(n, seed), 'churned');

  /** The JSON text of `value` padded past the threshold (still the same JSON value). */
  const padded = (value: unknown): string => padPastStaging(JSON.stringify(value));

  const post = (modelId: string, apiKey: string, text: string, idempotencyKey?: string) => {
    const req = h.http.post(`/v1/models/${modelId}/predict`).set('X-API-Key', apiKey).set('Content-Type', 'application/json');
    return (idempotencyKey ? req.set('Idempotency-Key', idempotencyKey) : req).send(text);
  };

  const stagedCount = (outcome: 'staged' | 'refused') => stagedCountOf(h, outcome);

  const withoutIds = (predictions: Array<Record<string, unknown>>) => predictions.map(({ request_id: _id, ...rest }) => rest);

  it('answers, charges and stores a large body exactly as the same rows sent small, and reads it on a thread', async () => {
    const { apiKey, modelId, account } = await trainedChurnModel(h);
    const body = { rows: rows(40) };
    const stagedBefore = await stagedCount('staged');
    const small = await post(modelId, apiKey, JSON.stringify(body));
    expect(await stagedCount('staged')).toBe(stagedBefore);
    const large = await post(modelId, apiKey, padded(body));
    expect(await stagedCount('staged')).toBe(stagedBefore + 1);
    expect([small.status, large.status]).toEqual([200, 200]);
    expect(withoutIds(large.body.predictions)).toEqual(withoutIds(small.body.predictions));
    expect(large.body.credits_charged).toBe(40);
    expect(Number(large.headers['x-service-predictions-remaining'])).toBe(Number(small.headers['x-service-predictions-remaining']) - 40);
    // the stored rows: the same features, the answer's request_ids, found by the history
    const stored = await h.orm.em
      .fork()
      .getConnection()
      .execute<Array<{ http_request_id: string; row_count: number; features: unknown }>>(
        `select http_request_id, row_count, features from prediction_calls where model_id = ? order by created_at`,
        [modelId],
      );
    expect(stored.map((s) => [s.http_request_id, s.row_count])).toEqual([
      [small.headers['x-request-id'], 40],
      [large.headers['x-request-id'], 40],
    ]);
    expect(stored[1]!.features).toEqual(body.rows);
    const history = await h.http.get(`/v1/models/${modelId}/predictions?limit=80`).set('X-API-Key', apiKey);
    const ids = new Set(history.body.data.map((p: { request_id: string }) => p.request_id));
    for (const p of large.body.predictions) expect(ids.has(p.request_id)).toBe(true);
    const charges = await h.orm.em.fork().find(CreditLedgerSchema, { accountId: account.id, kind: 'charge' });
    expect(charges.map((c) => c.allowanceDelta + c.balanceDelta).sort()).toEqual([-40, -40]);
  });

  it('refuses a large body with the same answer as the same body sent small, changing nothing', async () => {
    const { apiKey, modelId, account } = await trainedChurnModel(h);
    const good = rows(3);
    const cases: Array<[string, string, number, string]> = [
      ['malformed JSON', '{"rows": [', 400, 'INVALID_JSON'],
      ['a NUL character in a value', JSON.stringify({ rows: [{ ...good[0], colour: 'a\u0000b' }] }), 400, 'VALIDATION_ERROR'],
      ['a __proto__ key', `{"rows": [{"__proto__": {"x": 1}}]}`, 400, 'VALIDATION_ERROR'],
      ['an unknown member', JSON.stringify({ rows: good, extra: 1 }), 400, 'VALIDATION_ERROR'],
      ['rows and data both', JSON.stringify({ rows: good, data: good }), 400, 'VALIDATION_ERROR'],
      ['neither rows nor data', JSON.stringify({}), 400, 'VALIDATION_ERROR'],
      ['a row that is not an object', JSON.stringify({ rows: [good[0], 5] }), 400, 'VALIDATION_ERROR'],
      ['a missing column', JSON.stringify({ rows: [good[0], { ...good[1], x2: undefined }] }), 400, 'COLUMN_MISMATCH'],
      ['text in a numeric column', JSON.stringify({ rows: [good[0], { ...good[1], x1: 'long' }] }), 400, 'SCHEMA_MISMATCH'],
      ['no rows', JSON.stringify({ rows: [] }), 400, 'VALIDATION_ERROR'],
      ['more rows than a call scores', JSON.stringify({ rows: Array.from({ length: 10_001 }, () => good[0]) }), 413, 'TOO_MANY_ROWS'],
    ];
    const stagedBefore = await stagedCount('staged');
    const refusedBefore = await stagedCount('refused');
    for (const [name, text, status, code] of cases) {
      const small = await post(modelId, apiKey, text);
      const large = await post(modelId, apiKey, padPastStaging(text));
      expectError(large, status, code);
      expect({ name, body: large.body }).toEqual({ name, body: small.body });
    }
    // the body's own refusals are the thread's; the others (columns, row count) come after it staged the rows
    expect(await stagedCount('refused')).toBe(refusedBefore + 7);
    expect(await stagedCount('staged')).toBe(stagedBefore + 4);
    expect(await h.orm.em.fork().count(CreditLedgerSchema, { accountId: account.id, kind: 'charge' })).toBe(0);
    const stored = await h.orm.em.fork().getConnection().execute(`select 1 from prediction_calls where model_id = ?`, [modelId]);
    expect(stored).toHaveLength(0);
  });

  it('refuses a large body with 402 when its rows cost more than remains, before scoring, charging nothing', async () => {
    const { apiKey, modelId, account } = await trainedChurnModel(h);
    await h.orm.em.fork().getConnection().execute(`update accounts set allowance_remaining = 10, purchased_balance = 0 where id = ?`, [account.id]);
    const stagedBefore = await stagedCount('staged');
    const refused = await post(modelId, apiKey, padded({ rows: rows(11) }));
    expect(await stagedCount('staged')).toBe(stagedBefore + 1);
    expectError(refused, 402, 'CREDITS_EXHAUSTED');
    expect(refused.body).toEqual(expect.objectContaining({ balance: 10, required: 11 }));
    expect(await h.orm.em.fork().count(CreditLedgerSchema, { accountId: account.id, kind: 'charge' })).toBe(0);
  });

  it('fingerprints a large body by its JSON value: a retry replays the answer, charged once, whether sent large or small; other rows under the key are 422', async () => {
    const { apiKey, modelId, account } = await trainedChurnModel(h);
    const body = { rows: rows(12, 3) };
    const stagedBefore = await stagedCount('staged');
    const first = await post(modelId, apiKey, padded(body), 'staged-retry');
    expect(first.status).toBe(200);
    const again = await post(modelId, apiKey, padded(body), 'staged-retry');
    const small = await post(modelId, apiKey, JSON.stringify(body), 'staged-retry');
    for (const replay of [again, small]) {
      expect(replay.status).toBe(200);
      expect(replay.headers['idempotent-replayed']).toBe('true');
      expect(replay.body).toEqual(first.body);
    }
    expectError(await post(modelId, apiKey, padded({ rows: rows(12, 4) }), 'staged-retry'), 422, 'IDEMPOTENCY_KEY_REUSED');
    // the three large bodies were fingerprinted by their threads, the small one here
    expect(await stagedCount('staged')).toBe(stagedBefore + 3);
    const charges = await h.orm.em.fork().find(CreditLedgerSchema, { accountId: account.id, kind: 'charge' });
    expect(charges.map((c) => c.allowanceDelta + c.balanceDelta)).toEqual([-12]);
    const stored = await h.orm.em.fork().getConnection().execute<Array<{ row_count: number }>>(`select row_count from prediction_calls where model_id = ?`, [modelId]);
    expect(stored).toEqual([{ row_count: 12 }]);
  });

  it('scores a multipart file of 256 KiB or more on the thread that parses it, as the same rows sent as JSON; its refusal keeps its code', async () => {
    const { apiKey, modelId, account } = await trainedChurnModel(h);
    const data = rows(4_000, 21);
    // numbers written out in full (the exact decimal of each double: the same values) to pass 256 KiB
    const csv = ['x1,x2,colour', ...data.map((r) => `${Number(r.x1).toFixed(45)},${Number(r.x2).toFixed(45)},${String(r.colour)}`)].join('\n');
    expect(csv.length).toBeGreaterThan(256 * 1024);
    const stagedBefore = await stagedCount('staged');
    const json = await post(modelId, apiKey, JSON.stringify({ rows: data }));
    const file = await h.http.post(`/v1/models/${modelId}/predict`).set('X-API-Key', apiKey).attach('file', Buffer.from(csv), { filename: 'rows.csv', contentType: 'text/csv' });
    expect([json.status, file.status]).toEqual([200, 200]);
    expect(await stagedCount('staged')).toBe(stagedBefore + 1);
    expect(withoutIds(file.body.predictions)).toEqual(withoutIds(json.body.predictions));
    const refusedBefore = await stagedCount('refused');
    const unreadable = await h.http
      .post(`/v1/models/${modelId}/predict`)
      .set('X-API-Key', apiKey)
      .attach('file', Buffer.from(`x1,x2,colour\n"1,2,red\n${csv}`), { filename: 'rows.csv', contentType: 'text/csv' });
    expectError(unreadable, 400, 'CSV_UNREADABLE');
    expect(await stagedCount('refused')).toBe(refusedBefore + 1);
    const charges = await h.orm.em.fork().find(CreditLedgerSchema, { accountId: account.id, kind: 'charge' });
    expect(charges.map((c) => c.allowanceDelta + c.balanceDelta)).toEqual([-4_000, -4_000]);
  });

  const train = (apiKey: string, text: string, idempotencyKey?: string) => {
    const req = h.http.post('/v1/models').set('X-API-Key', apiKey).set('Content-Type', 'application/json');
    return (idempotencyKey ? req.set('Idempotency-Key', idempotencyKey) : req).send(text);
  };

  /** A model's answer without what differs between two models of the same request (ids, times). */
  const comparable = (model: Record<string, unknown>) => {
    const copy = structuredClone(model) as Record<string, unknown> & { version: Record<string, unknown> };
    for (const key of ['id', 'created_at', 'updated_at']) delete copy[key];
    for (const key of ['id', 'created_at']) delete copy.version[key];
    return copy;
  };

  it('trains a model from a large body exactly as from the same rows sent small, storing the same context, and reads it on a thread', async () => {
    const { apiKey } = await h.provision('build');
    const body = { target: 'churned', engine: ENGINE, name: 'staged', explain: false, data: churnRows(120, 5) };
    const stagedBefore = await stagedCount('staged');
    const small = await train(apiKey, JSON.stringify(body));
    expect(await stagedCount('staged')).toBe(stagedBefore);
    const large = await train(apiKey, padded(body));
    expect(await stagedCount('staged')).toBe(stagedBefore + 1);
    expect([small.status, large.status]).toEqual([201, 201]);
    expect(comparable(large.body)).toEqual(comparable(small.body));
    const stored = async (modelId: string) => {
      const chunk = await h.orm.em.fork().findOneOrFail(ContextChunkSchema, { model: modelId, versionNumber: 1 }, { populate: ['data'] });
      return { rowCount: chunk.rowCount, rows: JSON.parse(await gunzipText(chunk.data)) as unknown };
    };
    expect(await stored(large.body.id)).toEqual({ rowCount: 120, rows: body.data });
    expect(await stored(large.body.id)).toEqual(await stored(small.body.id));
  });

  it('refuses a large training body with the same answer as the same body sent small, creating nothing', async () => {
    const { apiKey, account } = await h.provision('free');
    const rowsOf = (n: number) => churnRows(n, 9);
    const cases: Array<[string, string, number, string]> = [
      ['malformed JSON', '{"target": "churned", "data": [', 400, 'INVALID_JSON'],
      ['an unknown member', JSON.stringify({ target: 'churned', engine: ENGINE, data: rowsOf(20), extra: true }), 400, 'VALIDATION_ERROR'],
      ['a string for a boolean', JSON.stringify({ target: 'churned', engine: ENGINE, data: rowsOf(20), auto_update: 'true' }), 400, 'VALIDATION_ERROR'],
      ['no rows', JSON.stringify({ target: 'churned', engine: ENGINE }), 400, 'VALIDATION_ERROR'],
      ['no engine', JSON.stringify({ target: 'churned', data: rowsOf(20) }), 400, 'VALIDATION_ERROR'],
      ['the forecast engine', JSON.stringify({ target: 'churned', engine: 'forecast-auto', data: rowsOf(20) }), 400, 'VALIDATION_ERROR'],
      ['more rows than the plan trains on', JSON.stringify({ target: 'churned', engine: ENGINE, data: rowsOf(10_001) }), 413, 'TOO_MANY_ROWS'],
      ['a target absent from the rows', JSON.stringify({ target: 'nope', engine: ENGINE, data: rowsOf(20) }), 400, 'VALIDATION_ERROR'],
      ['a single target value', JSON.stringify({ target: 'churned', engine: ENGINE, data: rowsOf(30).map((r) => ({ ...r, churned: 'yes' })) }), 422, 'DATA_VALIDATION_FAILED'],
    ];
    const refusedBefore = await stagedCount('refused');
    for (const [name, text, status, code] of cases) {
      const small = await train(apiKey, text);
      const large = await train(apiKey, padPastStaging(text));
      expectError(large, status, code);
      expect({ name, body: large.body }).toEqual({ name, body: small.body });
    }
    expect(await stagedCount('refused')).toBe(refusedBefore + cases.length);
    expect(await h.orm.em.fork().count(ModelSchema, { account: account.id })).toBe(0);
  });

  it('replays the Idempotency-Key retry of a large training body, sent large or small, with one model created', async () => {
    const { apiKey, account } = await h.provision('build');
    const body = { target: 'churned', engine: ENGINE, data: churnRows(60, 11) };
    const stagedBefore = await stagedCount('staged');
    const first = await train(apiKey, padded(body), 'staged-model');
    expect(first.status).toBe(201);
    for (const retry of [await train(apiKey, padded(body), 'staged-model'), await train(apiKey, JSON.stringify(body), 'staged-model')]) {
      expect([retry.status, retry.headers['idempotent-replayed']]).toEqual([201, 'true']);
      expect(retry.body).toEqual(first.body);
    }
    expect(await h.orm.em.fork().count(ModelSchema, { account: account.id })).toBe(1);
    // the two large bodies were fingerprinted by their threads, the small one here
    expect(await stagedCount('staged')).toBe(stagedBefore + 2);
  });
});
