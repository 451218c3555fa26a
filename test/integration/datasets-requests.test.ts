import { VALIDATIONS_PER_DAY } from '../../config/plans';
import { ModelSchema } from '../../db/entities';
import { churnRows, prng, toCsv } from '../support/datasets';
import { expectError, startHarness, type Harness } from '../support/harness';

describe('dataset validation', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(() => h.stop());

  const validate = (key: string, body: Record<string, unknown>) => h.http.post('/v1/datasets/validate').set('X-API-Key', key).send(body);

  it('returns the training report, a trial against the lazy answer, a usable verdict and a hint; creates nothing; costs nothing', async () => {
    const { apiKey, account } = await h.provision('free');
    const res = await validate(apiKey, { target: 'churned', data: churnRows(200) });
    expect(res.status).toBe(200);
    expect(res.body).toEqual(expect.objectContaining({ valid: true, target: 'churned', errors: [], hint: expect.any(String) }));
    expect(res.body.report).toEqual(expect.objectContaining({ task: 'binary', rows_used: 200 }));
    expect(res.body.trial.verdict.level).toBe('usable');
    expect(res.body.trial.metrics).toEqual(expect.objectContaining({ score: expect.any(Number), baseline_score: expect.any(Number) }));
    expect(res.headers['x-service-predictions-remaining']).toBeUndefined();
    expect(await h.orm.em.fork().count(ModelSchema, { account: account.id })).toBe(0);
  });

  it('runs at most the plan\'s validations a day per account, free 50: beyond, 429 RATE_LIMITED with Retry-After and no report (a twenty-first probe read the trial model\'s prediction of an added row off its exact held-out error, one a call)', async () => {
    const { apiKey } = await h.provision('free');
    const other = await h.provision('free');
    const data = churnRows(12);
    for (let call = 0; call < VALIDATIONS_PER_DAY.free; call += 1) expect((await validate(apiKey, { target: 'churned', data })).status).toBe(200);
    const refused = await validate(apiKey, { target: 'churned', data });
    expectError(refused, 429, 'RATE_LIMITED');
    expect([refused.body.limit, refused.body.trial, Number(refused.headers['retry-after']) > 86_000]).toEqual([50, undefined, true]);
    // refused before any work: a dataset whose target does not exist is not even read (it would answer 200, valid: false)
    expectError(await validate(apiKey, { target: 'nope', data }), 429, 'RATE_LIMITED');
    expect((await validate(other.apiKey, { target: 'churned', data })).status).toBe(200);
  });

  it('answers more rows than the plan trains on with 413 TOO_MANY_ROWS, as training does, before any trial fit (a seventh probe: a free plan was told 200,000 rows were valid)', async () => {
    const { apiKey } = await h.provision('free'); // trains on 10,000 rows
    const data = churnRows(10_001);
    // was 200, valid: true, after a trial fit on every row
    const refused = await validate(apiKey, { target: 'churned', data });
    expectError(refused, 413, 'TOO_MANY_ROWS');
    expect(refused.body).toEqual(expect.objectContaining({ limit: 10_000, rows: 10_001 }));
    const file = await h.http.post('/v1/datasets/validate').set('X-API-Key', apiKey).field('target', 'churned').attach('file', Buffer.from(toCsv(data)), 'rows.csv');
    expectError(file, 413, 'TOO_MANY_ROWS');
    // the plan's own limit is still validated in full, and a larger plan validates more
    expect((await validate(apiKey, { target: 'churned', data: data.slice(1) })).body.valid).toBe(true);
    const build = await h.provision('build');
    expect((await validate(build.apiKey, { target: 'churned', data })).body.valid).toBe(true);
  });

  it('refuses an engine that training would refuse with the same 400, instead of calling the data valid (a ninth probe: a forecast engine and an unknown one were valid: true)', async () => {
    const { apiKey } = await h.provision('free');
    for (const engine of ['forecast-auto', 'constructor', 'TABULAR-GBDT']) {
      const validated = await validate(apiKey, { target: 'churned', engine, data: churnRows(60) });
      expectError(validated, 400, 'VALIDATION_ERROR');
      expect(validated.body.messageDetail).toBe(`Invalid body.engine: ${engine} is not a tabular engine of GET /v1/engines.`);
    }
    const known = await validate(apiKey, { target: 'churned', engine: 'tabular-gbdt', data: churnRows(60) });
    expect([known.status, known.body.valid]).toEqual([200, true]);
  });

  it('says weak and names the column when one column gives the answer away', async () => {
    const { apiKey } = await h.provision('free');
    const rand = prng(3);
    const data = Array.from({ length: 300 }, () => {
      const outcome = rand() < 0.5 ? 'paid' : 'defaulted';
      return { income: Math.round(rand() * 1000), age: Math.round(20 + rand() * 50), collections_calls: outcome === 'defaulted' ? 3 + Math.round(rand() * 5) : 0, outcome };
    });
    const res = await validate(apiKey, { target: 'outcome', data });
    expect(res.status).toBe(200);
    expect(res.body.trial.verdict).toEqual(expect.objectContaining({ level: 'weak', column: 'collections_calls' }));
  });

  it('says no_signal when the columns carry nothing for the target', async () => {
    const { apiKey } = await h.provision('free');
    const rand = prng(5);
    const data = Array.from({ length: 400 }, () => ({ a: rand(), b: rand(), c: rand() < 0.5 ? 'x' : 'y', target: rand() < 0.5 ? 'left' : 'right' }));
    const res = await validate(apiKey, { target: 'target', data });
    expect(res.body.trial.verdict.level).toBe('no_signal');
  });

  it('reports a refused dataset without a trial verdict', async () => {
    const { apiKey } = await h.provision('free');
    const res = await validate(apiKey, { target: 'churned', data: churnRows(5) });
    expect(res.status).toBe(200);
    expect(res.body.valid).toBe(false);
    expect(res.body.errors[0].code).toBe('TOO_FEW_ROWS');
    expect(res.body.trial).toEqual({});
  });

  it('answers 400 when the data or the target is missing, or the CSV is unreadable', async () => {
    const { apiKey } = await h.provision('free');
    expectError(await validate(apiKey, { target: 'churned' }), 400, 'VALIDATION_ERROR');
    expectError(await validate(apiKey, { data: churnRows(20) }), 400, 'VALIDATION_ERROR');
    expectError(await validate(apiKey, { target: 'missing_column', data: churnRows(20) }), 400, 'VALIDATION_ERROR');
    const unreadable = await h.http
      .post('/v1/datasets/validate')
      .set('X-API-Key', apiKey)
      .field('target', 'churned')
      .attach('file', Buffer.from('a,b\n1,2,3,4\n"x'), { filename: 'x.csv', contentType: 'text/csv' });
    expectError(unreadable, 400, 'CSV_UNREADABLE');
    const csv = await h.http
      .post('/v1/datasets/validate')
      .set('X-API-Key', apiKey)
      .field('target', 'churned')
      .attach('file', Buffer.from(toCsv(churnRows(100), '|')), { filename: 'ok.csv', contentType: 'text/csv' });
    expect(csv.status).toBe(200);
    expect(csv.body.report.rows_used).toBe(100);
  });
});

describe('request log and usage', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(() => h.stop());

  it('logs every call of the workspace with status, error code, credits and duration; filters errors; sums usage by day and operation', async () => {
    const { apiKey } = await h.provision('build');
    const trained = await h.http.post('/v1/models').set('X-API-Key', apiKey).send({ target: 'churned', engine: 'tabular-gbdt', data: churnRows(60) });
    const predicted = await h.http
      .post(`/v1/models/${trained.body.id}/predict`)
      .set('X-API-Key', apiKey)
      .send({ rows: [{ x1: 1, x2: 2, colour: 'red' }, { x1: 3, x2: 4, colour: 'blue' }] });
    const failed = await h.http.post(`/v1/models/${trained.body.id}/predict`).set('X-API-Key', apiKey).send({ rows: [{ nope: 1 }] });
    expect(failed.status).toBe(400);

    const log = await h.http.get('/v1/requests').set('X-API-Key', apiKey);
    expect(log.status).toBe(200);
    const ids = log.body.data.map((e: { request_id: string }) => e.request_id);
    expect(ids.slice(0, 3)).toEqual([failed.headers['x-request-id'], predicted.headers['x-request-id'], trained.headers['x-request-id']]);
    expect(log.body.data[1]).toEqual(
      expect.objectContaining({ method: 'POST', operation: 'models.predict', status: 200, credits: 2, error_code: null, duration_ms: expect.any(Number) }),
    );
    expect(log.body.data[0]).toEqual(expect.objectContaining({ status: 400, error_code: 'COLUMN_MISMATCH', credits: 0 }));

    const errors = await h.http.get('/v1/requests?status=error').set('X-API-Key', apiKey);
    expect(errors.body.data.map((e: { request_id: string }) => e.request_id)).toEqual([failed.headers['x-request-id']]);
    expect((await h.http.get('/v1/requests?limit=1').set('X-API-Key', apiKey)).body.data).toHaveLength(1);
    expectError(await h.http.get('/v1/requests?limit=501').set('X-API-Key', apiKey), 400, 'VALIDATION_ERROR');
    expectError(await h.http.get('/v1/requests?from=2026-01-01&to=2026-03-01').set('X-API-Key', apiKey), 400, 'VALIDATION_ERROR');

    const usage = await h.http.get('/v1/usage').set('X-API-Key', apiKey);
    expect(usage.status).toBe(200);
    const today = new Date().toISOString().slice(0, 10);
    expect(usage.body.by_day).toEqual(expect.arrayContaining([{ day: today, operation: 'models.predict', credits: 2, calls: 2 }]));
    expect(usage.body.total_credits).toBe(2);
    // a date alone as `to` includes that whole day; an impossible date is refused, not rolled over
    const day = await h.http.get(`/v1/usage?from=${today}&to=${today}`).set('X-API-Key', apiKey);
    expect(day.body.total_credits).toBe(2);
    expect((await h.http.get(`/v1/requests?from=${today}&to=${today}`).set('X-API-Key', apiKey)).body.data.length).toBeGreaterThanOrEqual(3);
    expectError(await h.http.get('/v1/usage?from=2026-11-31').set('X-API-Key', apiKey), 400, 'VALIDATION_ERROR');
    const other = await h.provision('build');
    expectError(await h.http.get(`/v1/usage?workspace_id=${other.workspace.id}`).set('X-API-Key', apiKey), 404, 'NOT_FOUND');
  });

  it('reads windows at the ends of the calendar: years 0001 to 9999 in UTC, 400 beyond (a sixth probe got 503 from both routes)', async () => {
    const { apiKey } = await h.provision('build');
    for (const route of ['/v1/usage', '/v1/requests']) {
      // the last day of year 9999 as `to` runs to its last millisecond; the first days of year 1 read too
      const last = await h.http.get(`${route}?to=9999-12-31`).set('X-API-Key', apiKey);
      expect(last.status).toBe(200);
      expect(last.body).toEqual(expect.objectContaining({ from: '9999-12-24T23:59:59.999Z', to: '9999-12-31T23:59:59.999Z' }));
      const first = await h.http.get(`${route}?from=0001-01-01&to=0001-01-02`).set('X-API-Key', apiKey);
      expect(first.status).toBe(200);
      expect(first.body).toEqual(expect.objectContaining({ from: '0001-01-01T00:00:00.000Z', to: '0001-01-03T00:00:00.000Z' }));
      // an offset that carries a bound into year 10000 or year 0
      for (const query of ['to=9999-12-31T23:00:00-05:00', 'from=0001-01-01T00:00:00%2B05:00&to=0001-01-02', 'from=0000-12-31&to=0001-01-02']) {
        const refused = await h.http.get(`${route}?${query}`).set('X-API-Key', apiKey);
        expectError(refused, 400, 'VALIDATION_ERROR');
        expect(refused.body.messageDetail).toMatch(/years 0001 to 9999/);
      }
    }
  });

  it('names what a from or to must be when it is no date, an unescaped + of an offset included (a ninth probe: "Invalid input")', async () => {
    const { apiKey } = await h.provision('build');
    for (const route of ['/v1/usage', '/v1/requests']) {
      for (const query of ['from=2026-11-20T00:00:00+01:00', 'to=yesterday', 'from=2026-02-30']) {
        const refused = await h.http.get(`${route}?${query}`).set('X-API-Key', apiKey);
        expectError(refused, 400, 'VALIDATION_ERROR');
        expect(refused.body.messageDetail).toBe(
          `Invalid query.${query.slice(0, query.indexOf('='))}: expected an ISO 8601 date (2026-11-01) or date-time with its offset (2026-11-01T09:00:00Z); a + in a query is sent as %2B.`,
        );
      }
      expect((await h.http.get(`${route}?from=2026-11-20T00:00:00%2B01:00`).set('X-API-Key', apiKey)).status).toBe(200);
    }
  });

  it('sums more than 2^31 credits in a window without failing (a twelfth probe: a contract month of three billion credits answered 503 USAGE_UNAVAILABLE)', async () => {
    const { apiKey, account, workspace } = await h.provision('build');
    const at = new Date(Date.now() - 60_000);
    // three calls of a billion credits each: more than a 32-bit sum holds, on one day and operation
    await h.orm.em.getConnection().execute(
      `insert into request_log (id, workspace_id, account_id, method, path, operation, status, credits, duration_ms, created_at)
       select 'req_big_' || g || '_' || ?, ?, ?, 'POST', '/v1/forecast', 'forecast', 200, 1000000000, 5, ? from generate_series(1, 3) g`,
      [workspace.id, workspace.id, account.id, at],
    );
    const usage = await h.http.get('/v1/usage').set('X-API-Key', apiKey);
    expect(usage.status).toBe(200);
    expect(usage.body.total_credits).toBe(3_000_000_000);
    expect(usage.body.by_day).toEqual([{ day: at.toISOString().slice(0, 10), operation: 'forecast', credits: 3_000_000_000, calls: 3 }]);
  });

  it('logs the calls a route refuses for the kind of credential: a usage key on an administration or account route (a nineteenth probe: 230 such calls spent the workspace’s rate budget and none was listed)', async () => {
    const { apiKey, adminKey } = await h.provision('build');
    const admin = await h.http.get('/v1/api-keys').set('X-API-Key', apiKey);
    expectError(admin, 403, 'ADMIN_KEY_REQUIRED');
    const account = await h.http.get('/v1/auth/me').set('X-API-Key', apiKey);
    expectError(account, 401, 'AUTH_REQUIRED');
    const adminOnAccount = await h.http.post('/v1/workspaces').set('X-API-Key', adminKey).send({ name: 'x' });
    expectError(adminOnAccount, 401, 'AUTH_REQUIRED');

    const log = await h.http.get('/v1/requests').set('X-API-Key', adminKey);
    const logged = new Map(log.body.data.map((e: { request_id: string }) => [e.request_id, e]));
    expect(logged.get(admin.headers['x-request-id'])).toEqual(
      expect.objectContaining({ method: 'GET', path: '/v1/api-keys', status: 403, error_code: 'ADMIN_KEY_REQUIRED', credits: 0, key_id: expect.stringMatching(/^key_/) }),
    );
    expect(logged.get(account.headers['x-request-id'])).toEqual(expect.objectContaining({ path: '/v1/auth/me', status: 401, error_code: 'AUTH_REQUIRED' }));
    expect(logged.get(adminOnAccount.headers['x-request-id'])).toEqual(expect.objectContaining({ path: '/v1/workspaces', status: 401, error_code: 'AUTH_REQUIRED' }));
    const usage = await h.http.get('/v1/usage').set('X-API-Key', adminKey);
    expect(usage.body.total_calls).toBeGreaterThanOrEqual(4);
  });

  it('does not log another workspace’s calls', async () => {
    const a = await h.provision('build');
    const b = await h.provision('build');
    await h.http.get('/v1/models').set('X-API-Key', b.apiKey);
    const log = await h.http.get('/v1/requests').set('X-API-Key', a.apiKey);
    expect(log.body.data).toEqual([]);
  });
});
