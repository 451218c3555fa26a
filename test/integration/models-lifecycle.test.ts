import { Client as PgClient } from 'pg';
import { FIT_BUDGET_WINDOW_MS, FITS_PER_DAY, keptModelsLimit } from '../../config/plans';
import { ContextChunkSchema, ModelSchema, ModelVersionSchema, OutcomeSchema } from '../../db/entities';
import { churnRows, toCsv, withoutTarget } from '../support/datasets';
import { expectError, startHarness, trainedChurnModel, type Harness } from '../support/harness';
import { foldPendingOutcomes } from '../../services/training';
import { gunzipText } from '../../services/compression';

const ENGINE = 'tabular-gbdt';

describe('models: training, resource and state transitions', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(() => h.stop());

  const train = (key: string, body: Record<string, unknown>) => h.http.post('/v1/models').set('X-API-Key', key).send(body);

  it('trains from JSON rows and answers 201 with the serving model and its version 1', async () => {
    const { apiKey, workspace } = await h.provision('build');
    const res = await train(apiKey, { target: 'churned', engine: ENGINE, name: 'Churn', data: churnRows(120) });
    expect(res.status).toBe(201);
    expect(res.body).toEqual(
      expect.objectContaining({
        name: 'Churn',
        target: 'churned',
        task: 'binary',
        engine: ENGINE,
        status: 'serving',
        feature_columns: ['x1', 'x2', 'colour'],
        workspace_id: workspace.id,
        versions_count: 1,
      }),
    );
    expect(res.body.id).toMatch(/^mdl_/);
    expect(res.body.version).toEqual(expect.objectContaining({ number: 1, serving: true, trigger: 'train', context_rows: 120 }));
    expect(res.body.version.id).toMatch(/^ver_/);
    expect(res.body.version).not.toHaveProperty('top_factors');
    const described = await h.client.workflow.getHandle(`train/${res.body.id}`).describe();
    expect(described.status.name).toBe('COMPLETED');
  });

  it('gives top_factors only when trained with explain: true', async () => {
    const { apiKey } = await h.provision('build');
    const res = await train(apiKey, { target: 'churned', engine: ENGINE, explain: true, data: churnRows(120) });
    expect(res.status).toBe(201);
    expect(res.body.version.top_factors.length).toBeGreaterThan(0);
    expect(res.body.version.top_factors[0]).toEqual({ feature: expect.any(String), importance: expect.any(Number) });
  });

  it('trains from a multipart CSV file with a semicolon separator and empty cells', async () => {
    const { apiKey } = await h.provision('build');
    const rows = churnRows(80, 2).map((r, i) => (i % 10 === 0 ? { ...r, x2: null } : r));
    const res = await h.http
      .post('/v1/models')
      .set('X-API-Key', apiKey)
      .field('target', 'churned')
      .field('engine', ENGINE)
      .field('explain', 'false')
      .attach('file', Buffer.from(toCsv(rows, ';')), { filename: 'churn.csv', contentType: 'text/csv' });
    expect(res.status).toBe(201);
    expect(res.body.feature_columns).toEqual(['x1', 'x2', 'colour']);
    expect(res.body.version.context_rows).toBe(80);
  });

  it.each([
    ['no engine', { target: 'churned', data: churnRows(20) }, 400, 'VALIDATION_ERROR'],
    ['an unknown engine', { target: 'churned', engine: 'nope', data: churnRows(20) }, 400, 'VALIDATION_ERROR'],
    ['the forecast engine', { target: 'churned', engine: 'forecast-auto', data: churnRows(20) }, 400, 'VALIDATION_ERROR'],
    ['no rows', { target: 'churned', engine: ENGINE }, 400, 'VALIDATION_ERROR'],
    ['a target column absent from the rows', { target: 'nope', engine: ENGINE, data: churnRows(20) }, 400, 'VALIDATION_ERROR'],
    ['nine rows', { target: 'churned', engine: ENGINE, data: churnRows(9) }, 422, 'DATA_VALIDATION_FAILED'],
    ['a single target value', { target: 'churned', engine: ENGINE, data: churnRows(30).map((r) => ({ ...r, churned: 'yes' })) }, 422, 'DATA_VALIDATION_FAILED'],
  ])('refuses %s and leaves no model behind', async (_label, body, status, code) => {
    const { apiKey, account } = await h.provision('build');
    const res = await train(apiKey, body);
    expectError(res, status, code);
    if (code === 'DATA_VALIDATION_FAILED') expect(res.body.report.errors[0].code).toEqual(expect.any(String));
    expect(await h.orm.em.fork().count(ModelSchema, { account: account.id })).toBe(0);
  });

  it('answers an unreadable CSV with 400 CSV_UNREADABLE and creates nothing', async () => {
    const { apiKey, account } = await h.provision('build');
    const res = await h.http
      .post('/v1/models')
      .set('X-API-Key', apiKey)
      .field('target', 'churned')
      .field('engine', ENGINE)
      .attach('file', Buffer.from('x1,churned\n"1,yes\n2,no\n'), { filename: 'bad.csv', contentType: 'text/csv' });
    expectError(res, 400, 'CSV_UNREADABLE');
    expect(await h.orm.em.fork().count(ModelSchema, { account: account.id })).toBe(0);
  });

  it('reads a CSV that is not UTF-8 as Windows-1252, keeping distinct accented values distinct (they were each U+FFFD); a JSON file that is not UTF-8 is 400 INVALID_JSON and creates nothing', async () => {
    const { apiKey, account } = await h.provision('build');
    const cities = ['Zürich', 'Zärich', 'Genève', 'Málaga'];
    const rows = churnRows(80).map((r, i) => ({ ...r, city: cities[i % cities.length]! }));
    const upload = (content: Buffer, filename: string, contentType: string) =>
      h.http.post('/v1/models').set('X-API-Key', apiKey).field('target', 'churned').field('engine', ENGINE).attach('file', content, { filename, contentType });
    expectError(await upload(Buffer.from(JSON.stringify(rows), 'latin1'), 'latin1.json', 'application/json'), 400, 'INVALID_JSON');
    expect(await h.orm.em.fork().count(ModelSchema, { account: account.id })).toBe(0);

    const trained = await upload(Buffer.from(toCsv(rows), 'latin1'), 'latin1.csv', 'text/csv');
    expect(trained.status).toBe(201);
    // The training rows as stored: each city as written, four distinct values (read as UTF-8 they were one, "Z\uFFFDrich" twice).
    const chunk = await h.orm.em.fork().findOneOrFail(ContextChunkSchema, { model: trained.body.id, versionNumber: 1 }, { populate: ['data'] });
    const stored = JSON.parse(await gunzipText(chunk.data)) as Array<{ city: string }>;
    expect([...new Set(stored.map((r) => r.city))].sort()).toEqual([...cities].sort());
  });

  it('answers more training rows than the plan allows with 413 TOO_MANY_ROWS', async () => {
    const { apiKey, account } = await h.provision('free');
    const res = await train(apiKey, { target: 'churned', engine: ENGINE, data: churnRows(10_001) });
    expectError(res, 413, 'TOO_MANY_ROWS');
    expect(await h.orm.em.fork().count(ModelSchema, { account: account.id })).toBe(0);
  });

  it('answers a JSON dataset over the plan’s size limit with 413 DATASET_TOO_LARGE and a file over it with 413 FILE_TOO_LARGE', async () => {
    const { apiKey, account } = await h.provision('free'); // 10 MiB
    const padding = 'x'.repeat(1024);
    const big = Array.from({ length: 11 * 1024 }, (_, i) => ({ x1: i, note: padding, churned: i % 2 ? 'yes' : 'no' }));
    expectError(await train(apiKey, { target: 'churned', engine: ENGINE, data: big }), 413, 'DATASET_TOO_LARGE');
    const file = await h.http
      .post('/v1/models')
      .set('X-API-Key', apiKey)
      .field('target', 'churned')
      .field('engine', ENGINE)
      .attach('file', Buffer.from(toCsv(big)), { filename: 'big.csv', contentType: 'text/csv' });
    expectError(file, 413, 'FILE_TOO_LARGE');
    expect(await h.orm.em.fork().count(ModelSchema, { account: account.id })).toBe(0);
  });

  it('walks the model state table: quota, archive, restore, delete, and lists by status (serving by default or named, archived)', async () => {
    const { apiKey, adminKey, account } = await h.provision('free');
    const first = await train(apiKey, { target: 'churned', engine: ENGINE, data: churnRows(60) });
    expect(first.status).toBe(201);
    const id = first.body.id as string;

    // free plan: one model per account
    expectError(await train(apiKey, { target: 'churned', engine: ENGINE, data: churnRows(60) }), 402, 'QUOTA_MODELS_EXCEEDED');

    // serving → archived: 204, no longer listed by default, listed with status=archived, predict 409
    const archived = await h.http.post(`/v1/models/${id}/archive`).set('X-API-Key', apiKey);
    expect(archived.status).toBe(204);
    expect((await h.http.get('/v1/models').set('X-API-Key', apiKey)).body.data).toEqual([]);
    const archivedList = await h.http.get('/v1/models?status=archived').set('X-API-Key', apiKey);
    expect(archivedList.body.data.map((m: { id: string }) => m.id)).toEqual([id]);
    const rows = withoutTarget(churnRows(2), 'churned');
    expectError(await h.http.post(`/v1/models/${id}/predict`).set('X-API-Key', apiKey).send({ rows }), 409, 'MODEL_ARCHIVED');

    // archived frees the slot: a second model trains
    const second = await train(apiKey, { target: 'churned', engine: ENGINE, data: churnRows(60) });
    expect(second.status).toBe(201);
    // status=serving names the default listing (it was 400, only archived was accepted: a thirteenth probe)
    const servingList = await h.http.get('/v1/models?status=serving').set('X-API-Key', apiKey);
    expect({ status: servingList.status, ids: servingList.body.data.map((m: { id: string }) => m.id) }).toEqual({ status: 200, ids: [second.body.id] });

    // archived → restore with the plan full: 402, stays archived
    expectError(await h.http.post(`/v1/models/${id}/restore`).set('X-API-Key', apiKey), 402, 'QUOTA_MODELS_EXCEEDED');
    expect((await h.orm.em.fork().findOneOrFail(ModelSchema, { id })).status).toBe('archived');

    // free the slot, restore: 200 serving, predicts again
    expect((await h.http.delete(`/v1/models/${second.body.id}`).set('X-API-Key', apiKey)).status).toBe(204);
    const restored = await h.http.post(`/v1/models/${id}/restore`).set('X-API-Key', apiKey);
    expect(restored.status).toBe(200);
    expect(restored.body.status).toBe('serving');
    expect((await h.http.post(`/v1/models/${id}/predict`).set('X-API-Key', apiKey).send({ rows })).status).toBe(200);

    // outcomes pending, then delete: 204, purged, 404 afterwards, restore 409 MODEL_DELETED
    const outcome = await h.http.post(`/v1/models/${id}/outcomes`).set('X-API-Key', apiKey).send({ outcomes: [{ features: rows[0], actual: 'yes' }] });
    expect(outcome.status).toBe(201);
    expect((await h.http.delete(`/v1/models/${id}`).set('X-API-Key', apiKey)).status).toBe(204);
    expectError(await h.http.get(`/v1/models/${id}`).set('X-API-Key', apiKey), 404, 'NOT_FOUND');
    expectError(await h.http.post(`/v1/models/${id}/restore`).set('X-API-Key', apiKey), 409, 'MODEL_DELETED');
    expectError(await h.http.post(`/v1/models/${id}/predict`).set('X-API-Key', apiKey).send({ rows }), 404, 'NOT_FOUND');
    const em = h.orm.em.fork();
    const versions = await em.find(ModelVersionSchema, { model: id }, { populate: ['artefact'] });
    expect(versions.every((v) => v.artefact === null)).toBe(true);
    expect(await em.count(ContextChunkSchema, { model: id })).toBe(0);
    expect(await em.count(OutcomeSchema, { modelId: id, status: 'pending' })).toBe(0);
    expect((await h.http.get('/v1/models?status=archived').set('X-API-Key', apiKey)).body.data).toEqual([]);

    // an admin key manages models too, but cannot predict
    expect((await h.http.get('/v1/models').set('X-API-Key', adminKey)).status).toBe(200);
    expect(account.plan).toBe('free');
  });

  it('creates at most the plan’s models in any 24 hours per account, archived and deleted ones counted: beyond, 429 RATE_LIMITED with Retry-After until the oldest leaves the 24 hours, nothing created, and the 429 not kept under its Idempotency-Key (an eighteenth probe trained and archived the free plan’s one model in a loop, a new model every 0.47 s; a twentieth got a stored 429 back after the wait)', async () => {
    const { apiKey, account } = await h.provision('free');
    const limit = FITS_PER_DAY.free;
    const first = await train(apiKey, { target: 'churned', engine: ENGINE, data: churnRows(60) });
    expect(first.status).toBe(201);
    expect((await h.http.delete(`/v1/models/${first.body.id}`).set('X-API-Key', apiKey)).status).toBe(204);
    // the day's other trainings, each deleted: copies of the deleted one, one a minute from an hour ago
    // (deleted, not archived: the account may keep only ten archived models on this plan)
    const oldest = new Date(Date.now() - 3_600_000);
    await h.callPool.query(
      `insert into models (id, workspace_id, account_id, name, target, task, engine_id, feature_columns, status, explain, auto_update, current_version, created_at, updated_at, archived_at, deleted_at)
       select 'mdl_b' || g || '_' || right(id, 20), workspace_id, account_id, name, target, task, engine_id, feature_columns, 'deleted', explain, auto_update, current_version, $2::timestamptz + g * interval '1 minute', now(), null, now()
         from models, generate_series(0, $3::int - 2) g where id = $1`,
      [first.body.id, oldest, limit],
    );
    const count = () => h.orm.em.fork().count(ModelSchema, { account: account.id });
    expect(await count()).toBe(limit);
    // sent with an Idempotency-Key: the 429 is not kept under it, so the retry with that key runs later
    const retried = () => train(apiKey, { target: 'churned', engine: ENGINE, data: churnRows(60) }).set('Idempotency-Key', 'after-the-budget');
    const refused = await retried();
    expectError(refused, 429, 'RATE_LIMITED');
    expect(refused.body.limit).toBe(limit);
    const expectedWait = (oldest.getTime() + FIT_BUDGET_WINDOW_MS - Date.now()) / 1000;
    expect(Math.abs(Number(refused.headers['retry-after']) - expectedWait)).toBeLessThan(60);
    expect(await count()).toBe(limit);
    // the oldest leaves the window: one more model trains
    await h.callPool.query(`update models set created_at = created_at - interval '1 day' where id = $1`, [`mdl_b0_${(first.body.id as string).slice(-20)}`]);
    const trained = await retried();
    expect([trained.status, trained.headers['idempotent-replayed']]).toEqual([201, undefined]);
  });

  it('keeps at most ten models per quota slot, archived ones included: beyond, a new model is 402 QUOTA_MODELS_EXCEEDED and nothing is created, a restore is still allowed, and deleting an archived model makes room (archived models kept their artefacts and training data for good)', async () => {
    const { apiKey, account } = await h.provision('free');
    const limit = keptModelsLimit('free')!;
    expect(limit).toBe(10);
    const first = await train(apiKey, { target: 'churned', engine: ENGINE, data: churnRows(60) });
    expect(first.status).toBe(201);
    expect((await h.http.post(`/v1/models/${first.body.id}/archive`).set('X-API-Key', apiKey)).status).toBe(204);
    // nine more archived models (copies of the first, made yesterday: the day's fit budget is not what is tested)
    await h.callPool.query(
      `insert into models (id, workspace_id, account_id, name, target, task, engine_id, feature_columns, status, explain, auto_update, current_version, created_at, updated_at, archived_at, deleted_at)
       select 'mdl_k' || g || '_' || right(id, 20), workspace_id, account_id, name, target, task, engine_id, feature_columns, 'archived', explain, auto_update, current_version, now() - interval '2 days', now(), now(), null
         from models, generate_series(1, $2::int - 1) g where id = $1`,
      [first.body.id, limit],
    );
    const kept = () => h.orm.em.fork().count(ModelSchema, { account: account.id, status: { $ne: 'deleted' } });
    expect(await kept()).toBe(limit);
    const refused = await train(apiKey, { target: 'churned', engine: ENGINE, data: churnRows(60) });
    expectError(refused, 402, 'QUOTA_MODELS_EXCEEDED');
    expect([refused.body.limit, refused.body.used, refused.body.messageDetail]).toEqual([limit, limit, expect.stringContaining('archived')]);
    expect(await kept()).toBe(limit);
    // the quota slot is free: a restore (which creates nothing) is allowed, and archiving it again too
    expect((await h.http.post(`/v1/models/${first.body.id}/restore`).set('X-API-Key', apiKey)).status).toBe(200);
    expect((await h.http.post(`/v1/models/${first.body.id}/archive`).set('X-API-Key', apiKey)).status).toBe(204);
    expect((await h.http.delete(`/v1/models/${first.body.id}`).set('X-API-Key', apiKey)).status).toBe(204);
    expect((await train(apiKey, { target: 'churned', engine: ENGINE, data: churnRows(60) })).status).toBe(201);
    expect(await kept()).toBe(limit);
  });

  it('a deletion while a refresh runs purges the outcomes it folded into a version never stored, as pending ones (a tenth probe: they stayed, features and all, folded into version 2 of a deleted model)', async () => {
    const { apiKey, modelId } = await trainedChurnModel(h);
    const rows = withoutTarget(churnRows(2, 11), 'churned');
    const reported = await h.http.post(`/v1/models/${modelId}/outcomes`).set('X-API-Key', apiKey).send({ outcomes: rows.map((features) => ({ features, actual: 'yes' })) });
    expect(reported.status).toBe(201);
    // the refresh's first step (it runs before the fit, which a deletion then stops from storing)
    expect(await foldPendingOutcomes(h.orm.em.fork(), modelId)).toEqual({ number: 2, folded: 2 });
    expect((await h.http.delete(`/v1/models/${modelId}`).set('X-API-Key', apiKey)).status).toBe(204);
    const em = h.orm.em.fork();
    expect(await em.count(OutcomeSchema, { modelId })).toBe(0);
    expect(await em.count(ContextChunkSchema, { model: modelId })).toBe(0);
    expect(await em.count(ModelVersionSchema, { model: modelId })).toBe(1);
  });

  it('a deletion committed while an archive or a restore waits on the model stands: the model stays deleted, unlisted, out of the quota', async () => {
    const { apiKey } = await h.provision('build');
    for (const action of ['archive', 'restore'] as const) {
      const created = await train(apiKey, { target: 'churned', engine: ENGINE, data: churnRows(60) });
      const id = created.body.id as string;
      if (action === 'restore') expect((await h.http.post(`/v1/models/${id}/archive`).set('X-API-Key', apiKey)).status).toBe(204);
      // the deletion holds the model's row while the other call arrives, then commits
      const deletion = new PgClient({ connectionString: h.config.DATABASE_URL });
      await deletion.connect();
      try {
        await deletion.query('begin');
        await deletion.query('select id from models where id = $1 for update', [id]);
        const racing = h.http.post(`/v1/models/${id}/${action}`).set('X-API-Key', apiKey).then((r) => r);
        await new Promise((resolve) => setTimeout(resolve, 300));
        await deletion.query(`update models set status = 'deleted', deleted_at = now() where id = $1`, [id]);
        await deletion.query('commit');
        const answer = await racing;
        expect(answer.status).toBe(action === 'archive' ? 404 : 409);
      } finally {
        await deletion.end();
      }
      expect((await h.orm.em.fork().findOneOrFail(ModelSchema, { id })).status).toBe('deleted');
      expectError(await h.http.get(`/v1/models/${id}`).set('X-API-Key', apiKey), 404, 'NOT_FOUND');
      const listed = await h.http.get('/v1/models?status=archived').set('X-API-Key', apiKey);
      expect(listed.body.data.map((m: { id: string }) => m.id)).not.toContain(id);
    }
  });

  it('answers 409 MODEL_NOT_TRAINED to a prediction while the model is still training', async () => {
    const { apiKey, account, workspace } = await h.provision('build');
    const { createModelForTraining } = await import('../../services/models');
    const model = await createModelForTraining(h.orm.em.fork(), {
      workspaceId: workspace.id,
      accountId: account.id,
      name: 'in training',
      target: 'churned',
      task: 'binary',
      engineId: ENGINE,
      explain: false,
      autoUpdate: false,
      rows: churnRows(20),
    });
    const listed = await h.http.get(`/v1/models/${model.id}`).set('X-API-Key', apiKey);
    expect(listed.body).toEqual(expect.objectContaining({ status: 'training', version: null }));
    expectError(await h.http.post(`/v1/models/${model.id}/predict`).set('X-API-Key', apiKey).send({ rows: withoutTarget(churnRows(1), 'churned') }), 409, 'MODEL_NOT_TRAINED');
    expectError(await h.http.post(`/v1/models/${model.id}/archive`).set('X-API-Key', apiKey), 409, 'MODEL_NOT_TRAINED');
  });

  it('renames a model and refuses to change its frozen target or task', async () => {
    const { apiKey } = await h.provision('build');
    const created = await train(apiKey, { target: 'churned', engine: ENGINE, data: churnRows(60) });
    const renamed = await h.http.patch(`/v1/models/${created.body.id}`).set('X-API-Key', apiKey).send({ name: 'Renamed' });
    expect(renamed.status).toBe(200);
    expect(renamed.body.name).toBe('Renamed');
    expectError(await h.http.patch(`/v1/models/${created.body.id}`).set('X-API-Key', apiKey).send({ target: 'x1' }), 409, 'MODEL_FIELD_FROZEN');
    expectError(await h.http.patch(`/v1/models/${created.body.id}`).set('X-API-Key', apiKey).send({ task: 'regression' }), 409, 'MODEL_FIELD_FROZEN');
    const after = await h.http.get(`/v1/models/${created.body.id}`).set('X-API-Key', apiKey);
    expect(after.body).toEqual(expect.objectContaining({ name: 'Renamed', target: 'churned', task: 'binary' }));
  });

  it('hides another workspace’s model (404) and paginates the listing', async () => {
    const a = await h.provision('build');
    const b = await h.provision('build');
    const theirs = await train(b.apiKey, { target: 'churned', engine: ENGINE, data: churnRows(40) });
    expectError(await h.http.get(`/v1/models/${theirs.body.id}`).set('X-API-Key', a.apiKey), 404, 'NOT_FOUND');
    expectError(await h.http.delete(`/v1/models/${theirs.body.id}`).set('X-API-Key', a.apiKey), 404, 'NOT_FOUND');
    const mine = [];
    for (let i = 0; i < 3; i += 1) mine.push((await train(a.apiKey, { target: 'churned', engine: ENGINE, name: `m${i}`, data: churnRows(40, i) })).body.id);
    const page = await h.http.get('/v1/models?limit=2&offset=1').set('X-API-Key', a.apiKey);
    expect(page.body.pagination).toEqual({ total: 3, limit: 2, offset: 1, has_more: false });
    expect(page.body.data.map((m: { id: string }) => m.id)).toEqual([mine[1], mine[0]]);
    expectError(await h.http.get('/v1/models?limit=500').set('X-API-Key', a.apiKey), 400, 'VALIDATION_ERROR');
  });

  it('answers usage routes with a usage key and refuses it on administration routes', async () => {
    const { apiKey } = await h.provision('build');
    expect((await h.http.get('/v1/models').set('Authorization', `Bearer ${apiKey}`)).status).toBe(200);
    expect((await h.http.get('/v1/usage').set('X-API-Key', apiKey)).status).toBe(200);
    expectError(await h.http.get('/v1/api-keys').set('X-API-Key', apiKey), 403, 'ADMIN_KEY_REQUIRED');
  });
});
