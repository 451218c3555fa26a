import { churnRows, withoutTarget } from '../support/datasets';
import { expectError, startHarness, type Harness } from '../support/harness';

/** The value of one sample of the Prometheus text format, 0 when the series does not exist yet. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number {
  for (const line of text.split('\n')) {
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const present = Object.fromEntries([...(match[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((m) => [m[1], m[2]]));
    if (Object.entries(labels).every(([k, v]) => present[k] === v)) return Number(match[3]);
  }
  return 0;
}

describe('GET /metrics', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(() => h.stop());

  const scrape = async () => {
    const res = await h.http.get('/metrics');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/plain/);
    return res.text;
  };

  it('counts workflow starts, request durations by route template and status, and credits charged by operation', async () => {
    const before = await scrape();
    const { apiKey } = await h.provision('build');
    const created = await h.http.post('/v1/models').set('X-API-Key', apiKey).send({ target: 'churned', engine: 'tabular-gbdt', data: churnRows(120) });
    expect(created.status).toBe(201);
    const afterTraining = await scrape();
    expect(sample(afterTraining, 'workflow_starts_total', { workflow_type: 'trainModel' }) - sample(before, 'workflow_starts_total', { workflow_type: 'trainModel' })).toBe(1);

    const rows = withoutTarget(churnRows(7, 3), 'churned');
    const predicted = await h.http.post(`/v1/models/${created.body.id}/predict`).set('X-API-Key', apiKey).set('Idempotency-Key', 'metrics-1').send({ rows });
    expect(predicted.status).toBe(200);
    // A replay charges nothing, so the counter must not move for it.
    const replayed = await h.http.post(`/v1/models/${created.body.id}/predict`).set('X-API-Key', apiKey).set('Idempotency-Key', 'metrics-1').send({ rows });
    expect(replayed.status).toBe(200);
    const after = await scrape();

    const labels = { method: 'POST', route: '/v1/models/{id}/predict', status: '200' };
    expect(sample(after, 'http_request_duration_seconds_count', labels) - sample(before, 'http_request_duration_seconds_count', labels)).toBe(2);
    expect(sample(after, 'http_request_duration_seconds_bucket', { ...labels, le: '+Inf' })).toBeGreaterThanOrEqual(2);
    expect(after).not.toContain(created.body.id);
    const credits = { operation: 'models.predict' };
    expect(sample(after, 'credits_charged_total', credits) - sample(before, 'credits_charged_total', credits)).toBe(7);

    expect(after).toMatch(/^engine_pool_queue_size \d+$/m);
    expect(after).toMatch(/^engine_pool_utilization [\d.e-]+$/m);
    expect(after).toMatch(/^engine_pool_threads \d+$/m);
    expect(after).toMatch(/^process_cpu_user_seconds_total /m);
  });

  it('counts API-key authentications by statement: a claim of rate-budget points while the leases run out, a read once a point is in hand', async () => {
    const { apiKey } = await h.provision('build');
    const before = await scrape();
    // A new key claims 1 point, then 2 (its first is spent), then has one in hand for its third call.
    for (let i = 0; i < 3; i += 1) expect((await h.http.get('/v1/models').set('X-API-Key', apiKey)).status).toBe(200);
    const after = await scrape();
    expect(sample(after, 'rate_budget_statements_total', { statement: 'claim' }) - sample(before, 'rate_budget_statements_total', { statement: 'claim' })).toBe(2);
    expect(sample(after, 'rate_budget_statements_total', { statement: 'read' }) - sample(before, 'rate_budget_statements_total', { statement: 'read' })).toBe(1);
  });

  it('labels a path no route matches as unmatched, not by its raw path', async () => {
    await h.http.get('/v1/nothing/here-123');
    expect(sample(await scrape(), 'http_request_duration_seconds_count', { method: 'GET', route: 'unmatched', status: '404' })).toBeGreaterThanOrEqual(1);
  });
});

describe('GET /metrics with METRICS_TOKEN', () => {
  let h: Harness;
  const token = 'metrics-token-0123456789';
  beforeAll(async () => {
    h = await startHarness({ config: { METRICS_TOKEN: token }, withoutWorker: true });
  });
  afterAll(() => h.stop());

  it('answers 401 without the bearer token and 200 with it', async () => {
    expectError(await h.http.get('/metrics'), 401, 'AUTH_REQUIRED');
    expectError(await h.http.get('/metrics').set('Authorization', 'Bearer wrong-token-0123456789'), 401, 'AUTH_REQUIRED');
    const res = await h.http.get('/metrics').set('Authorization', `Bearer ${token}`);
    expect(res.status).toBe(200);
    expect(res.text).toContain('# TYPE http_request_duration_seconds histogram');
  });
});
