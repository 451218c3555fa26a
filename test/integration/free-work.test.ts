import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expectError, startHarness, type Harness } from '../support/harness';
import { eventually } from '../support/billing';
import { manySeries } from '../support/datasets';
import { padPastStaging } from '../support/staged';

describe('free engine calls: bounded per account, dropped when their client leaves', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(() => h.stop());

  const body = { target: 'y', timestamp: 't', item_id: 'id', horizon: 2, data: manySeries(1500, 12) };
  /** Waits until a count of the free queue reaches `wanted`; fails the test if it does not within 30 s. */
  const reach = async (count: () => number, wanted: number): Promise<void> => {
    expect(await eventually(async () => count(), (n) => n === wanted, 30_000)).toBe(wanted);
  };

  it('answers an account\'s third concurrent free call 429 RATE_LIMITED with Retry-After, while another account\'s is served; a validation, and a large body read on a thread, count as one of the two', async () => {
    const a = await h.provision('build');
    const b = await h.provision('build');
    const free = h.enginePool.freeWork;
    const first = h.http.post('/v1/forecast/backtest').set('X-API-Key', a.apiKey).send(body).then((res) => res);
    await reach(() => free.activeCount, 1);
    const second = h.http.post('/v1/forecast/backtest').set('X-API-Key', a.apiKey).send(body).then((res) => res);
    await reach(() => free.pendingCount, 1);

    const third = await h.http.post('/v1/forecast/backtest').set('X-API-Key', a.apiKey).send(body);
    expectError(third, 429, 'RATE_LIMITED');
    expect(third.headers['retry-after']).toBe('10');
    const validationBody = { target: 'y', data: Array.from({ length: 40 }, (_, i) => ({ x: i % 7, y: i % 2 })) };
    const validation = await h.http.post('/v1/datasets/validate').set('X-API-Key', a.apiKey).send(validationBody);
    expectError(validation, 429, 'RATE_LIMITED');
    // a body of 1 MiB or more, read and run on an engine thread, is free work from its reading on
    for (const [path, value] of [['/v1/forecast/backtest', body], ['/v1/datasets/validate', validationBody]] as const) {
      const text = JSON.stringify(value);
      const large = await h.http.post(path).set('X-API-Key', a.apiKey).set('Content-Type', 'application/json').send(padPastStaging(text));
      expectError(large, 429, 'RATE_LIMITED');
    }

    const other = await h.http.post('/v1/forecast/backtest').set('X-API-Key', b.apiKey).send(body);
    expect(other.status).toBe(200);
    expect((await first).status).toBe(200);
    expect((await second).status).toBe(200);
    expect([free.activeCount, free.pendingCount]).toEqual([0, 0]);
  }, 120_000);

  it('drops a waiting free call whose client hangs up: it leaves the queue at once and its backtest never runs', async () => {
    const a = await h.provision('build');
    const b = await h.provision('build');
    const free = h.enginePool.freeWork;
    let answered = false;
    const running = h.http.post('/v1/forecast/backtest').set('X-API-Key', a.apiKey).send(body).then((res) => ((answered = true), res));
    await reach(() => free.activeCount, 1);

    const { port } = h.server.address() as AddressInfo;
    const payload = JSON.stringify(body);
    const leaving = http.request({ port, method: 'POST', path: '/v1/forecast/backtest', headers: { 'X-API-Key': b.apiKey, 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(payload) } });
    leaving.on('error', () => undefined);
    leaving.end(payload);
    await reach(() => free.pendingCount, 1);
    leaving.destroy();
    await reach(() => free.pendingCount, 0);
    // the first backtest still runs: the hung-up one left the queue without waiting for its turn
    expect(answered).toBe(false);
    expect(free.activeCount).toBe(1);
    expect((await running).status).toBe(200);
    expect([free.activeCount, free.pendingCount]).toEqual([0, 0]);
  }, 120_000);
});
