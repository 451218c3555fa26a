import { AccountSchema, CreditLedgerSchema, ModelVersionSchema, PredictionSchema } from '../../db/entities';
import { prunePredictions } from '../../services/predictions';
import { churnRows, toCsv, withoutTarget } from '../support/datasets';
import { expectError, startHarness, trainedChurnModel, type Harness } from '../support/harness';

const REMAINING = 'x-service-predictions-remaining';

describe('prediction, credits and idempotency', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(() => h.stop());

  const trainedModel = (plan: 'free' | 'build' = 'build') => trainedChurnModel(h, plan);

  async function setCredits(accountId: string, allowance: number, balance: number) {
    await h.orm.em.fork().nativeUpdate(AccountSchema, { id: accountId }, { allowanceRemaining: allowance, purchasedBalance: balance });
  }

  const rows = (n: number, seed = 7) => withoutTarget(churnRows(n, seed), 'churned');

  it('scores rows: prediction and one proba_<class> per class summing to 1, a request_id each, stored; charges price × rows', async () => {
    const { apiKey, modelId, account } = await trainedModel('free');
    const res = await h.http.post(`/v1/models/${modelId}/predict`).set('X-API-Key', apiKey).send({ rows: rows(3) });
    expect(res.status).toBe(200);
    expect(res.headers[REMAINING]).toBe('997');
    expect(res.body).toEqual(expect.objectContaining({ model_id: modelId, credits_charged: 3, credits_remaining: 997 }));
    expect(res.body.version.number).toBe(1);
    for (const p of res.body.predictions) {
      expect(['yes', 'no']).toContain(p.prediction);
      expect(p.request_id).toMatch(/^req_/);
      expect(p.proba_yes + p.proba_no).toBeCloseTo(1, 10);
    }
    expect(await h.orm.em.fork().count(PredictionSchema, { id: { $in: res.body.predictions.map((p: { request_id: string }) => p.request_id) } })).toBe(3);
    const ledger = await h.orm.em.fork().find(CreditLedgerSchema, { accountId: account.id, kind: 'charge' });
    expect(ledger.map((l) => [l.allowanceDelta, l.balanceDelta, l.operation])).toEqual([[-3, 0, 'models.predict']]);
  });

  it('scores a multipart CSV file the same as JSON rows', async () => {
    const { apiKey, modelId } = await trainedModel();
    const json = await h.http.post(`/v1/models/${modelId}/predict`).set('X-API-Key', apiKey).send({ rows: rows(5) });
    const csv = await h.http
      .post(`/v1/models/${modelId}/predict`)
      .set('X-API-Key', apiKey)
      .attach('file', Buffer.from(toCsv(rows(5), '\t')), { filename: 'rows.csv', contentType: 'text/csv' });
    expect(csv.status).toBe(200);
    const strip = (ps: Array<Record<string, unknown>>) => ps.map(({ request_id: _id, ...rest }) => rest);
    expect(strip(csv.body.predictions)).toEqual(strip(json.body.predictions));
  });

  it('draws the monthly allowance first, then the purchased balance, with exact header values (a 402 and its replay included) and ledger rows', async () => {
    const { apiKey, modelId, account } = await trainedModel();
    await setCredits(account.id, 3, 5);
    const first = await h.http.post(`/v1/models/${modelId}/predict`).set('X-API-Key', apiKey).send({ rows: rows(4) });
    expect(first.status).toBe(200);
    expect(first.headers[REMAINING]).toBe('4');
    const refused = await h.http.post(`/v1/models/${modelId}/predict`).set('X-API-Key', apiKey).send({ rows: rows(5) });
    expectError(refused, 402, 'CREDITS_EXHAUSTED');
    expect(refused.body).toEqual(expect.objectContaining({ balance: 4, required: 5 }));
    expect(refused.headers[REMAINING]).toBe('4');
    // The same refusal replayed for its Idempotency-Key states what remains too.
    const keyed = () => h.http.post(`/v1/models/${modelId}/predict`).set('X-API-Key', apiKey).set('Idempotency-Key', 'short-of-credits').send({ rows: rows(5) });
    expect((await keyed()).headers[REMAINING]).toBe('4');
    const replayed = await keyed();
    expectError(replayed, 402, 'CREDITS_EXHAUSTED');
    expect([replayed.headers['idempotent-replayed'], replayed.headers[REMAINING]]).toEqual(['true', '4']);
    const second = await h.http.post(`/v1/models/${modelId}/predict`).set('X-API-Key', apiKey).send({ rows: rows(4) });
    expect(second.headers[REMAINING]).toBe('0');
    const after = await h.orm.em.fork().findOneOrFail(AccountSchema, { id: account.id });
    expect([after.allowanceRemaining, after.purchasedBalance]).toEqual([0, 0]);
    const charges = await h.orm.em.fork().find(CreditLedgerSchema, { accountId: account.id, kind: 'charge' }, { orderBy: { createdAt: 'asc' } });
    expect(charges.map((c) => [c.allowanceDelta, c.balanceDelta, c.allowanceAfter, c.balanceAfter])).toEqual([
      [-3, -1, 0, 4],
      [0, -4, 0, 0],
    ]);
  });

  it('refuses with 402 before any computation and charges nothing', async () => {
    const { apiKey, modelId, account } = await trainedModel();
    await setCredits(account.id, 1, 0);
    const before = await h.orm.em.fork().count(PredictionSchema, { modelId });
    expectError(await h.http.post(`/v1/models/${modelId}/predict`).set('X-API-Key', apiKey).send({ rows: rows(2) }), 402, 'CREDITS_EXHAUSTED');
    expect(await h.orm.em.fork().count(PredictionSchema, { modelId })).toBe(before);
    expect(await h.orm.em.fork().count(CreditLedgerSchema, { accountId: account.id, kind: 'charge' })).toBe(0);
  });

  it('never overdraws: 50 concurrent one-row predictions on a balance that covers 20', async () => {
    const { apiKey, modelId, account } = await trainedModel();
    await setCredits(account.id, 12, 8);
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) => h.http.post(`/v1/models/${modelId}/predict`).set('X-API-Key', apiKey).send({ rows: rows(1, 100 + i) })),
    );
    const statuses = results.map((r) => r.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(20);
    expect(statuses.filter((s) => s === 402)).toHaveLength(30);
    const remaining = results.filter((r) => r.status === 200).map((r) => Number(r.headers[REMAINING])).sort((a, b) => a - b);
    expect(remaining).toEqual(Array.from({ length: 20 }, (_, i) => i));
    const after = await h.orm.em.fork().findOneOrFail(AccountSchema, { id: account.id });
    expect([after.allowanceRemaining, after.purchasedBalance]).toEqual([0, 0]);
    expect(await h.orm.em.fork().count(CreditLedgerSchema, { accountId: account.id, kind: 'charge' })).toBe(20);
  });

  it('charges an account whose next month another clock opened already (a twelfth probe: 402 "needs 1 credits and 80999 remain")', async () => {
    const { apiKey, modelId, account } = await trainedModel();
    // the Schedule (dated by Temporal) or a process whose clock is ahead opened next month just now
    const now = new Date();
    const next = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)).toISOString().slice(0, 7);
    await h.orm.em.fork().nativeUpdate(AccountSchema, { id: account.id }, { allowanceRemaining: 100, purchasedBalance: 0, allowancePeriod: next });
    const predict = (n: number, seed: number) => h.http.post(`/v1/models/${modelId}/predict`).set('X-API-Key', apiKey).send({ rows: rows(n, seed) });
    // the reserving path, then the small calls' shared charge, then a large call
    const answers = [await predict(1, 1), await predict(1, 2), await predict(50, 3)];
    expect(answers.map((r) => [r.status, r.headers[REMAINING]])).toEqual([
      [200, '99'],
      [200, '98'],
      [200, '48'],
    ]);
    const after = await h.orm.em.fork().findOneOrFail(AccountSchema, { id: account.id });
    expect([after.allowancePeriod, after.allowanceRemaining]).toEqual([next, 48]);
    const charges = await h.orm.em.fork().find(CreditLedgerSchema, { accountId: account.id, kind: 'charge' }, { orderBy: { createdAt: 'asc' } });
    expect(charges.map((l) => l.allowanceDelta)).toEqual([-1, -1, -50]);
  });

  it('refuses an admin key with ADMIN_KEY_CANNOT_PREDICT', async () => {
    const { adminKey, modelId } = await trainedModel();
    expectError(await h.http.post(`/v1/models/${modelId}/predict`).set('X-API-Key', adminKey).send({ rows: rows(1) }), 403, 'ADMIN_KEY_CANNOT_PREDICT');
  });

  it('names missing and unexpected columns (COLUMN_MISMATCH) and wrongly typed values (SCHEMA_MISMATCH, a long value quoted cut to 100 characters), charging nothing', async () => {
    const { apiKey, modelId, account } = await trainedModel();
    const bad = await h.http.post(`/v1/models/${modelId}/predict`).set('X-API-Key', apiKey).send({ rows: [{ x1: 1, colour: 'red', extra: 3 }] });
    expectError(bad, 400, 'COLUMN_MISMATCH');
    expect(bad.body).toEqual(expect.objectContaining({ missing_columns: ['x2'], unexpected_columns: ['extra'] }));
    const withTarget = await h.http.post(`/v1/models/${modelId}/predict`).set('X-API-Key', apiKey).send({ rows: churnRows(1) });
    expectError(withTarget, 400, 'COLUMN_MISMATCH');
    expect(withTarget.body.unexpected_columns).toEqual(['churned']);
    const typed = await h.http.post(`/v1/models/${modelId}/predict`).set('X-API-Key', apiKey).send({ rows: [{ x1: 'lots', x2: 1, colour: 'red' }] });
    expectError(typed, 400, 'SCHEMA_MISMATCH');
    expect(typed.body.column).toBe('x1');
    // A long value is quoted cut to 100 characters, not echoed whole in the sentence and in `errors` (an eleventh probe).
    const long = await h.http.post(`/v1/models/${modelId}/predict`).set('X-API-Key', apiKey).send({ rows: [{ x1: 'l'.repeat(100_000), x2: 1, colour: 'red' }] });
    expectError(long, 400, 'SCHEMA_MISMATCH');
    expect(long.body.messageDetail).toBe(`Row 0: column "x1" was numeric in training but received "${'l'.repeat(98)}….`);
    // A row of many unknown columns: the sentence names ten, the list has them all.
    const wide = Object.fromEntries([['x1', 1], ['colour', 'red'], ...Array.from({ length: 5_000 }, (_, i) => [`u${i}`, 1])]);
    const many = await h.http.post(`/v1/models/${modelId}/predict`).set('X-API-Key', apiKey).send({ rows: [wide] });
    expectError(many, 400, 'COLUMN_MISMATCH');
    expect(many.body.messageDetail).toBe(
      'Row 0: the columns must be the training columns minus the target; missing "x2"; unexpected "u0", "u1", "u2", "u3", "u4", "u5", "u6", "u7", "u8", "u9" and 4990 more.',
    );
    expect(many.body.unexpected_columns).toHaveLength(5_000);
    expect(await h.orm.em.fork().count(CreditLedgerSchema, { accountId: account.id, kind: 'charge' })).toBe(0);
  });

  it('answers 409 ENGINE_MISMATCH for a version whose engine this build no longer serves', async () => {
    const { apiKey, modelId } = await trainedModel();
    await h.orm.em.fork().nativeUpdate(ModelVersionSchema, { model: modelId }, { engineVersion: '0.0.1-retired' });
    expectError(await h.http.post(`/v1/models/${modelId}/predict`).set('X-API-Key', apiKey).send({ rows: rows(1) }), 409, 'ENGINE_MISMATCH');
  });

  it('answers 409 ENGINE_MISMATCH for an artefact this engine build cannot load, and refunds the reservation', async () => {
    const { apiKey, modelId, account } = await trainedModel();
    const { gzipText } = await import('../../services/compression');
    await h.orm.em.fork().nativeUpdate(ModelVersionSchema, { model: modelId }, { artefact: await gzipText('{"format":"tabular-gbdt","formatVersion":99}') });
    const res = await h.http.post(`/v1/models/${modelId}/predict`).set('X-API-Key', apiKey).send({ rows: rows(2) });
    expectError(res, 409, 'ENGINE_MISMATCH');
    const kinds = (await h.orm.em.fork().find(CreditLedgerSchema, { accountId: account.id, kind: { $in: ['charge', 'refund'] } })).map((l) => l.kind).sort();
    expect(kinds).toEqual(['charge', 'refund']);
    const after = await h.orm.em.fork().findOneOrFail(AccountSchema, { id: account.id });
    expect(after.allowanceRemaining).toBe(20_000);
  });

  it('counts more than 2^31 stored rows of a model: history, performance and the retention prune (a twelfth probe: 503 PREDICTION_HISTORY_UNAVAILABLE and PERFORMANCE_UNAVAILABLE)', async () => {
    const { apiKey, modelId, workspace } = await trainedModel();
    // two calls of 1.2 billion rows each, as a busy model stores within the 400-day retention
    const insert = (at: Date, tag: string) =>
      h.orm.em.getConnection().execute(
        `insert into prediction_calls (id, model_id, workspace_id, version_number, http_request_id, first_index, row_count, features, output, created_at)
         select 'pcl_big_' || ? || g, ?, ?, 1, 'req_big_' || ? || g, 0, 1200000000, '[]', '[]', ? from generate_series(1, 2) g`,
        [tag + modelId, modelId, workspace.id, tag + modelId, at],
      );
    await insert(new Date(Date.now() - 86_400_000), 'a');
    const history = await h.http.get(`/v1/models/${modelId}/predictions?limit=2`).set('X-API-Key', apiKey);
    expect(history.status).toBe(200);
    expect(history.body.pagination.total).toBe(2_400_000_000);
    const performance = await h.http.get(`/v1/models/${modelId}/performance`).set('X-API-Key', apiKey);
    expect(performance.status).toBe(200);
    expect(performance.body.predictions).toBe(2_400_000_000);
    // the prune of rows past their retention counts what it dropped, instead of failing (and keeping them)
    await insert(new Date(Date.now() - 1000 * 86_400_000), 'old');
    expect(await prunePredictions(h.orm.em.fork(), new Date())).toBeGreaterThanOrEqual(2_400_000_000);
    expect((await h.http.get(`/v1/models/${modelId}/predictions?limit=2`).set('X-API-Key', apiKey)).body.pagination.total).toBe(2_400_000_000);
  });

  it('lists the prediction history newest first, limited', async () => {
    const { apiKey, modelId } = await trainedModel();
    const first = await h.http.post(`/v1/models/${modelId}/predict`).set('X-API-Key', apiKey).send({ rows: rows(2) });
    const second = await h.http.post(`/v1/models/${modelId}/predict`).set('X-API-Key', apiKey).send({ rows: rows(1, 9) });
    const history = await h.http.get(`/v1/models/${modelId}/predictions?limit=2`).set('X-API-Key', apiKey);
    expect(history.status).toBe(200);
    expect(history.body.data).toHaveLength(2);
    expect(history.body.data[0].request_id).toBe(second.body.predictions[0].request_id);
    expect(first.body.predictions.map((p: { request_id: string }) => p.request_id)).toContain(history.body.data[1].request_id);
    expect(history.body.data[0].features).toEqual(rows(1, 9)[0]);
  });

  it('shows each history row with the outcome last reported for it and no outcome member for a row without one, in the documented shape', async () => {
    const { apiKey, modelId } = await trainedModel();
    const scored = await h.http.post(`/v1/models/${modelId}/predict`).set('X-API-Key', apiKey).send({ rows: rows(2, 31) });
    const [firstId, secondId] = scored.body.predictions.map((p: { request_id: string }) => p.request_id);
    for (const actual of ['no', 'yes']) {
      expect((await h.http.post(`/v1/models/${modelId}/outcomes`).set('X-API-Key', apiKey).send({ outcomes: [{ request_id: firstId, actual }] })).status).toBe(201);
    }
    const history = await h.http.get(`/v1/models/${modelId}/predictions`).set('X-API-Key', apiKey);
    expect(history.status).toBe(200);
    expect(history.headers['content-type']).toMatch(/^application\/json/);
    const [second, first] = history.body.data;
    expect(Object.keys(first)).toEqual(['request_id', 'version_number', 'features', 'output', 'outcome', 'created_at']);
    expect({ id: first.request_id, outcome: first.outcome, features: first.features, version: first.version_number }).toEqual({ id: firstId, outcome: 'yes', features: rows(2, 31)[0], version: 1 });
    expect(first.output).toEqual(scored.body.predictions[0]);
    expect(Object.keys(second)).toEqual(['request_id', 'version_number', 'features', 'output', 'created_at']);
    expect(second.request_id).toBe(secondId);
    expect(first.created_at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    expect(Math.abs(Date.parse(first.created_at) - Date.now())).toBeLessThan(60_000);
    expect(history.body.pagination).toEqual({ total: 2, limit: 50, offset: 0, has_more: false });
  });

  it('pages the prediction history across calls: newest call first, a call from its last row, each row once, with its total', async () => {
    const { apiKey, modelId } = await trainedModel();
    const ids: string[][] = [];
    for (const [n, seed] of [[3, 21], [2, 22], [4, 23]] as const) {
      const res = await h.http.post(`/v1/models/${modelId}/predict`).set('X-API-Key', apiKey).send({ rows: rows(n, seed) });
      expect(res.status).toBe(200);
      ids.push(res.body.predictions.map((p: { request_id: string }) => p.request_id));
    }
    const expected = [...ids].reverse().flatMap((call) => [...call].reverse());
    const seen: string[] = [];
    for (let offset = 0; offset < 10; offset += 2) {
      const page = await h.http.get(`/v1/models/${modelId}/predictions?limit=2&offset=${offset}`).set('X-API-Key', apiKey);
      expect(page.status).toBe(200);
      expect(page.body.pagination).toEqual({ total: 9, limit: 2, offset, has_more: offset + 2 < 9 });
      seen.push(...page.body.data.map((p: { request_id: string }) => p.request_id));
    }
    expect(seen).toEqual(expected);
    const middle = await h.http.get(`/v1/models/${modelId}/predictions?limit=3&offset=3`).set('X-API-Key', apiKey);
    expect(middle.body.data.map((p: { request_id: string; features: unknown }) => [p.request_id, p.features])).toEqual([
      [ids[2]![0], rows(4, 23)[0]],
      [ids[1]![1], rows(2, 22)[1]],
      [ids[1]![0], rows(2, 22)[0]],
    ]);
  });

  it('stores the rows of a large call exactly as sent, text with tabs, newlines, backslashes and quotes included, with and without an Idempotency-Key', async () => {
    const { apiKey, modelId } = await trainedModel();
    const awkward = ['red', 'a\tb', 'line\nbreak\r\n', 'back\\slash\\N', '"quoted"', 'ünïcødé ✓', '\\.', ''];
    const sent = rows(40, 11).map((row, i) => ({ ...row, colour: awkward[i % awkward.length] }));
    for (const idempotencyKey of [null, 'large-call']) {
      const call = h.http.post(`/v1/models/${modelId}/predict`).set('X-API-Key', apiKey);
      const res = await (idempotencyKey ? call.set('Idempotency-Key', idempotencyKey) : call).send({ rows: sent });
      expect(res.status).toBe(200);
      const ids: string[] = res.body.predictions.map((p: { request_id: string }) => p.request_id);
      const stored = await h.orm.em.fork().find(PredictionSchema, { id: { $in: ids } });
      const byId = new Map(stored.map((p) => [p.id, p]));
      expect(ids.map((id) => byId.get(id)?.features)).toEqual(sent);
      expect(ids.map((id) => byId.get(id)?.output)).toEqual(res.body.predictions);
    }
  });

  describe('Idempotency-Key', () => {
    it('replays the same call: same status, body and remaining header, charged once', async () => {
      const { apiKey, modelId, account } = await trainedModel();
      const send = () => h.http.post(`/v1/models/${modelId}/predict`).set('X-API-Key', apiKey).set('Idempotency-Key', 'pred-1').send({ rows: rows(3) });
      const first = await send();
      await h.http.post(`/v1/models/${modelId}/predict`).set('X-API-Key', apiKey).send({ rows: rows(1) }); // moves the balance
      const replay = await send();
      expect(replay.status).toBe(first.status);
      expect(replay.body).toEqual(first.body);
      expect(replay.headers[REMAINING]).toBe(first.headers[REMAINING]);
      expect(await h.orm.em.fork().count(CreditLedgerSchema, { accountId: account.id, kind: 'charge' })).toBe(2);
    });

    it('replays a retry whose body lists the members of its rows in another order: the same call, charged once (a tenth probe got 422 IDEMPOTENCY_KEY_REUSED)', async () => {
      const { apiKey, modelId, account } = await trainedModel();
      const sent = rows(3);
      const reversed = sent.map((row) => Object.fromEntries(Object.entries(row).reverse()));
      expect(Object.keys(reversed[0]!)).not.toEqual(Object.keys(sent[0]!));
      const send = (body: unknown) => h.http.post(`/v1/models/${modelId}/predict`).set('X-API-Key', apiKey).set('Idempotency-Key', 'reordered').send(body as object);
      const first = await send({ rows: sent });
      const retry = await send({ rows: reversed });
      expect({ status: retry.status, replayed: retry.headers['idempotent-replayed'], body: retry.body }).toEqual({ status: 200, replayed: 'true', body: first.body });
      expect(await h.orm.em.fork().count(CreditLedgerSchema, { accountId: account.id, kind: 'charge' })).toBe(1);
    });

    it('answers the same key with other content with 422 IDEMPOTENCY_KEY_REUSED', async () => {
      const { apiKey, modelId } = await trainedModel();
      await h.http.post(`/v1/models/${modelId}/predict`).set('X-API-Key', apiKey).set('Idempotency-Key', 'k').send({ rows: rows(1) });
      const other = await h.http.post(`/v1/models/${modelId}/predict`).set('X-API-Key', apiKey).set('Idempotency-Key', 'k').send({ rows: rows(2) });
      expectError(other, 422, 'IDEMPOTENCY_KEY_REUSED');
    });

    it('keeps keys per workspace and creates one model for a replayed training call', async () => {
      const a = await h.provision('build');
      const b = await h.provision('build');
      const body = { target: 'churned', engine: 'tabular-gbdt', data: churnRows(50) };
      const first = await h.http.post('/v1/models').set('X-API-Key', a.apiKey).set('Idempotency-Key', 'same').send(body);
      const replay = await h.http.post('/v1/models').set('X-API-Key', a.apiKey).set('Idempotency-Key', 'same').send(body);
      const otherWorkspace = await h.http.post('/v1/models').set('X-API-Key', b.apiKey).set('Idempotency-Key', 'same').send(body);
      expect([first.status, replay.status, otherWorkspace.status]).toEqual([201, 201, 201]);
      expect(replay.body.id).toBe(first.body.id);
      expect(otherWorkspace.body.id).not.toBe(first.body.id);
      expect((await h.http.get('/v1/models').set('X-API-Key', a.apiKey)).body.pagination.total).toBe(1);
    });
  });
});
