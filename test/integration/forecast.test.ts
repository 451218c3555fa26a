import Papa from 'papaparse';
import { BACKTEST_POINTS_PER_DAY } from '../../config/plans';
import { addressHash } from '../../services/address-hash';
import { AccountSchema, CreditLedgerSchema } from '../../db/entities';
import { prng } from '../support/datasets';
import { expectError, startHarness, type Harness } from '../support/harness';

const REMAINING = 'x-service-predictions-remaining';

function day(i: number): string {
  return new Date(Date.UTC(2026, 0, 1) + i * 86_400_000).toISOString().slice(0, 10);
}

/** Weekly-seasonal daily series with a trend: something a forecaster should beat naive on. */
function seasonalRows(n: number, opts: { item?: string; level?: number } = {}) {
  const pattern = [10, 12, 15, 13, 20, 30, 25];
  return Array.from({ length: n }, (_, i) => ({
    date: day(i),
    ...(opts.item ? { store: opts.item } : {}),
    sales: (opts.level ?? 100) + i * 0.5 + pattern[i % 7]! + ((i * 7919) % 13) / 13,
  }));
}

/** A random walk (seeded, Box-Muller): nothing beats the naive forecast. */
function randomWalkRows(n: number, seed = 3) {
  const rand = prng(seed);
  let value = 100;
  return Array.from({ length: n }, (_, i) => {
    value += Math.sqrt(-2 * Math.log(1 - rand())) * Math.cos(2 * Math.PI * rand()) * 5;
    return { date: day(i), price: value };
  });
}

const parse = (csv: string) => Papa.parse<Record<string, string>>(csv.trim(), { header: true });

describe('forecast and backtest routes', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(() => h.stop());

  const forecast = (key: string, body: Record<string, unknown>) => h.http.post('/v1/forecast').set('X-API-Key', key).send(body).buffer(true);

  it('answers CSV: timestamp, <target>_prediction and one quantile_<q> column each, on the series calendar; 56 points × horizon 7 cost 7', async () => {
    const { apiKey, account } = await h.provision('free');
    const res = await forecast(apiKey, { target: 'sales', horizon: 7, data: seasonalRows(56), quantiles: [0.1, 0.5, 0.9] });
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/csv/);
    expect(res.headers[REMAINING]).toBe('993');
    const parsed = parse(res.text);
    expect(parsed.meta.fields).toEqual(['date', 'sales_prediction', 'quantile_0.1', 'quantile_0.5', 'quantile_0.9']);
    expect(parsed.data.map((r) => r.date)).toEqual([56, 57, 58, 59, 60, 61, 62].map(day));
    for (const row of parsed.data) {
      expect(Number(row['quantile_0.1'])).toBeLessThanOrEqual(Number(row['quantile_0.5']));
      expect(Number(row['quantile_0.5'])).toBeLessThanOrEqual(Number(row['quantile_0.9']));
      expect(Number.isFinite(Number(row.sales_prediction))).toBe(true);
    }
    const ledger = await h.orm.em.fork().find(CreditLedgerSchema, { accountId: account.id, kind: 'charge' });
    expect(ledger.map((l) => [l.allowanceDelta, l.operation])).toEqual([[-7, 'forecast']]);
  });

  it('answers a number in every quantile cell, also for levels next to 0 (5e-324 and 1e-320 were NaN, charged as an answer)', async () => {
    const { apiKey } = await h.provision('build');
    const res = await forecast(apiKey, { target: 'sales', horizon: 3, data: seasonalRows(56), quantiles: [5e-324, 1e-320, 1e-300, 0.5] });
    expect(res.status).toBe(200);
    const parsed = parse(res.text);
    expect(parsed.meta.fields).toEqual(['date', 'sales_prediction', 'quantile_5e-324', 'quantile_1e-320', 'quantile_1e-300', 'quantile_0.5']);
    for (const row of parsed.data) {
      const cells = ['quantile_5e-324', 'quantile_1e-320', 'quantile_1e-300', 'quantile_0.5'].map((c) => Number(row[c]));
      expect(cells.every(Number.isFinite)).toBe(true);
      expect(cells).toEqual([...cells].sort((a, b) => a - b));
    }
  });

  it('forecasts several series by item_id: grouping changes neither the values nor the price', async () => {
    const { apiKey } = await h.provision('build');
    const a = seasonalRows(60, { item: 'north', level: 100 });
    const b = seasonalRows(60, { item: 'south', level: 300 });
    const together = await forecast(apiKey, { target: 'sales', horizon: 5, item_id: 'store', quantiles: [0.2, 0.8], data: [...b, ...a] });
    expect(together.status).toBe(200);
    const remainingBefore = 20_000;
    expect(Number(together.headers[REMAINING])).toBe(remainingBefore - 10);
    const rows = parse(together.text);
    expect(rows.meta.fields).toEqual(['date', 'store', 'sales_prediction', 'quantile_0.2', 'quantile_0.8']);
    expect(rows.data).toHaveLength(10);

    const alone = await forecast(apiKey, { target: 'sales', horizon: 5, item_id: 'store', quantiles: [0.2, 0.8], data: a });
    expect(Number(alone.headers[REMAINING])).toBe(remainingBefore - 15);
    const north = rows.data.filter((r) => r.store === 'north');
    expect(north).toEqual(parse(alone.text).data);
  });

  it('serves the median when point_estimate is median, equal to quantile_0.5; accepts prediction_length as the horizon', async () => {
    const { apiKey } = await h.provision('build');
    const res = await forecast(apiKey, { target: 'sales', prediction_length: 4, point_estimate: 'median', quantiles: [0.5], data: seasonalRows(40) });
    expect(res.status).toBe(200);
    const data = parse(res.text).data;
    expect(data).toHaveLength(4);
    for (const row of data) expect(row.sales_prediction).toBe(row['quantile_0.5']);
  });

  it('accepts a multipart CSV file and infers the timestamp column', async () => {
    const { apiKey } = await h.provision('build');
    const csv = ['date;sales', ...seasonalRows(30).map((r) => `${r.date};${r.sales}`)].join('\n');
    const res = await h.http
      .post('/v1/forecast')
      .set('X-API-Key', apiKey)
      .field('target', 'sales')
      .field('horizon', '3')
      .field('quantiles', '0.1,0.9')
      .attach('file', Buffer.from(csv), { filename: 's.csv', contentType: 'text/csv' })
      .buffer(true);
    expect(res.status).toBe(200);
    expect(parse(res.text).meta.fields).toEqual(['date', 'sales_prediction', 'quantile_0.1', 'quantile_0.9']);
  });

  it('keeps the item_id column of a CSV file as written: "007" and "7" are two series, and the answer names them so (numeric typing merged them, or echoed 7 for 007), in a small file and in one parsed on an engine thread', async () => {
    const { apiKey } = await h.provision('build');
    for (const note of ['', 'x'.repeat(5_000)]) {
      const lines = ['store,date,sales,note', ...['007', '7', '0042'].flatMap((store) => seasonalRows(30).map((r) => `${store},${r.date},${r.sales},${note}`))];
      const csv = Buffer.from(lines.join('\n'));
      expect(csv.length > 256 * 1024).toBe(note !== '');
      const send = (path: string) =>
        h.http.post(path).set('X-API-Key', apiKey).field('target', 'sales').field('item_id', 'store').field('horizon', '2').attach('file', csv, { filename: 's.csv', contentType: 'text/csv' }).buffer(true);
      const res = await send('/v1/forecast');
      expect(res.status).toBe(200);
      expect(parse(res.text).data.map((r) => r.store)).toEqual(['007', '007', '7', '7', '0042', '0042']);
      const backtest = await send('/v1/forecast/backtest');
      expect(backtest.status).toBe(200);
      expect(backtest.body.series.map((s: { item_id: string }) => s.item_id)).toEqual(['007', '7', '0042']);
    }
  });

  it.each([
    ['fewer than ten points', { target: 'sales', horizon: 2, data: seasonalRows(9) }],
    ['an irregular interval', { target: 'sales', horizon: 2, data: seasonalRows(20).filter((_, i) => i !== 5) }],
    ['duplicate timestamps', { target: 'sales', horizon: 2, data: [...seasonalRows(20), seasonalRows(20)[3]] }],
    ['an unreadable target', { target: 'sales', horizon: 2, data: seasonalRows(20).map((r, i) => (i === 4 ? { ...r, sales: 'n/a' } : r)) }],
    ['a missing target column', { target: 'revenue', horizon: 2, data: seasonalRows(20) }],
    ['a horizon of 0', { target: 'sales', horizon: 0, data: seasonalRows(20) }],
    ['a fractional horizon', { target: 'sales', horizon: 1.5, data: seasonalRows(20) }],
    ['a quantile of 1', { target: 'sales', horizon: 2, quantiles: [0.5, 1], data: seasonalRows(20) }],
    ['an unknown field', { target: 'sales', horizon: 2, frequency: 'D', data: seasonalRows(20) }],
    ['more steps than points', { target: 'sales', horizon: 25, data: seasonalRows(20) }],
  ])('refuses %s with 400 INVALID_INPUT and charges nothing', async (_label, body) => {
    const { apiKey, account } = await h.provision('build');
    const res = await forecast(apiKey, body);
    expectError(res, 400, 'INVALID_INPUT');
    expect(await h.orm.em.fork().count(CreditLedgerSchema, { accountId: account.id, kind: 'charge' })).toBe(0);
  });

  it('names the series at fault when several are sent', async () => {
    const { apiKey } = await h.provision('build');
    const res = await forecast(apiKey, { target: 'sales', horizon: 2, item_id: 'store', data: [...seasonalRows(30, { item: 'ok' }), ...seasonalRows(6, { item: 'tiny' })] });
    expectError(res, 400, 'INVALID_INPUT');
    expect(res.body.messageDetail).toContain('tiny');
  });

  it('refuses with 402 before any computation when horizon × series exceeds what is left, charging nothing and stating what remains in the header', async () => {
    const { apiKey, account } = await h.provision('free');
    await h.orm.em.fork().nativeUpdate(AccountSchema, { id: account.id }, { allowanceRemaining: 9, purchasedBalance: 0 });
    const res = await forecast(apiKey, { target: 'sales', horizon: 5, item_id: 'store', data: [...seasonalRows(30, { item: 'a' }), ...seasonalRows(30, { item: 'b' })] });
    expectError(res, 402, 'CREDITS_EXHAUSTED');
    expect(res.body).toEqual(expect.objectContaining({ balance: 9, required: 10 }));
    expect(res.headers['x-service-predictions-remaining']).toBe('9');
    expect(await h.orm.em.fork().count(CreditLedgerSchema, { accountId: account.id, kind: 'charge' })).toBe(0);
  });

  it('replays an Idempotency-Key with the same CSV and header, charging once', async () => {
    const { apiKey, account } = await h.provision('build');
    const send = () => h.http.post('/v1/forecast').set('X-API-Key', apiKey).set('Idempotency-Key', 'fc-1').send({ target: 'sales', horizon: 3, data: seasonalRows(30) }).buffer(true);
    const first = await send();
    const replay = await send();
    expect(replay.status).toBe(200);
    expect(replay.text).toBe(first.text);
    expect(replay.headers[REMAINING]).toBe(first.headers[REMAINING]);
    expect(replay.headers['content-type']).toMatch(/^text\/csv/);
    expect(await h.orm.em.fork().count(CreditLedgerSchema, { accountId: account.id, kind: 'charge' })).toBe(1);
  });

  it('forecasts a series given by integer positions, continuing them, with the season named by season_length', async () => {
    const { apiKey } = await h.provision('build');
    const pattern = [10, 12, 15, 13, 20];
    const data = Array.from({ length: 60 }, (_, i) => ({ t: 100 + 5 * i, y: 50 + pattern[i % 5]! }));
    const res = await forecast(apiKey, { target: 'y', data, horizon: 5, season_length: 5 });
    expect(res.status).toBe(200);
    const rows = parse(res.text).data;
    expect(rows.map((r) => r.t)).toEqual(['400', '405', '410', '415', '420']);
    // A purely seasonal series with its season named: the forecast repeats the cycle.
    rows.forEach((r, k) => expect(Number(r.y_prediction)).toBeCloseTo(50 + pattern[k % 5]!, 0));
    const multipart = await h.http
      .post('/v1/forecast')
      .set('X-API-Key', apiKey)
      .field('target', 'y')
      .field('horizon', '5')
      .field('season_length', '5')
      .attach('file', Buffer.from(['t,y', ...data.map((r) => `${r.t},${r.y}`)].join('\n')), 'series.csv')
      .buffer(true);
    expect(parse(multipart.text).data).toEqual(rows);
    // The backtest takes the same inputs: with the season named, its baseline is the seasonal naive one.
    const seasonal = await h.http.post('/v1/forecast/backtest').set('X-API-Key', apiKey).send({ target: 'y', data, horizon: 5, season_length: 5 });
    const plain = await h.http.post('/v1/forecast/backtest').set('X-API-Key', apiKey).send({ target: 'y', data, horizon: 5 });
    expect([seasonal.status, seasonal.body.baseline]).toEqual([200, 'seasonal_naive']);
    expect([plain.status, plain.body.baseline]).toEqual([200, 'naive']);
  });

  it('reads dates before year 100 as themselves (0001-01-01 is year 1, not 1901)', async () => {
    const { apiKey } = await h.provision('build');
    const data = Array.from({ length: 40 }, (_, i) => ({ year: `${String(1 + i).padStart(4, '0')}-01-01`, y: 100 + 2 * i }));
    const res = await forecast(apiKey, { target: 'y', data, horizon: 3 });
    expect(res.status).toBe(200);
    expect(parse(res.text).data.map((r) => r.year)).toEqual(['0041-01-01', '0042-01-01', '0043-01-01']);
  });

  it('forecasts up to the year 9999 and refuses, charging nothing, a horizon that would run past it', async () => {
    const { apiKey, account } = await h.provision('build');
    const data = Array.from({ length: 30 }, (_, i) => ({ year: `${9967 + i}-01-01`, y: 100 + 2 * i }));
    const last = await forecast(apiKey, { target: 'y', data, horizon: 3 });
    expect(last.status).toBe(200);
    expect(parse(last.text).data.map((r) => r.year)).toEqual(['9997-01-01', '9998-01-01', '9999-01-01']);
    const balance = async () => (await h.orm.em.fork().findOneOrFail(AccountSchema, { id: account.id })).allowanceRemaining;
    const before = await balance();
    const past = await forecast(apiKey, { target: 'y', data, horizon: 4 });
    expectError(past, 400, 'INVALID_INPUT');
    expect(past.body.reason).toBe('PAST_YEAR_9999');
    expect(await balance()).toBe(before);
  });

  it('says when a refusal for the horizon comes from the default horizon the caller never sent: a 10-point series (the contract\'s minimum) without a horizon was told "fewer than the horizon 12" (a thirteenth probe)', async () => {
    const { apiKey } = await h.provision('build');
    const data = seasonalRows(11);
    const defaulted = await forecast(apiKey, { target: 'sales', data });
    expectError(defaulted, 400, 'INVALID_INPUT');
    expect(defaulted.body.reason).toBe('SHORTER_THAN_HORIZON');
    expect(defaulted.body.messageDetail).toMatch(/fewer than the horizon 12;.* No horizon was sent, so the default of 12 applies/);
    const sent = await forecast(apiKey, { target: 'sales', data, horizon: 12 });
    expect(sent.body.messageDetail).not.toMatch(/No horizon was sent/);
    const backtest = await h.http.post('/v1/forecast/backtest').set('X-API-Key', apiKey).send({ target: 'sales', data: seasonalRows(20) });
    expectError(backtest, 400, 'VALIDATION_ERROR');
    expect(backtest.body.messageDetail).toMatch(/backtest window of 12 step\(s\).* No horizon was sent, so the default of 12 applies/);
    expect((await forecast(apiKey, { target: 'sales', data, horizon: 3 })).status).toBe(200);
  });

  it('refuses, charging nothing, a forecast whose answer would hold more than 2,000,000 numbers (150 series × horizon 1,000 × 99 quantiles answered 270 MB and held the event loop 11 s: a thirteenth probe)', async () => {
    const { apiKey, account } = await h.provision('pro');
    const balance = async () => (await h.orm.em.fork().findOneOrFail(AccountSchema, { id: account.id })).allowanceRemaining;
    const before = await balance();
    const quantiles = Array.from({ length: 99 }, (_, k) => (k + 1) / 100);
    const data = Array.from({ length: 21 }, (_, s) => Array.from({ length: 1000 }, (_, i) => ({ t: i + 1, id: `s${s}`, y: 100 + ((i * 7919 + s) % 13) }))).flat();
    const refused = await forecast(apiKey, { target: 'y', timestamp: 't', item_id: 'id', horizon: 1000, quantiles, data });
    expectError(refused, 400, 'INVALID_INPUT');
    expect(refused.body).toMatchObject({ reason: 'ANSWER_TOO_LARGE', limit: 2_000_000, values: 21 * 1000 * 100 });
    expect(await balance()).toBe(before);
    // the same series with a shorter horizon are answered
    const fits = await forecast(apiKey, { target: 'y', timestamp: 't', item_id: 'id', horizon: 10, quantiles, data });
    expect(fits.status).toBe(200);
  });

  it('forecasts integer positions up to 2^53 - 1 and refuses, charging nothing, a horizon that would run past it (positions were printed rounded: 9007199254740992 twice)', async () => {
    const { apiKey, account } = await h.provision('build');
    const lastRead = Number.MAX_SAFE_INTEGER - 3;
    const data = Array.from({ length: 30 }, (_, i) => ({ t: lastRead - 29 + i, y: 100 + 2 * (i % 5) }));
    const last = await forecast(apiKey, { target: 'y', timestamp: 't', data, horizon: 3 });
    expect(last.status).toBe(200);
    expect(parse(last.text).data.map((r) => r.t)).toEqual(['9007199254740989', '9007199254740990', '9007199254740991']);
    const balance = async () => (await h.orm.em.fork().findOneOrFail(AccountSchema, { id: account.id })).allowanceRemaining;
    const before = await balance();
    const past = await forecast(apiKey, { target: 'y', timestamp: 't', data, horizon: 5 });
    expectError(past, 400, 'INVALID_INPUT');
    expect(past.body.reason).toBe('POSITION_OUT_OF_RANGE');
    expect(await balance()).toBe(before);
  });

  it('refuses JSON item_id integers beyond 2^53 - 1, charging nothing: 9007199254740993 and …992 were merged into one series, and 12345678901234567890 answered as …567000 (a sixth probe)', async () => {
    const { apiKey, account } = await h.provision('build');
    const balance = async () => (await h.orm.em.fork().findOneOrFail(AccountSchema, { id: account.id })).allowanceRemaining;
    const before = await balance();
    const rows = (id: string) => seasonalRows(20).map((r) => `{"date":"${r.date}","store":${id},"sales":${r.sales}}`);
    for (const ids of [['9007199254740993', '9007199254740992'], ['12345678901234567890']]) {
      const text = `{"target":"sales","item_id":"store","horizon":2,"data":[${ids.flatMap(rows).join(',')}]}`;
      const res = await h.http.post('/v1/forecast').set('X-API-Key', apiKey).set('Content-Type', 'application/json').send(text);
      expectError(res, 400, 'INVALID_INPUT');
      expect(res.body.reason).toBe('ITEM_ID_NOT_EXACT');
      const backtest = await h.http.post('/v1/forecast/backtest').set('X-API-Key', apiKey).set('Content-Type', 'application/json').send(text);
      expectError(backtest, 400, 'VALIDATION_ERROR');
      expect(backtest.body.reason).toBe('ITEM_ID_NOT_EXACT');
    }
    expect(await balance()).toBe(before);
    // integers JSON holds exactly are identifiers as before, answered as sent
    const exact = await forecast(apiKey, { target: 'sales', item_id: 'store', horizon: 1, data: [Number.MAX_SAFE_INTEGER, 7].flatMap((id) => seasonalRows(20).map((r) => ({ ...r, store: id }))) });
    expect(exact.status).toBe(200);
    expect(parse(exact.text).data.map((r) => r.store)).toEqual([String(Number.MAX_SAFE_INTEGER), '7']);
  });

  it('refuses values beyond ±1e150 on forecast and backtest alike (400, nothing charged), and duplicate quantiles on both', async () => {
    const { apiKey, account } = await h.provision('build');
    const data = Array.from({ length: 60 }, (_, i) => ({ ds: new Date(Date.UTC(2026, 0, 1 + i)).toISOString().slice(0, 10), y: (1 + (i % 7) / 7) * 1e300 }));
    const balance = async () => (await h.orm.em.fork().findOneOrFail(AccountSchema, { id: account.id })).allowanceRemaining;
    const before = await balance();
    const fc = await forecast(apiKey, { target: 'y', data, horizon: 3 });
    expectError(fc, 400, 'INVALID_INPUT');
    expect(fc.body.reason).toBe('VALUE_OUT_OF_RANGE');
    const bt = await h.http.post('/v1/forecast/backtest').set('X-API-Key', apiKey).send({ target: 'y', data, horizon: 3 });
    expectError(bt, 400, 'VALIDATION_ERROR');
    expect(bt.body.reason).toBe('VALUE_OUT_OF_RANGE');
    expect(await balance()).toBe(before);
    const small = data.map((r) => ({ ...r, y: r.y / 1e290 }));
    expectError(await forecast(apiKey, { target: 'y', data: small, horizon: 3, quantiles: [0.5, 0.5] }), 400, 'INVALID_INPUT');
    expectError(await h.http.post('/v1/forecast/backtest').set('X-API-Key', apiKey).send({ target: 'y', data: small, horizon: 3, quantiles: [0.5, 0.5] }), 400, 'VALIDATION_ERROR');
  });

  it('refuses a timestamp or item_id column named like an answer column (400 COLUMN_NAME_COLLISION, nothing charged): the CSV named two columns alike (a seventh probe)', async () => {
    const { apiKey, account } = await h.provision('build');
    const balance = async () => (await h.orm.em.fork().findOneOrFail(AccountSchema, { id: account.id })).allowanceRemaining;
    const before = await balance();
    const renamed = (from: string, to: string) => seasonalRows(40, { item: 'a' }).map(({ [from as 'date']: value, ...rest }) => ({ ...rest, [to]: value }));
    const cases: Array<Record<string, unknown>> = [
      // the timestamps were answered under the header quantile_0.5, beside the quantile itself (200 before)
      { target: 'sales', horizon: 3, quantiles: [0.5], timestamp: 'quantile_0.5', data: renamed('date', 'quantile_0.5') },
      { target: 'sales', horizon: 3, timestamp: 'sales_prediction', data: renamed('date', 'sales_prediction') },
      { target: 'sales', horizon: 3, quantiles: [0.1], item_id: 'quantile_0.1', data: renamed('store', 'quantile_0.1') },
    ];
    for (const body of cases) {
      const refused = await forecast(apiKey, body);
      expectError(refused, 400, 'INVALID_INPUT');
      expect(refused.body.reason).toBe('COLUMN_NAME_COLLISION');
    }
    expect(await balance()).toBe(before);
    // other names are answered as before
    const fine = await forecast(apiKey, { target: 'sales', horizon: 3, quantiles: [0.5], timestamp: 'quantile_0.9', data: renamed('date', 'quantile_0.9') });
    expect(fine.status).toBe(200);
    expect(parse(fine.text).meta.fields).toEqual(['quantile_0.9', 'sales_prediction', 'quantile_0.5']);
  });

  it('refuses one column named in two roles (target, timestamp, item_id), on forecast and backtest, nothing charged (a ninth probe: item_id the target was forecast and charged, each series\' id as its value)', async () => {
    const { apiKey, account } = await h.provision('build');
    const balance = async () => (await h.orm.em.fork().findOneOrFail(AccountSchema, { id: account.id })).allowanceRemaining;
    const before = await balance();
    // two constant series whose value is their id: item_id "sales" was 200, forecasting 1 and 2
    const data = [1, 2].flatMap((id) => Array.from({ length: 20 }, (_, i) => ({ t: i, store: `s${id}`, sales: id })));
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ target: 'sales', timestamp: 't', item_id: 'sales' }, 'target and item_id both name the column "sales"; each names a column of its own.'],
      [{ target: 't', timestamp: 't', item_id: 'store' }, 'target and timestamp both name the column "t"; each names a column of its own.'],
      [{ target: 'sales', timestamp: 'store', item_id: 'store' }, 'timestamp and item_id both name the column "store"; each names a column of its own.'],
    ];
    for (const [names, detail] of cases) {
      const refused = await forecast(apiKey, { ...names, horizon: 2, data });
      expectError(refused, 400, 'INVALID_INPUT');
      expect([refused.body.reason, refused.body.messageDetail]).toEqual(['COLUMN_IN_TWO_ROLES', detail]);
      const backtest = await h.http.post('/v1/forecast/backtest').set('X-API-Key', apiKey).send({ ...names, horizon: 2, data });
      expectError(backtest, 400, 'VALIDATION_ERROR');
      expect(backtest.body.reason).toBe('COLUMN_IN_TWO_ROLES');
    }
    expect(await balance()).toBe(before);
  });

  it('refuses a season_length that is not a positive integer', async () => {
    const { apiKey } = await h.provision('build');
    const data = Array.from({ length: 30 }, (_, i) => ({ t: i + 1, y: i }));
    expectError(await forecast(apiKey, { target: 'y', data, season_length: 0 }), 400, 'INVALID_INPUT');
    expectError(await forecast(apiKey, { target: 'y', data, season_length: 2.5 }), 400, 'INVALID_INPUT');
  });

  it('refuses an admin key with ADMIN_KEY_CANNOT_PREDICT', async () => {
    const { adminKey } = await h.provision('build');
    expectError(await forecast(adminKey, { target: 'sales', horizon: 3, data: seasonalRows(30) }), 403, 'ADMIN_KEY_CANNOT_PREDICT');
  });

  describe('backtest', () => {
    const backtest = (key: string, body: Record<string, unknown>) => h.http.post('/v1/forecast/backtest').set('X-API-Key', key).send(body);

    it('says usable for a strongly seasonal series, with per-window scores and no forecast values; free', async () => {
      const { apiKey, account } = await h.provision('free');
      const res = await backtest(apiKey, { target: 'sales', horizon: 7, data: seasonalRows(120) });
      expect(res.status).toBe(200);
      expect(res.body.verdict.level).toBe('usable');
      expect(res.body.by_window.length).toBeGreaterThanOrEqual(1);
      for (const w of res.body.by_window) expect(Object.keys(w).sort()).toEqual(['end', 'mase', 'naive_mase', 'start', 'window']);
      expect(JSON.stringify(res.body)).not.toMatch(/prediction|quantile/);
      expect(res.headers[REMAINING]).toBeUndefined();
      expect(await h.orm.em.fork().count(CreditLedgerSchema, { accountId: account.id, kind: 'charge' })).toBe(0);
    });

    it('says no_signal for a random walk, where nothing beats the naive forecast', async () => {
      const { apiKey } = await h.provision('free');
      const res = await backtest(apiKey, { target: 'price', horizon: 5, data: randomWalkRows(150) });
      expect(res.status).toBe(200);
      expect(res.body.verdict.level).toBe('no_signal');
    });

    it('judges several series and gives each its own verdict: usable for a seasonal series, no_signal for a random walk', async () => {
      const { apiKey } = await h.provision('free');
      const walk = randomWalkRows(150).map((r) => ({ date: r.date, store: 'walk', sales: r.price }));
      const res = await backtest(apiKey, { target: 'sales', horizon: 7, item_id: 'store', data: [...seasonalRows(150, { item: 'seasonal' }), ...walk] });
      expect(res.status).toBe(200);
      const verdicts = Object.fromEntries(res.body.series.map((s: { item_id: string; verdict: { level: string } }) => [s.item_id, s.verdict.level]));
      expect(verdicts).toEqual({ seasonal: 'usable', walk: 'no_signal' });
      expect(res.body.by_window.every((w: { item_id?: string }) => w.item_id === 'seasonal' || w.item_id === 'walk')).toBe(true);
    });

    it('counts the points it scores (series-windows × horizon) against the account\'s daily budget, free 1,000: beyond, 429 RATE_LIMITED with Retry-After and no scores; more than a day\'s budget in one call is 413 (an eighteenth probe read the paid forecast off two free backtests, every series of a call at once)', async () => {
      const { apiKey, account } = await h.provision('free');
      const stores = (count: number, points: number) => Array.from({ length: count }, (_, s) => seasonalRows(points, { item: `s${s}`, level: 100 + s })).flat();
      // 3 series × 3 windows × 30 steps = 270 points a call: three calls fit in 1,000, a fourth does not
      const body = { target: 'sales', horizon: 30, item_id: 'store', data: stores(3, 120) };
      for (let call = 0; call < 3; call += 1) {
        const answered = await backtest(apiKey, body);
        expect([answered.status, answered.body.windows, answered.body.horizon]).toEqual([200, 9, 30]);
      }
      const refused = await backtest(apiKey, body);
      expectError(refused, 429, 'RATE_LIMITED');
      expect(refused.body).not.toHaveProperty('by_window');
      expect(refused.body.limit).toBe(BACKTEST_POINTS_PER_DAY.free);
      expect(refused.body.messageDetail).toContain('190 of its 1,000 a day left');
      expect(Number(refused.headers['retry-after'])).toBeGreaterThan(86_000);
      // refused before any work once nothing is left: a series too short to backtest is not even read (it would be 400)
      const counter = `backtest:free:${addressHash(account.email)}`;
      expect((await h.callPool.query(`update rate_limits set points = 1000 where key = $1 and points = 810`, [counter])).rowCount).toBe(1);
      expectError(await backtest(apiKey, { target: 'sales', horizon: 3, data: seasonalRows(5) }), 429, 'RATE_LIMITED');
      await h.callPool.query(`update rate_limits set points = 810 where key = $1`, [counter]);
      // what a refused call asked for was not counted: a backtest of 190 points or fewer still runs
      const small = await backtest(apiKey, { target: 'sales', horizon: 10, data: seasonalRows(60) });
      expect([small.status, small.body.windows * small.body.horizon <= 190]).toEqual([200, true]);
      // another account has its own budget, and one call above a whole day's is 413
      const other = await h.provision('free');
      const tooLarge = await backtest(other.apiKey, { ...body, horizon: 100, data: stores(4, 320) });
      expectError(tooLarge, 413, 'DATASET_TOO_LARGE');
      expect(tooLarge.body.messageDetail).toContain('1,200 forecast points');
      expect((await backtest(other.apiKey, body)).status).toBe(200);
    });

    it.each([
      ['an unreadable series', { target: 'sales', horizon: 3, data: seasonalRows(20).map((r) => ({ ...r, sales: 'x' })) }],
      ['a missing target', { horizon: 3, data: seasonalRows(20) }],
      ['a missing timestamp', { target: 'sales', horizon: 3, data: seasonalRows(20).map((r) => ({ sales: r.sales })) }],
      ['a horizon of 1001', { target: 'sales', horizon: 1001, data: seasonalRows(20) }],
      ['a horizon that is not an integer', { target: 'sales', horizon: 'seven', data: seasonalRows(20) }],
      ['duplicate timestamps', { target: 'sales', horizon: 3, data: [...seasonalRows(20), seasonalRows(20)[0]] }],
    ])('refuses %s with 400 VALIDATION_ERROR', async (_label, body) => {
      const { apiKey } = await h.provision('free');
      expectError(await backtest(apiKey, body), 400, 'VALIDATION_ERROR');
    });
  });
});
