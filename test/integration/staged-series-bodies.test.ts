import { CreditLedgerSchema } from '../../db/entities';
import { churnRows, dailySeriesRows } from '../support/datasets';
import { expectError, startHarness, type Harness } from '../support/harness';
import { padPastStaging, stagedCount as stagedCountOf } from '../support/staged';

/**
 * A validation, forecast or backtest body of STAGED_JSON_FROM_BYTES or more is read on an engine thread
 * (services/validation-body.ts, series-body.ts). Each test sends the same JSON value twice: as it is
 * (read on the event loop) and padded with blanks past the threshold (read on a thread), and expects the
 * same answer and the same charge.
 */
describe('large validation, forecast and backtest bodies read on an engine thread', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(() => h.stop());

  const padded = padPastStaging;

  const post = (path: string, apiKey: string, text: string, idempotencyKey?: string) => {
    const req = h.http.post(path).set('X-API-Key', apiKey).set('Content-Type', 'application/json');
    return (idempotencyKey ? req.set('Idempotency-Key', idempotencyKey) : req).send(text);
  };

  const stagedCount = (outcome: 'staged' | 'refused') => stagedCountOf(h, outcome);

  /** Sends each case small then large; both must give the same status and body. Answers the large ones. */
  async function sameAnswers(path: string, apiKey: string, cases: Array<[name: string, text: string, status: number, code: string | null]>) {
    for (const [name, text, status, code] of cases) {
      const small = await post(path, apiKey, text);
      const large = await post(path, apiKey, padded(text));
      if (code) expectError(large, status, code);
      else expect({ name, status: large.status }).toEqual({ name, status });
      expect({ name, body: large.body, text: large.text }).toEqual({ name, body: small.body, text: small.text });
    }
  }

  it('validates a large body exactly as the same rows sent small (report, trial and verdict), reading it on a thread', async () => {
    const { apiKey } = await h.provision('free');
    const text = JSON.stringify({ target: 'churned', data: churnRows(300, 4) });
    const stagedBefore = await stagedCount('staged');
    const small = await post('/v1/datasets/validate', apiKey, text);
    expect(await stagedCount('staged')).toBe(stagedBefore);
    const large = await post('/v1/datasets/validate', apiKey, padded(text));
    expect(await stagedCount('staged')).toBe(stagedBefore + 1);
    expect([small.status, large.status]).toEqual([200, 200]);
    expect(large.body.valid).toBe(true);
    expect(large.body.trial.metrics).toBeDefined();
    expect(large.body).toEqual(small.body);
  });

  it('refuses or reports a large validation body as the same body sent small', async () => {
    const { apiKey } = await h.provision('free');
    const rows = churnRows(40, 6);
    const refusedBefore = await stagedCount('refused');
    const stagedBefore = await stagedCount('staged');
    await sameAnswers('/v1/datasets/validate', apiKey, [
      ['malformed JSON', '{"target": "churned", "data": [', 400, 'INVALID_JSON'],
      ['an unknown member', JSON.stringify({ target: 'churned', data: rows, extra: 1 }), 400, 'VALIDATION_ERROR'],
      ['no rows', JSON.stringify({ target: 'churned' }), 400, 'VALIDATION_ERROR'],
      ['a row that is not an object', JSON.stringify({ target: 'churned', data: [rows[0], 3] }), 400, 'VALIDATION_ERROR'],
      ['the forecast engine', JSON.stringify({ target: 'churned', engine: 'forecast-auto', data: rows }), 400, 'VALIDATION_ERROR'],
      ['more rows than the plan trains on', JSON.stringify({ target: 'churned', data: churnRows(10_001, 2) }), 413, 'TOO_MANY_ROWS'],
      ['a target absent from the rows', JSON.stringify({ target: 'nope', data: rows }), 400, 'VALIDATION_ERROR'],
      // the engine's refusal of the data is a report with valid false, not an error
      ['a single target value', JSON.stringify({ target: 'churned', data: rows.map((r) => ({ ...r, churned: 'yes' })) }), 200, null],
    ]);
    // the body's own refusals are the thread's; the single target value is a report it made
    expect(await stagedCount('refused')).toBe(refusedBefore + 7);
    expect(await stagedCount('staged')).toBe(stagedBefore + 1);
  });

  const series = (n: number, points: number) => dailySeriesRows(n, points);

  it('forecasts a large body exactly as the same series sent small, charging the same, reading it on a thread', async () => {
    const { apiKey, account } = await h.provision('free');
    const text = JSON.stringify({ target: 'value', timestamp: 'date', item_id: 'item', horizon: 7, quantiles: [0.1, 0.9], data: series(3, 60) });
    const stagedBefore = await stagedCount('staged');
    const small = await post('/v1/forecast', apiKey, text);
    expect(await stagedCount('staged')).toBe(stagedBefore);
    const large = await post('/v1/forecast', apiKey, padded(text));
    expect(await stagedCount('staged')).toBe(stagedBefore + 1);
    expect([small.status, large.status]).toEqual([200, 200]);
    expect(large.text.split('\n')).toHaveLength(1 + 3 * 7);
    expect(large.text).toBe(small.text);
    expect(Number(large.headers['x-service-predictions-remaining'])).toBe(Number(small.headers['x-service-predictions-remaining']) - 21);
    const charges = await h.orm.em.fork().find(CreditLedgerSchema, { accountId: account.id, kind: 'charge' });
    expect(charges.map((c) => c.allowanceDelta + c.balanceDelta)).toEqual([-21, -21]);
  });

  it('replays the Idempotency-Key retry of a large forecast, sent large or small, charged once; other series under the key are 422', async () => {
    const { apiKey, account } = await h.provision('free');
    const text = JSON.stringify({ target: 'value', horizon: 5, data: series(1, 50) });
    const stagedBefore = await stagedCount('staged');
    const first = await post('/v1/forecast', apiKey, padded(text), 'staged-forecast');
    expect(first.status).toBe(200);
    for (const retry of [await post('/v1/forecast', apiKey, padded(text), 'staged-forecast'), await post('/v1/forecast', apiKey, text, 'staged-forecast')]) {
      expect([retry.status, retry.headers['idempotent-replayed']]).toEqual([200, 'true']);
      expect(retry.text).toBe(first.text);
    }
    const other = JSON.stringify({ target: 'value', horizon: 5, data: series(1, 51) });
    expectError(await post('/v1/forecast', apiKey, padded(other), 'staged-forecast'), 422, 'IDEMPOTENCY_KEY_REUSED');
    // the three large bodies were fingerprinted by their threads, the small one here
    expect(await stagedCount('staged')).toBe(stagedBefore + 3);
    const charges = await h.orm.em.fork().find(CreditLedgerSchema, { accountId: account.id, kind: 'charge' });
    expect(charges.map((c) => c.allowanceDelta + c.balanceDelta)).toEqual([-5]);
  });

  /** Bodies each series route refuses, in its own code: the thread's checks and the handler's after them. */
  const seriesRefusals = (code: 'INVALID_INPUT' | 'VALIDATION_ERROR'): Array<[string, string, number, string]> => {
    const rows = series(2, 30);
    const body = (extra: Record<string, unknown>, data: unknown = rows) => JSON.stringify({ target: 'value', timestamp: 'date', item_id: 'item', ...extra, data });
    return [
      ['malformed JSON', '{"target": "value", "data": [', 400, 'INVALID_JSON'],
      ['an unknown member', body({ extra: 1 }), 400, code],
      ['a string for the horizon', body({ horizon: '6' }), 400, code],
      ['horizon and prediction_length that differ', body({ horizon: 6, prediction_length: 7 }), 400, code],
      ['no rows', JSON.stringify({ target: 'value' }), 400, code],
      ['a row that is not an object', body({}, [rows[0], 'x']), 400, code],
      ['one column in two roles', body({ item_id: 'value' }), 400, code],
      ['an item id JSON cannot hold exactly', body({}, rows.map((r, i) => ({ ...r, item: i < 30 ? 2 ** 53 + 2 : 1 }))), 400, code],
      ['a timestamp twice in a series', body({}, [...rows, rows[0]]), 400, code],
      ['a target that is not numeric', body({}, rows.map((r) => ({ ...r, value: 'high' }))), 400, code],
      ['a series shorter than the horizon', body({ horizon: 31 }), 400, code],
    ];
  };

  it('refuses a large forecast body with the same answer as the same body sent small, charging nothing', async () => {
    const { apiKey, account } = await h.provision('free');
    const cases = seriesRefusals('INVALID_INPUT');
    const refusedBefore = await stagedCount('refused');
    await sameAnswers('/v1/forecast', apiKey, cases);
    // every case but the last (the horizon is checked against the prepared series by the handler) is the thread's
    expect(await stagedCount('refused')).toBe(refusedBefore + cases.length - 1);
    expect(await h.orm.em.fork().count(CreditLedgerSchema, { accountId: account.id, kind: 'charge' })).toBe(0);
  });

  it('backtests a large body on a thread exactly as the same series sent small, and refuses one as the small body is refused, in its own code', async () => {
    const { apiKey } = await h.provision('free');
    const text = JSON.stringify({ target: 'value', timestamp: 'date', item_id: 'item', horizon: 7, data: series(2, 90) });
    const stagedBefore = await stagedCount('staged');
    const small = await post('/v1/forecast/backtest', apiKey, text);
    const large = await post('/v1/forecast/backtest', apiKey, padded(text));
    expect(await stagedCount('staged')).toBe(stagedBefore + 1);
    expect([small.status, large.status]).toEqual([200, 200]);
    expect(large.body.series).toHaveLength(2);
    expect(large.body).toEqual(small.body);
    const cases = seriesRefusals('VALIDATION_ERROR');
    const refusedBefore = await stagedCount('refused');
    await sameAnswers('/v1/forecast/backtest', apiKey, cases);
    // a backtest is read and run on its thread: every refusal is the thread's
    expect(await stagedCount('refused')).toBe(refusedBefore + cases.length);
  });

  /** A CSV of `rows` whose numbers are written out in full (the exact decimal of each double: the same values), to pass 256 KiB with few rows. */
  const longCsv = (rows: Array<Record<string, unknown>>): string => {
    const columns = Object.keys(rows[0] ?? {});
    const cell = (v: unknown) => (typeof v === 'number' && !Number.isInteger(v) ? v.toFixed(40) : String(v));
    const csv = [columns.join(','), ...rows.map((r) => columns.map((c) => cell(r[c])).join(','))].join('\n');
    expect(csv.length).toBeGreaterThan(256 * 1024);
    return csv;
  };

  const attach = (path: string, apiKey: string, fields: Record<string, string>, csv: string) => {
    const req = h.http.post(path).set('X-API-Key', apiKey);
    for (const [name, value] of Object.entries(fields)) void req.field(name, value);
    return req.attach('file', Buffer.from(csv), { filename: 'data.csv', contentType: 'text/csv' });
  };

  it('forecasts and backtests a file of 256 KiB or more on the thread that parses it, as the same series sent as JSON, item ids as written', async () => {
    const { apiKey } = await h.provision('free');
    // "007" and "7" are two series, kept as written
    const rows = dailySeriesRows(3, 2_000).map((r) => ({ ...r, item: r.item === 's0' ? '007' : r.item === 's1' ? '7' : String(r.item) }));
    const csv = longCsv(rows);
    const fields = { target: 'value', timestamp: 'date', item_id: 'item', horizon: '7' };
    for (const path of ['/v1/forecast', '/v1/forecast/backtest']) {
      const stagedBefore = await stagedCount('staged');
      const json = await post(path, apiKey, JSON.stringify({ ...fields, horizon: 7, data: rows }));
      const file = await attach(path, apiKey, fields, csv);
      expect(await stagedCount('staged')).toBe(stagedBefore + 1);
      expect({ path, statuses: [json.status, file.status] }).toEqual({ path, statuses: [200, 200] });
      expect({ path, body: file.body, text: file.text }).toEqual({ path, body: json.body, text: json.text });
    }
    const forecast = (await attach('/v1/forecast', apiKey, fields, csv)).text;
    expect(forecast).toMatch(/\n[^,\n]+,007,/);
    expect(forecast).toMatch(/\n[^,\n]+,7,/);
  });

  it('validates a file of 256 KiB or more on the thread that parses it, as the same rows sent as JSON; its refusals keep their codes', async () => {
    const { apiKey } = await h.provision('free');
    const rows = churnRows(3_500, 8);
    const csv = longCsv(rows);
    const stagedBefore = await stagedCount('staged');
    const json = await post('/v1/datasets/validate', apiKey, JSON.stringify({ target: 'churned', data: rows }));
    const file = await attach('/v1/datasets/validate', apiKey, { target: 'churned' }, csv);
    expect(await stagedCount('staged')).toBe(stagedBefore + 1);
    expect([json.status, file.status]).toEqual([200, 200]);
    expect(file.body.valid).toBe(true);
    expect(file.body).toEqual(json.body);
    const refusedBefore = await stagedCount('refused');
    expectError(await attach('/v1/datasets/validate', apiKey, { target: 'churned' }, `x1,x2\n"1,2\n${csv}`), 400, 'CSV_UNREADABLE');
    expectError(await attach('/v1/datasets/validate', apiKey, { target: 'nope' }, csv), 400, 'VALIDATION_ERROR');
    expectError(await attach('/v1/forecast', apiKey, { target: 'x1', timestamp: 'x2' }, `x1,x2\n"1,2\n${csv}`), 400, 'CSV_UNREADABLE');
    expect(await stagedCount('refused')).toBe(refusedBefore + 3);
  });
});
