import { Client as PgClient } from 'pg';
import { FIT_BUDGET_WINDOW_MS, FITS_PER_DAY, PLANS, type PlanName } from '../../config/plans';
import { TABULAR_ENGINE } from '../../engines/tabular/index';
import { ContextChunkSchema, ModelVersionSchema, OutcomeSchema } from '../../db/entities';
import { gunzipJson } from '../../services/compression';
import { newId } from '../../services/ids';
import { markStaleModels } from '../../services/model-staleness';
import { archiveModel, storeVersion } from '../../services/models';
import { fitAndStoreVersion, foldPendingOutcomes } from '../../services/training';
import { churnRows, withoutTarget } from '../support/datasets';
import { expectError, startHarness, type Harness } from '../support/harness';

async function waitForVersions(count: () => Promise<number>, wanted: number): Promise<number> {
  const deadline = Date.now() + 60_000;
  let versions = await count();
  while (versions < wanted && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 300));
    versions = await count();
  }
  return versions;
}

describe('feedback loop: outcomes, refresh, performance', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(() => h.stop());

  const versionsAfter = (modelId: string, wanted: number) => waitForVersions(() => h.orm.em.fork().count(ModelVersionSchema, { model: modelId }), wanted);

  async function trainedModel(extra: Record<string, unknown> = {}, plan: PlanName = 'build') {
    const account = await h.provision(plan);
    const res = await h.http.post('/v1/models').set('X-API-Key', account.apiKey).send({ target: 'churned', engine: 'tabular-gbdt', data: churnRows(100), ...extra });
    expect(res.status).toBe(201);
    return { ...account, modelId: res.body.id as string };
  }

  /** The request_id of one row (churnRows seed `seed`) scored by the model. */
  async function scoredRequestId(apiKey: string, modelId: string, seed: number): Promise<string> {
    const [row] = withoutTarget(churnRows(1, seed), 'churned');
    const scored = await h.http.post(`/v1/models/${modelId}/predict`).set('X-API-Key', apiKey).send({ rows: [row] });
    return scored.body.predictions[0].request_id as string;
  }

  it('finds the features of any row of a call by its request_id, and refuses ids of no row: 400 and nothing recorded', async () => {
    const { apiKey, modelId } = await trainedModel();
    const sent = withoutTarget(churnRows(5, 31), 'churned');
    const scored = await h.http.post(`/v1/models/${modelId}/predict`).set('X-API-Key', apiKey).send({ rows: sent });
    const ids: string[] = scored.body.predictions.map((p: { request_id: string }) => p.request_id);
    const recorded = await h.http
      .post(`/v1/models/${modelId}/outcomes`)
      .set('X-API-Key', apiKey)
      .send({ outcomes: [{ request_id: ids[3], actual: 'yes' }, { request_id: ids[0], actual: 'no' }] });
    expect(recorded.status).toBe(201);
    const stored = await h.orm.em.fork().find(OutcomeSchema, { modelId }, { orderBy: { predictionId: 'asc' } });
    expect(stored.map((o) => [o.predictionId, o.features])).toEqual([
      [ids[0], sent[0]],
      [ids[3], sent[3]],
    ]);
    const stem = ids[0]!.slice(0, 22);
    const otherStem = `${stem.slice(0, 21)}${stem[21] === 'a' ? 'b' : 'a'}`;
    // past the call's last row, too short, too long, not base62, another call
    for (const forged of [`${stem}0005`, `${stem}000`, `${stem}0000x`, `${stem}00-1`, `${otherStem}0000`]) {
      const res = await h.http.post(`/v1/models/${modelId}/outcomes`).set('X-API-Key', apiKey).send({ outcomes: [{ request_id: forged, actual: 'yes' }] });
      expectError(res, 400, 'VALIDATION_ERROR');
    }
    expect(await h.orm.em.fork().count(OutcomeSchema, { modelId })).toBe(2);
  });

  it('matches outcomes by request_id and by features; a refresh makes version 2 serve while version 1 stays listed', async () => {
    const { apiKey, modelId } = await trainedModel();
    const scored = await h.http.post(`/v1/models/${modelId}/predict`).set('X-API-Key', apiKey).send({ rows: withoutTarget(churnRows(2, 5), 'churned') });
    const [p0] = scored.body.predictions;

    const noPending = await h.http.post(`/v1/models/${modelId}/refresh`).set('X-API-Key', apiKey);
    expectError(noPending, 409, 'NO_PENDING_OUTCOMES');

    const extra = withoutTarget(churnRows(1, 6), 'churned')[0];
    const recorded = await h.http
      .post(`/v1/models/${modelId}/outcomes`)
      .set('X-API-Key', apiKey)
      .send({ outcomes: [{ request_id: p0.request_id, actual: 'yes' }, { features: extra, actual: 'no' }] });
    expect(recorded.status).toBe(201);
    expect(recorded.body).toEqual(expect.objectContaining({ accepted: 2, pending: 2, integration_started: false }));
    const stored = await h.orm.em.fork().find(OutcomeSchema, { modelId }, { orderBy: { createdAt: 'asc' } });
    expect(stored.find((o) => o.predictionId === p0.request_id)?.features).toEqual(withoutTarget(churnRows(2, 5), 'churned')[0]);

    const refreshed = await h.http.post(`/v1/models/${modelId}/refresh`).set('X-API-Key', apiKey);
    expect(refreshed.status).toBe(201);
    expect(refreshed.body.version).toEqual(expect.objectContaining({ number: 2, serving: true, trigger: 'refresh', context_rows: 102, outcomes_folded: 2 }));
    expect(refreshed.body.version.id).toMatch(/^ver_/);

    const versions = await h.http.get(`/v1/models/${modelId}/versions`).set('X-API-Key', apiKey);
    expect(versions.body.data.map((v: { number: number; serving: boolean }) => [v.number, v.serving])).toEqual([
      [2, true],
      [1, false],
    ]);
    const next = await h.http.post(`/v1/models/${modelId}/predict`).set('X-API-Key', apiKey).send({ rows: [extra] });
    expect(next.body.version.number).toBe(2);
    expect((await h.orm.em.fork().find(OutcomeSchema, { modelId })).map((o) => [o.status, o.foldedInVersion])).toEqual([
      ['folded', 2],
      ['folded', 2],
    ]);
    expectError(await h.http.post(`/v1/models/${modelId}/refresh`).set('X-API-Key', apiKey), 409, 'NO_PENDING_OUTCOMES');
  });

  it('folds outcomes as rows equal, key order included, to their features plus the target (awkward names and values, 12,000 outcomes over several pages of the fold\'s cursor), and marks every one folded', async () => {
    const account = await h.provision('build');
    const columns = ['10', 'naïve "col"', 'back\\slash', 'a b'];
    const target = '2 "y"';
    const value = (i: number): Array<string | number | null> => [i % 7, i % 3 === 0 ? null : `s\u00e9 "${i % 4}" \\ \n`, i % 5 === 0 ? 1e21 : -0.1 * (i % 9), i % 2 === 0 ? 'x' : 'y'];
    const rowOf = (i: number) => Object.fromEntries(columns.map((c, j) => [c, value(i)[j]]));
    const data = Array.from({ length: 80 }, (_, i) => ({ ...rowOf(i), [target]: i % 3 === 0 ? 'up' : 'down' }));
    const trained = await h.http.post('/v1/models').set('X-API-Key', account.apiKey).send({ target, engine: 'tabular-gbdt', data });
    expect(trained.status).toBe(201);
    const modelId = trained.body.id as string;
    const reported: Array<{ features: Record<string, unknown>; actual: string }> = [];
    for (let batch = 0; batch < 2; batch++) {
      const outcomes = Array.from({ length: 6_000 }, (_, k) => ({ features: rowOf(batch * 6_000 + k), actual: k % 2 === 0 ? 'up' : 'down' }));
      const res = await h.http.post(`/v1/models/${modelId}/outcomes`).set('X-API-Key', account.apiKey).send({ outcomes });
      expect(res.status).toBe(201);
      reported.push(...outcomes);
    }
    const refreshed = await h.http.post(`/v1/models/${modelId}/refresh`).set('X-API-Key', account.apiKey);
    expect(refreshed.status).toBe(201);
    expect(refreshed.body.version).toEqual(expect.objectContaining({ number: 2, outcomes_folded: 12_000, context_rows: 12_080 }));
    const [chunk] = await h.orm.em.fork().find(ContextChunkSchema, { model: modelId, versionNumber: 2 }, { populate: ['data'] });
    const folded = await gunzipJson<Array<Record<string, unknown>>>(chunk!.data);
    // in the order they were reported; each row is what the JSON of its features plus the target reads as
    const stored = await h.orm.em.fork().find(OutcomeSchema, { modelId }, { orderBy: { createdAt: 'asc', id: 'asc' } });
    const expected = stored.map((o) => ({ ...o.features, [target]: o.actual }));
    expect(folded).toHaveLength(12_000);
    expect(folded.map((r) => Object.keys(r))).toEqual(expected.map((r) => Object.keys(r)));
    expect(folded).toEqual(expected);
    // and they are the rows reported (stored as jsonb, whose key order is its own)
    const canonical = (row: Record<string, unknown>) => JSON.stringify(Object.keys(row).sort().map((k) => [k, row[k]]));
    expect(folded.map(canonical).sort()).toEqual(reported.map((o) => canonical({ ...o.features, [target]: o.actual })).sort());
    expect(new Set(stored.map((o) => `${o.status}:${o.foldedInVersion}`))).toEqual(new Set(['folded:2']));
  });

  it('reads a regression outcome\'s numeric text as the engine does: "0x10", "0b101" and "0o17" are 400 (the engine found them non-numeric, so every later refresh failed and performance answered 503), numeric text is stored as its number', async () => {
    const { apiKey } = await h.provision('build');
    const data = Array.from({ length: 40 }, (_, i) => ({ a: (i * 7) % 13, b: i % 2 === 0 ? 'x' : 'y', t: 3 * ((i * 7) % 13) + (i % 5) }));
    const created = await h.http.post('/v1/models').set('X-API-Key', apiKey).send({ target: 't', engine: 'tabular-gbdt', task: 'regression', data });
    expect(created.status).toBe(201);
    const modelId = created.body.id as string;
    const scored = await h.http.post(`/v1/models/${modelId}/predict`).set('X-API-Key', apiKey).send({ rows: [{ a: 3, b: 'x' }] });
    const requestId = scored.body.predictions[0].request_id as string;
    for (const actual of ['0x10', '0b101', '0o17']) {
      expectError(await h.http.post(`/v1/models/${modelId}/outcomes`).set('X-API-Key', apiKey).send({ outcomes: [{ request_id: requestId, actual }] }), 400, 'VALIDATION_ERROR');
    }
    // the same rule for a numeric feature: the engine would have scored "0x10" as a missing value
    expectError(await h.http.post(`/v1/models/${modelId}/predict`).set('X-API-Key', apiKey).send({ rows: [{ a: '0x10', b: 'x' }] }), 400, 'SCHEMA_MISMATCH');
    expect(await h.orm.em.fork().count(OutcomeSchema, { modelId })).toBe(0);

    const kept = await h.http.post(`/v1/models/${modelId}/outcomes`).set('X-API-Key', apiKey).send({ outcomes: [{ request_id: requestId, actual: ' 12.5 ' }] });
    expect(kept.status).toBe(201);
    expect((await h.orm.em.fork().find(OutcomeSchema, { modelId })).map((o) => o.actual)).toEqual([12.5]);
    const performance = await h.http.get(`/v1/models/${modelId}/performance`).set('X-API-Key', apiKey);
    expect(performance.status).toBe(200);
    expect(performance.body.observed).toEqual(expect.objectContaining({ matched: 1 }));
    expect((await h.http.post(`/v1/models/${modelId}/refresh`).set('X-API-Key', apiKey)).status).toBe(201);
  });

  it('passes over regression outcomes stored before actual was checked ("0x10", "1e400", "NaN") and scores the rest: performance 200, not 503 for good', async () => {
    const { apiKey, workspace } = await h.provision('build');
    const data = Array.from({ length: 40 }, (_, i) => ({ a: (i * 7) % 13, t: 3 * ((i * 7) % 13) + (i % 5) }));
    const created = await h.http.post('/v1/models').set('X-API-Key', apiKey).send({ target: 't', engine: 'tabular-gbdt', data });
    expect(created.status).toBe(201);
    const modelId = created.body.id as string;
    const scored = await h.http.post(`/v1/models/${modelId}/predict`).set('X-API-Key', apiKey).send({ rows: [1, 2, 3, 4, 5].map((a) => ({ a })) });
    const predictions = scored.body.predictions as Array<{ request_id: string; prediction: number }>;
    const reported = await h.http
      .post(`/v1/models/${modelId}/outcomes`)
      .set('X-API-Key', apiKey)
      .send({ outcomes: predictions.slice(0, 2).map((p) => ({ request_id: p.request_id, actual: p.prediction + 1 })) });
    expect(reported.status).toBe(201);
    // rows as the service stored them before the rule (the route refuses each of these values now)
    const legacy: unknown[] = ['0x10', '1e400', 'NaN'];
    for (const [i, actual] of legacy.entries()) {
      await h.orm.em
        .fork()
        .getConnection()
        .execute(`insert into outcomes (id, model_id, workspace_id, prediction_id, features, actual, status) values (?, ?, ?, ?, '{}', ?::jsonb, 'pending')`, [
          newId('outcome'),
          modelId,
          workspace.id,
          predictions[2 + i]!.request_id,
          JSON.stringify(actual),
        ]);
    }
    const performance = await h.http.get(`/v1/models/${modelId}/performance`).set('X-API-Key', apiKey);
    expect(performance.status).toBe(200);
    expect(performance.body.observed).toEqual({ matched: 2, metric: 'rmse', score: expect.any(Number) });
    expect(performance.body.observed.score).toBeCloseTo(1, 9);
  });

  it('scores a regression whose errors are large (outcomes within the accepted ±1e150): performance answers a finite RMSE, not 503 (a sixteenth probe: avg() of the squared errors overflowed)', async () => {
    const { apiKey } = await h.provision('build');
    const data = Array.from({ length: 40 }, (_, i) => ({ a: (i * 7) % 13, t: 3 * ((i * 7) % 13) + (i % 5) }));
    const created = await h.http.post('/v1/models').set('X-API-Key', apiKey).send({ target: 't', engine: 'tabular-gbdt', data });
    expect(created.status).toBe(201);
    const modelId = created.body.id as string;
    const scored = await h.http.post(`/v1/models/${modelId}/predict`).set('X-API-Key', apiKey).send({ rows: [{ a: 1 }, { a: 2 }, { a: 3 }] });
    const predictions = scored.body.predictions as Array<{ request_id: string; prediction: number }>;
    const actuals = [1e150, -1e150, predictions[2]!.prediction];
    const reported = await h.http
      .post(`/v1/models/${modelId}/outcomes`)
      .set('X-API-Key', apiKey)
      .send({ outcomes: predictions.map((p, i) => ({ request_id: p.request_id, actual: actuals[i] })) });
    expect(reported.status).toBe(201);
    const performance = await h.http.get(`/v1/models/${modelId}/performance`).set('X-API-Key', apiKey);
    expect(performance.status).toBe(200);
    const errors = predictions.map((p, i) => (p.prediction - actuals[i]!) / 1e150);
    const rmse = 1e150 * Math.sqrt(errors.reduce((sum, e) => sum + e * e, 0) / errors.length);
    expect(performance.body.observed).toEqual({ matched: 3, metric: 'rmse', score: expect.any(Number) });
    expect(performance.body.observed.score / rmse).toBeCloseTo(1, 10);
    expect(performance.body.verdict).toBe('dropped');
  });

  it('passes over a model whose performance cannot be read in the daily model.stale check and judges the models after it (a sixteenth probe: one such model failed the whole check, every day, for every account)', async () => {
    const { apiKey } = await h.provision('build');
    const data = Array.from({ length: 40 }, (_, i) => ({ a: (i * 7) % 13, t: 3 * ((i * 7) % 13) + (i % 5) }));
    const ids: string[] = [];
    for (let i = 0; i < 2; i += 1) {
      const created = await h.http.post('/v1/models').set('X-API-Key', apiKey).send({ target: 't', engine: 'tabular-gbdt', data });
      expect(created.status).toBe(201);
      ids.push(created.body.id as string);
    }
    // the check goes in id order, as PostgreSQL sorts them: the first is made unreadable, the second stale
    const ordered = await h.orm.em.getConnection().execute<Array<{ id: string }>>(`select id from models where id in (?, ?) order by id`, ids);
    const [broken, silent] = ordered.map((r) => r.id) as [string, string];
    const scored = await h.http.post(`/v1/models/${broken}/predict`).set('X-API-Key', apiKey).send({ rows: [{ a: 1 }] });
    const reported = await h.http.post(`/v1/models/${broken}/outcomes`).set('X-API-Key', apiKey).send({ outcomes: [{ request_id: scored.body.predictions[0].request_id, actual: 4 }] });
    expect(reported.status).toBe(201);
    // a stored prediction PostgreSQL cannot read as a number (a damaged row: outcomes stored before
    // actuals were checked no longer make the route fail, judged_number passes over them)
    await h.orm.em.getConnection().execute(`update prediction_calls set output = '[{"prediction":"n/a"}]' where model_id = ?`, [broken]);
    expectError(await h.http.get(`/v1/models/${broken}/performance`).set('X-API-Key', apiKey), 503, 'PERFORMANCE_UNAVAILABLE');
    // served 31 days, predicting, no outcome: stale
    expect((await h.http.post(`/v1/models/${silent}/predict`).set('X-API-Key', apiKey).send({ rows: [{ a: 2 }] })).status).toBe(200);
    await h.orm.em.getConnection().execute(`update models set created_at = now() - interval '31 days' where id = ?`, [silent]);

    const passedOver: string[] = [];
    const marked = await markStaleModels(h.orm.em.fork(), new Date(), (modelId) => passedOver.push(modelId));
    expect(passedOver).toContain(broken);
    expect(marked.failed).toBeGreaterThanOrEqual(1);
    const episodes = await h.orm.em.getConnection().execute<Array<{ reason: string }>>(`select reason from model_stale_episodes where model_id = ?`, [silent]);
    expect(episodes.map((e) => e.reason)).toEqual(['no_outcomes']);
  });

  it('reads an outcome\'s class by the engine\'s label rule and matches it in performance however PostgreSQL spells it: 1e-7 and "0.0000001" name the class 1e-7 (binary and multiclass), "TRUE" names true', async () => {
    const { apiKey } = await h.provision('build');
    const cases: Array<{ labels: Array<number | boolean>; sent: (label: number | boolean, i: number) => unknown; stored: unknown[]; metric: string }> = [
      { labels: [1e-7, 1], sent: (label, i) => (label === 1e-7 && i % 2 === 0 ? '0.0000001' : label), stored: [1e-7, 1], metric: 'roc_auc' },
      { labels: [1e-7, 2, 3], sent: (label) => label, stored: [1e-7, 2, 3], metric: 'log_loss' },
      { labels: [false, true], sent: (label, i) => (i % 2 === 0 ? String(label).toUpperCase() : label), stored: [false, true], metric: 'roc_auc' },
    ];
    for (const { labels, sent, stored, metric } of cases) {
      const data = Array.from({ length: 60 }, (_, i) => ({ a: i % labels.length + ((i * 7) % 5) / 10, b: i % 3, t: labels[i % labels.length] }));
      const created = await h.http.post('/v1/models').set('X-API-Key', apiKey).send({ target: 't', engine: 'tabular-gbdt', task: 'classification', data });
      expect(created.status).toBe(201);
      const modelId = created.body.id as string;
      const scored = await h.http.post(`/v1/models/${modelId}/predict`).set('X-API-Key', apiKey).send({ rows: withoutTarget(data, 't') });
      expect(scored.status).toBe(200);
      const outcomes = scored.body.predictions.map((p: { request_id: string }, i: number) => ({ request_id: p.request_id, actual: sent(data[i]!.t, i) }));
      expect((await h.http.post(`/v1/models/${modelId}/outcomes`).set('X-API-Key', apiKey).send({ outcomes })).status).toBe(201);
      const kept = await h.orm.em.fork().find(OutcomeSchema, { modelId });
      expect(new Set(kept.map((o) => JSON.stringify(o.actual)))).toEqual(new Set(stored.map((v) => JSON.stringify(v))));
      const performance = await h.http.get(`/v1/models/${modelId}/performance`).set('X-API-Key', apiKey);
      expect(performance.status).toBe(200);
      expect(performance.body.observed).toEqual({ matched: 60, metric, score: expect.any(Number) });
      // every outcome is its row's own label, so the model scores them about as it scored its training rows
      expect(performance.body.verdict).toBe('holding');
    }
  });

  it('refuses an invalid outcome batch whole: neither request_id nor features, unknown request_id, wrong columns, an unknown class (quoted cut to 100 characters)', async () => {
    const { apiKey, modelId } = await trainedModel();
    const features = withoutTarget(churnRows(1), 'churned')[0];
    expectError(await h.http.post(`/v1/models/${modelId}/outcomes`).set('X-API-Key', apiKey).send({ outcomes: [{ actual: 'yes' }] }), 400, 'VALIDATION_ERROR');
    expectError(
      await h.http.post(`/v1/models/${modelId}/outcomes`).set('X-API-Key', apiKey).send({ outcomes: [{ features, actual: 'no' }, { request_id: 'req_unknown', actual: 'yes' }] }),
      400,
      'VALIDATION_ERROR',
    );
    expectError(await h.http.post(`/v1/models/${modelId}/outcomes`).set('X-API-Key', apiKey).send({ outcomes: [{ features: { x1: 1 }, actual: 'no' }] }), 400, 'COLUMN_MISMATCH');
    expectError(await h.http.post(`/v1/models/${modelId}/outcomes`).set('X-API-Key', apiKey).send({ outcomes: [] }), 400, 'VALIDATION_ERROR');
    // an unknown class is quoted cut to 100 characters, not echoed whole (an eleventh probe)
    const unknownClass = await h.http.post(`/v1/models/${modelId}/outcomes`).set('X-API-Key', apiKey).send({ outcomes: [{ features, actual: 'm'.repeat(100_000) }] });
    expectError(unknownClass, 400, 'VALIDATION_ERROR');
    expect(unknownClass.body.messageDetail).toBe(`Invalid body.outcomes.0.actual: this binary model knows the classes "no", "yes"; got "${'m'.repeat(98)}….`);
    expect(await h.orm.em.fork().count(OutcomeSchema, { modelId })).toBe(0);
    expectError(await h.http.post('/v1/models/mdl_nope/outcomes').set('X-API-Key', apiKey).send({ outcomes: [{ features, actual: 'no' }] }), 404, 'NOT_FOUND');
  });

  it('records more concurrent request_id batches of one model than the database pool has connections, each once (a twenty-fourth probe: 20 at once held every connection and the API stopped answering every account for a minute or two)', async () => {
    const { apiKey, modelId } = await trainedModel();
    const requestId = await scoredRequestId(apiKey, modelId, 43);
    const batches = h.config.DATABASE_POOL_MAX + 4;
    const answers = await Promise.all(
      Array.from({ length: batches }, (_, i) => h.http.post(`/v1/models/${modelId}/outcomes`).set('X-API-Key', apiKey).send({ outcomes: [{ request_id: requestId, actual: i % 2 === 0 ? 'yes' : 'no' }] })),
    );
    expect(answers.map((r) => r.status)).toEqual(Array.from({ length: batches }, () => 201));
    expect(await h.orm.em.fork().count(OutcomeSchema, { modelId })).toBe(batches);
  }, 60_000);

  it('keeps at most the plan’s training rows of outcomes waiting for a refresh, also against concurrent batches: beyond, 409 TOO_MANY_PENDING_OUTCOMES and nothing recorded (an eighth probe reported one prediction 300,000 times)', async () => {
    const { modelId, ...account } = await trainedModel({}, 'free');
    const requestId = await scoredRequestId(account.apiKey, modelId, 41);
    const batch = (n: number) => ({ outcomes: Array.from({ length: n }, (_, i) => ({ request_id: requestId, actual: i % 2 === 0 ? 'yes' : 'no' })) });
    const stored = () => h.orm.em.fork().count(OutcomeSchema, { modelId });
    // free plan: 10,000 training rows; three batches of 4,000 at once, two fit
    const answers = await Promise.all([0, 1, 2].map(() => h.http.post(`/v1/models/${modelId}/outcomes`).set('X-API-Key', account.apiKey).send(batch(4_000))));
    expect(answers.map((r) => r.status).sort()).toEqual([201, 201, 409]);
    const refused = answers.find((r) => r.status === 409)!;
    expectError(refused, 409, 'TOO_MANY_PENDING_OUTCOMES');
    expect(refused.body).toEqual(expect.objectContaining({ limit: 10_000, pending: 8_000 }));
    expect(await stored()).toBe(8_000);
    const upToLimit = await h.http.post(`/v1/models/${modelId}/outcomes`).set('X-API-Key', account.apiKey).send(batch(2_000));
    expect({ status: upToLimit.status, pending: upToLimit.body.pending }).toEqual({ status: 201, pending: 10_000 });
    expectError(await h.http.post(`/v1/models/${modelId}/outcomes`).set('X-API-Key', account.apiKey).send(batch(1)), 409, 'TOO_MANY_PENDING_OUTCOMES');
    expect(await stored()).toBe(10_000);
  });

  it('keeps the outcomes waiting for a refresh within what a training set of the plan may weigh (free 10 MiB): beyond, 409 TOO_MANY_PENDING_OUTCOMES and nothing recorded (a twenty-first probe stored 8 MB outcomes nine times, 69 → 257 MB of database, within the row limit)', async () => {
    const { modelId, ...account } = await trainedModel({}, 'free');
    const [row] = withoutTarget(churnRows(1, 47), 'churned');
    // two outcomes of a 1.5 MB colour each: three batches weigh 9 MB, a fourth would take 12 MB
    const heavy = { outcomes: [0, 1].map((i) => ({ features: { ...row, colour: String(i).repeat(1_500_000) }, actual: 'yes' })) };
    for (let call = 0; call < 3; call += 1) expect((await h.http.post(`/v1/models/${modelId}/outcomes`).set('X-API-Key', account.apiKey).send(heavy)).status).toBe(201);
    const refused = await h.http.post(`/v1/models/${modelId}/outcomes`).set('X-API-Key', account.apiKey).send(heavy);
    expectError(refused, 409, 'TOO_MANY_PENDING_OUTCOMES');
    expect(refused.body).toEqual(expect.objectContaining({ limit_bytes: PLANS.free.maxDatasetBytes, pending_bytes: expect.any(Number) }));
    expect(refused.body.pending_bytes).toBeGreaterThan(9_000_000);
    expect(await h.orm.em.fork().count(OutcomeSchema, { modelId })).toBe(6);
    // a light one still fits
    expect((await h.http.post(`/v1/models/${modelId}/outcomes`).set('X-API-Key', account.apiKey).send({ outcomes: [{ features: row, actual: 'no' }] })).status).toBe(201);
  });

  it('deletes the outcomes of a refresh whose context the engine refuses (422), so the next refresh folds only later ones and succeeds, and nothing of them is kept (an eighth probe: one prediction reported 10,000 times made every later refresh fail for good)', async () => {
    const { modelId, ...account } = await trainedModel({}, 'free');
    const requestId = await scoredRequestId(account.apiKey, modelId, 43);
    // the free plan trains on the newest 10,000 context rows: all of them this one row
    const same = { outcomes: Array.from({ length: 10_000 }, (_, i) => ({ request_id: requestId, actual: i % 2 === 0 ? 'yes' : 'no' })) };
    expect((await h.http.post(`/v1/models/${modelId}/outcomes`).set('X-API-Key', account.apiKey).send(same)).status).toBe(201);
    const refused = await h.http.post(`/v1/models/${modelId}/refresh`).set('X-API-Key', account.apiKey);
    expectError(refused, 422, 'DATA_VALIDATION_FAILED');
    const statuses = await h.callPool.query<{ status: string; n: number }>(`select status, count(*)::int as n from outcomes where model_id = $1 group by status`, [modelId]);
    // deleted, not kept: nothing counted them, so a loop of refused refreshes stored without bound (a twenty-first probe)
    expect(statuses.rows).toEqual([]);
    expect((await h.callPool.query(`select 1 from model_context_chunks where model_id = $1 and version_number = 2`, [modelId])).rowCount).toBe(0);
    expectError(await h.http.post(`/v1/models/${modelId}/refresh`).set('X-API-Key', account.apiKey), 409, 'NO_PENDING_OUTCOMES');
    // outcomes reported afterwards refresh the model as usual
    const later = churnRows(30, 44).map(({ churned, ...features }) => ({ features, actual: churned }));
    const reported = await h.http.post(`/v1/models/${modelId}/outcomes`).set('X-API-Key', account.apiKey).send({ outcomes: later });
    expect({ status: reported.status, pending: reported.body.pending }).toEqual({ status: 201, pending: 30 });
    const refreshed = await h.http.post(`/v1/models/${modelId}/refresh`).set('X-API-Key', account.apiKey);
    expect(refreshed.status).toBe(201);
    expect(refreshed.body).toEqual(expect.objectContaining({ outcomes_folded: 30, version: expect.objectContaining({ number: 2, context_rows: 130 }) }));
  });

  it('answers 409 UPDATE_IN_PROGRESS while a refresh of the model runs, and creates no version', async () => {
    const { apiKey, modelId } = await trainedModel();
    const features = withoutTarget(churnRows(1), 'churned')[0];
    await h.http.post(`/v1/models/${modelId}/outcomes`).set('X-API-Key', apiKey).send({ outcomes: [{ features, actual: 'no' }] });
    // An update that is running (on a queue no worker polls, so it stays running for the test).
    const running = await h.client.workflow.start('refreshModel', {
      taskQueue: 'nobody-polls-this-queue',
      workflowId: `refresh/${modelId}`,
      args: [{ modelId, heartbeatTimeoutMs: 30_000 }],
    });
    try {
      expectError(await h.http.post(`/v1/models/${modelId}/refresh`).set('X-API-Key', apiKey), 409, 'UPDATE_IN_PROGRESS');
      expect(await h.orm.em.fork().count(ModelVersionSchema, { model: modelId })).toBe(1);
    } finally {
      await running.terminate('test cleanup');
    }
    expect((await h.http.post(`/v1/models/${modelId}/refresh`).set('X-API-Key', apiKey)).status).toBe(201);
  });

  it('a refresh whose model is deleted or archived before it folds answers 404 or 409 MODEL_ARCHIVED, not NO_PENDING_OUTCOMES', async () => {
    for (const action of ['delete', 'archive'] as const) {
      const { apiKey, modelId } = await trainedModel();
      const outcomes = withoutTarget(churnRows(20, 9), 'churned').map((features) => ({ features, actual: 'yes' }));
      expect((await h.http.post(`/v1/models/${modelId}/outcomes`).set('X-API-Key', apiKey).send({ outcomes })).status).toBe(201);
      // the model's row held, so the refresh's fold waits for the change made below (what a deletion or
      // an archive committing just before the fold looks like)
      const change = new PgClient({ connectionString: h.config.DATABASE_URL });
      await change.connect();
      let refresh;
      try {
        await change.query('begin');
        await change.query('select id from models where id = $1 for update', [modelId]);
        refresh = h.http.post(`/v1/models/${modelId}/refresh`).set('X-API-Key', apiKey).then((r) => r);
        const handle = h.client.workflow.getHandle(`refresh/${modelId}`);
        while (!(await handle.describe().then((d) => d.status.name === 'RUNNING', () => false))) await new Promise((resolve) => setTimeout(resolve, 20));
        if (action === 'delete') {
          await change.query(`update models set status = 'deleted', deleted_at = now() where id = $1`, [modelId]);
          // what deleteModelAndWork does, here while the fold still waits: the workflow ends cancelled
          await handle.cancel();
        } else await change.query(`update models set status = 'archived', archived_at = now() where id = $1`, [modelId]);
        await change.query('commit');
      } finally {
        await change.end();
      }
      if (action === 'delete') expectError(await refresh, 404, 'NOT_FOUND');
      else {
        expectError(await refresh, 409, 'MODEL_ARCHIVED');
        expect(await h.orm.em.fork().count(OutcomeSchema, { modelId, status: 'pending' })).toBe(20);
      }
      expect(await h.orm.em.fork().count(ModelVersionSchema, { model: modelId })).toBe(1);
    }
  });

  it('a refresh whose model is archived after its fold (before or during the fit) stores no version: its outcomes are pending again, and after a restore the next refresh folds them (a seventeenth probe: a running integration refreshed an archived model)', async () => {
    const { apiKey, modelId, workspace } = await trainedModel();
    const em = () => h.orm.em.fork();
    const report = async (seed: number) => {
      const outcomes = withoutTarget(churnRows(10, seed), 'churned').map((features) => ({ features, actual: 'yes' }));
      expect((await h.http.post(`/v1/models/${modelId}/outcomes`).set('X-API-Key', apiKey).send({ outcomes })).status).toBe(201);
    };
    const state = async () => ({
      versions: await em().count(ModelVersionSchema, { model: modelId }),
      chunks: await em().count(ContextChunkSchema, { model: modelId, versionNumber: 2 }),
      pending: await em().count(OutcomeSchema, { modelId, status: 'pending' }),
    });
    const restore = async () => expect((await h.http.post(`/v1/models/${modelId}/restore`).set('X-API-Key', apiKey)).status).toBe(200);

    // archived between the fold and the fit: the fit does not run
    await report(21);
    expect(await foldPendingOutcomes(em(), modelId)).toEqual({ number: 2, folded: 10 });
    await archiveModel(em(), workspace.id, modelId);
    expect(await fitAndStoreVersion(em(), h.enginePool, { modelId, number: 2, trigger: 'refresh', outcomesFolded: 10 })).toBeNull();
    expect(await state()).toEqual({ versions: 1, chunks: 0, pending: 10 });
    await restore();

    // archived while the fit ran: what it fitted is not stored (a fitted version, here version 1's, offered after the archive)
    await report(22);
    expect(await foldPendingOutcomes(em(), modelId)).toEqual({ number: 2, folded: 20 });
    await archiveModel(em(), workspace.id, modelId);
    const first = await em().findOneOrFail(ModelVersionSchema, { model: modelId, number: 1 });
    const fitted = {
      artefact: first.artefact!,
      engineId: first.engineId,
      engineVersion: first.engineVersion,
      formatVersion: first.formatVersion,
      report: first.report,
      validation: first.validation,
      topFactors: first.topFactors,
      featureColumns: ['x1', 'x2', 'colour'],
      contextRows: first.contextRows + 20,
      outcomesFolded: 20,
      trigger: 'refresh' as const,
    };
    expect(await storeVersion(em(), modelId, 2, fitted)).toBeNull();
    expect(await state()).toEqual({ versions: 1, chunks: 0, pending: 20 });
    expect((await h.http.get(`/v1/models/${modelId}`).set('X-API-Key', apiKey)).body).toEqual(expect.objectContaining({ status: 'archived', version: expect.objectContaining({ number: 1 }) }));

    // restored, the next refresh folds all of them
    await restore();
    const refreshed = await h.http.post(`/v1/models/${modelId}/refresh`).set('X-API-Key', apiKey);
    expect(refreshed.status).toBe(201);
    expect(refreshed.body.version).toEqual(expect.objectContaining({ number: 2, outcomes_folded: 20 }));
    expect(await state()).toEqual({ versions: 2, chunks: 1, pending: 0 });
  });

  it('an outcomes batch racing its model\'s deletion is purged with the model\'s other pending outcomes, never left pending on a deleted model', async () => {
    const { apiKey, adminKey, modelId } = await trainedModel();
    const scored = await h.http.post(`/v1/models/${modelId}/predict`).set('X-API-Key', apiKey).send({ rows: withoutTarget(churnRows(1, 4), 'churned') });
    const requestId = scored.body.predictions[0].request_id as string;
    const lockWaiters = async () =>
      (
        await h.orm.em
          .fork()
          .getConnection()
          .execute<Array<{ n: number }>>(`select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`)
      )[0]!.n;
    // The batch is held after it has read its model, while it looks its prediction up...
    const hold = new PgClient({ connectionString: h.config.DATABASE_URL });
    await hold.connect();
    let reported;
    let deleted;
    try {
      await hold.query('begin');
      await hold.query('lock table prediction_calls in access exclusive mode');
      reported = h.http.post(`/v1/models/${modelId}/outcomes`).set('X-API-Key', apiKey).send({ outcomes: [{ request_id: requestId, actual: 'yes' }] }).then((r) => r);
      while ((await lockWaiters()) < 1) await new Promise((resolve) => setTimeout(resolve, 20));
      // ...and the model is deleted meanwhile (it either completes or waits for the batch).
      let done = false;
      deleted = h.http.delete(`/v1/models/${modelId}`).set('X-API-Key', adminKey).then((r) => {
        done = true;
        return r;
      });
      while (!done && (await lockWaiters()) < 2) await new Promise((resolve) => setTimeout(resolve, 20));
      await hold.query('rollback');
    } finally {
      await hold.end();
    }
    expect([201, 404]).toContain((await reported).status);
    expect((await deleted).status).toBe(204);
    expect(await h.orm.em.fork().count(OutcomeSchema, { modelId })).toBe(0);
  });

  it('a refresh whose fit a deletion cancels answers 404, not 500', async () => {
    const { apiKey, adminKey, modelId } = await trainedModel({ data: churnRows(3000, 5) });
    const outcomes = withoutTarget(churnRows(20, 9), 'churned').map((features) => ({ features, actual: 'yes' }));
    expect((await h.http.post(`/v1/models/${modelId}/outcomes`).set('X-API-Key', apiKey).send({ outcomes })).status).toBe(201);
    const refresh = h.http.post(`/v1/models/${modelId}/refresh`).set('X-API-Key', apiKey).then((r) => r);
    // once the fit runs (a few seconds on 3,000 rows), the model is deleted: its workflow is cancelled
    const handle = h.client.workflow.getHandle(`refresh/${modelId}`);
    const fitting = async () => {
      const d = await handle.describe().catch(() => null);
      if (d && d.status.name !== 'RUNNING') throw new Error(`the refresh ended (${d.status.name}) before its fit was seen running`);
      return d?.raw.pendingActivities?.some((a) => a.activityType?.name === 'fitVersion') ?? false;
    };
    while (!(await fitting())) await new Promise((resolve) => setTimeout(resolve, 20));
    expect((await h.http.delete(`/v1/models/${modelId}`).set('X-API-Key', adminKey)).status).toBe(204);
    expectError(await refresh, 404, 'NOT_FOUND');
    expect((await handle.describe()).status.name).toBe('CANCELLED');
  });

  /**
   * Spends a model's refresh budget: `count` versions made by refreshes, copies of version 1 numbered
   * from 1,000 (the next real version is still 2), one a second from `oldest` on.
   */
  async function spendRefreshes(modelId: string, count: number, oldest: Date): Promise<void> {
    await h.callPool.query(
      `insert into model_versions (id, model_id, number, engine_id, engine_version, format_version, artefact, artefact_bytes, report, validation, top_factors, context_rows, outcomes_folded, trigger, created_at)
       select 'ver_b' || g || '_' || model_id, model_id, 1000 + g, engine_id, engine_version, format_version, null, artefact_bytes, report, validation, top_factors, context_rows, 0, 'refresh', $2::timestamptz + g * interval '1 second'
         from model_versions, generate_series(0, $3::int - 1) g where model_id = $1 and number = 1`,
      [modelId, oldest, count],
    );
  }

  it('refreshes a model at most its plan’s refreshes a day: beyond, 429 RATE_LIMITED with Retry-After until the oldest of them leaves the 24 hours, nothing folded and the outcome still pending; then the refresh proceeds (an eighteenth probe refreshed one free model every 0.33 s, each a fit and a version kept for good)', async () => {
    const { apiKey, modelId } = await trainedModel();
    const limit = FITS_PER_DAY.build;
    const oldest = new Date(Date.now() - 3_600_000);
    await spendRefreshes(modelId, limit, oldest);
    const features = withoutTarget(churnRows(1, 7), 'churned')[0];
    expect((await h.http.post(`/v1/models/${modelId}/outcomes`).set('X-API-Key', apiKey).send({ outcomes: [{ features, actual: 'yes' }] })).status).toBe(201);
    const refused = await h.http.post(`/v1/models/${modelId}/refresh`).set('X-API-Key', apiKey);
    expectError(refused, 429, 'RATE_LIMITED');
    expect(refused.body.limit).toBe(limit);
    const expectedWait = (oldest.getTime() + FIT_BUDGET_WINDOW_MS - Date.now()) / 1000;
    expect(Math.abs(Number(refused.headers['retry-after']) - expectedWait)).toBeLessThan(60);
    expect(await h.orm.em.fork().count(OutcomeSchema, { modelId, status: 'pending' })).toBe(1);
    expect(await h.orm.em.fork().count(ContextChunkSchema, { model: modelId, versionNumber: 2 })).toBe(0);
    expect((await h.http.get(`/v1/models/${modelId}`).set('X-API-Key', apiKey)).body.version.number).toBe(1);
    // the oldest of them leaves the window: one refresh is free again
    await h.callPool.query(`update model_versions set created_at = created_at - interval '1 day' where model_id = $1 and number = 1000`, [modelId]);
    const refreshed = await h.http.post(`/v1/models/${modelId}/refresh`).set('X-API-Key', apiKey);
    expect([refreshed.status, refreshed.body.version?.number, refreshed.body.outcomes_folded]).toEqual([201, 2, 1]);
  });

  it('an integration whose model spent its refreshes of the day waits until one leaves the 24 hours, then refreshes the model, and no sooner', async () => {
    const { apiKey, modelId } = await trainedModel();
    const limit = FITS_PER_DAY.build;
    const freeAt = new Date(Date.now() + 15_000);
    await spendRefreshes(modelId, limit, new Date(freeAt.getTime() - FIT_BUDGET_WINDOW_MS));
    const features = withoutTarget(churnRows(1, 9), 'churned')[0];
    expect((await h.http.post(`/v1/models/${modelId}/outcomes`).set('X-API-Key', apiKey).send({ outcomes: [{ features, actual: 'no' }] })).status).toBe(201);
    const integration = await h.client.workflow.signalWithStart('integration', {
      taskQueue: h.taskQueue,
      workflowId: `integrate/${modelId}`,
      args: [{ modelId, heartbeatTimeoutMs: 30_000, quietMs: 200 }],
      signal: 'outcomesReceived',
      signalArgs: [{ count: 1 }],
    });
    try {
      // The first child refresh folds nothing and answers when the budget frees up.
      const deadline = Date.now() + 20_000;
      let answer: { deferredUntil?: string } | null = null;
      while (!answer && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 200));
        const completed = ((await integration.fetchHistory()).events ?? []).find((e) => e.childWorkflowExecutionCompletedEventAttributes);
        const payload = completed?.childWorkflowExecutionCompletedEventAttributes?.result?.payloads?.[0]?.data;
        if (payload) answer = JSON.parse(Buffer.from(payload).toString('utf8'));
      }
      expect(answer).toEqual({ deferredUntil: freeAt.toISOString(), limit });
      expect(await versionsAfter(modelId, limit + 2)).toBe(limit + 2);
      const version = await h.orm.em.fork().findOneOrFail(ModelVersionSchema, { model: modelId, number: 2 });
      expect([version.trigger, version.outcomesFolded]).toEqual(['refresh', 1]);
      expect(version.createdAt.getTime()).toBeGreaterThanOrEqual(freeAt.getTime());
    } finally {
      await integration.terminate('test cleanup').catch(() => undefined);
    }
  });

  it('with auto_update on, an outcomes batch triggers the integration workflow, which refreshes the model', async () => {
    const { apiKey, modelId } = await trainedModel({ auto_update: true });
    const features = withoutTarget(churnRows(1, 3), 'churned')[0];
    const recorded = await h.http.post(`/v1/models/${modelId}/outcomes`).set('X-API-Key', apiKey).send({ outcomes: [{ features, actual: 'yes' }] });
    expect(recorded.body.integration_started).toBe(true);
    const integration = h.client.workflow.getHandle(`integrate/${modelId}`);
    try {
      expect((await integration.describe()).type).toBe('integration');
      expect(await versionsAfter(modelId, 2)).toBe(2);
      const model = await h.http.get(`/v1/models/${modelId}`).set('X-API-Key', apiKey);
      expect(model.body.version.number).toBe(2);
    } finally {
      await integration.terminate('test cleanup').catch(() => undefined);
    }
  });

  it('an integration that finds a refresh already running waits, retries, and then refreshes the model once', async () => {
    const { apiKey, modelId } = await trainedModel();
    const features = withoutTarget(churnRows(1, 5), 'churned')[0];
    await h.http.post(`/v1/models/${modelId}/outcomes`).set('X-API-Key', apiKey).send({ outcomes: [{ features, actual: 'no' }] });
    // A refresh that is running (on a queue no worker polls), as a caller's would be.
    const blocking = await h.client.workflow.start('refreshModel', { taskQueue: 'nobody-polls-this-queue', workflowId: `refresh/${modelId}`, args: [{ modelId, heartbeatTimeoutMs: 30_000 }] });
    const integration = await h.client.workflow.signalWithStart('integration', {
      taskQueue: h.taskQueue,
      workflowId: `integrate/${modelId}`,
      args: [{ modelId, heartbeatTimeoutMs: 30_000, quietMs: 200, retryWhenBusyMs: 1_000 }],
      signal: 'outcomesReceived',
      signalArgs: [{ count: 1 }],
    });
    try {
      // The busy path: the child refresh is refused while the other runs, and no version appears.
      const deadline = Date.now() + 20_000;
      let refused = false;
      while (!refused && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 200));
        const history = await integration.fetchHistory();
        refused = (history.events ?? []).some((e) => e.startChildWorkflowExecutionFailedEventAttributes);
      }
      expect(refused).toBe(true);
      expect(await h.orm.em.fork().count(ModelVersionSchema, { model: modelId })).toBe(1);
      await blocking.terminate('the caller refresh is gone');
      expect(await versionsAfter(modelId, 2)).toBe(2);
    } finally {
      await integration.terminate('test cleanup').catch(() => undefined);
    }
  });

  it('after an engine change, a refresh produces a version on the current engine that serves again', async () => {
    const { apiKey, modelId } = await trainedModel();
    await h.orm.em.fork().nativeUpdate(ModelVersionSchema, { model: modelId }, { engineVersion: '0.0.1-retired' });
    const rows = withoutTarget(churnRows(1, 4), 'churned');
    expectError(await h.http.post(`/v1/models/${modelId}/predict`).set('X-API-Key', apiKey).send({ rows }), 409, 'ENGINE_MISMATCH');
    await h.http.post(`/v1/models/${modelId}/outcomes`).set('X-API-Key', apiKey).send({ outcomes: [{ features: rows[0], actual: 'no' }] });
    const refreshed = await h.http.post(`/v1/models/${modelId}/refresh`).set('X-API-Key', apiKey);
    expect(refreshed.status).toBe(201);
    expect(refreshed.body.version.engine.version).toBe(TABULAR_ENGINE.version);
    // the stored format is the trained artefact's own: the current engine (17.0.0) always writes the newest format, 5 (engine6-17 tests: 16.0.0 writes 4, 10.0.0 3, 7.0.0 2, 5.0.0 1)
    expect(refreshed.body.version.format_version).toBe(TABULAR_ENGINE.artefactFormatVersion);
    expect(TABULAR_ENGINE.artefactFormatVersion).toBe(5);
    expect((await h.http.post(`/v1/models/${modelId}/predict`).set('X-API-Key', apiKey).send({ rows })).status).toBe(200);
  });

  it('reports performance: observed null until an outcome matches a prediction, then a score and a verdict', async () => {
    const { apiKey, modelId } = await trainedModel();
    const data = churnRows(40, 11);
    const scored = await h.http.post(`/v1/models/${modelId}/predict`).set('X-API-Key', apiKey).send({ rows: withoutTarget(data, 'churned') });
    const before = await h.http.get(`/v1/models/${modelId}/performance`).set('X-API-Key', apiKey);
    expect(before.status).toBe(200);
    expect(before.body).toEqual(expect.objectContaining({ days: 30, predictions: 40, observed: null, verdict: null }));
    expect(before.body.expected).toEqual(expect.objectContaining({ version: 1, metric: 'roc_auc' }));

    const outcomes = scored.body.predictions.map((p: { request_id: string }, i: number) => ({ request_id: p.request_id, actual: data[i]!.churned }));
    await h.http.post(`/v1/models/${modelId}/outcomes`).set('X-API-Key', apiKey).send({ outcomes });
    const after = await h.http.get(`/v1/models/${modelId}/performance?days=7`).set('X-API-Key', apiKey);
    expect(after.body.observed).toEqual({ matched: 40, metric: 'roc_auc', score: expect.any(Number) });
    expect(after.body.observed.score).toBeGreaterThan(0.8);
    expect(after.body.verdict).toBe('holding');
    // snake_case like every field of the API (they were holdingGap, weakGap, holdingRatio, weakRatio: a sixth probe)
    expect(after.body.thresholds).toEqual({ holding_gap: 0.05, weak_gap: 0.15, holding_ratio: 1.2, weak_ratio: 1.5 });

    // Outcomes that contradict the predictions make the verdict drop.
    const flipped = scored.body.predictions.map((p: { request_id: string; prediction: string }) => ({ request_id: p.request_id, actual: p.prediction === 'yes' ? 'no' : 'yes' }));
    await h.orm.em.fork().nativeDelete(OutcomeSchema, { modelId });
    await h.http.post(`/v1/models/${modelId}/outcomes`).set('X-API-Key', apiKey).send({ outcomes: flipped });
    const dropped = await h.http.get(`/v1/models/${modelId}/performance`).set('X-API-Key', apiKey);
    expect(dropped.body.verdict).toBe('dropped');
    expectError(await h.http.get(`/v1/models/${modelId}/performance?days=366`).set('X-API-Key', apiKey), 400, 'VALIDATION_ERROR');
  });
});
