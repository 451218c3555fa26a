import { EnginePool, Slots } from '../../../services/engine-pool';

/** `series` integer-position series of `points` each, under item ids s0, s1, … */
function manySeries(series: number, points: number): Array<Record<string, string | number>> {
  const rows: Array<Record<string, string | number>> = [];
  for (let s = 0; s < series; s += 1) for (let t = 1; t <= points; t += 1) rows.push({ id: `s${s}`, t, y: ((t * 7 + s) % 5) + (t % 3) });
  return rows;
}

describe('engine pool: the free calls\' work never takes every thread', () => {
  const pool = new EnginePool(2, 2);
  afterAll(() => pool.close());

  it('answers a paid forecast while two free backtests run: they held both threads until one ended (a seventh probe: 20 s for a one-series forecast)', async () => {
    expect(pool.freeWork.limit).toBe(1);
    const finished: string[] = [];
    const request = { rows: manySeries(1500, 12), target: 'y', timestamp: 't', itemId: 'id', horizon: 2 };
    const backtests = [pool.backtest(request), pool.backtest(request)].map((p) => p.then((answer) => (finished.push('backtest'), answer)));
    await new Promise((resolve) => setTimeout(resolve, 300));
    const prepared = await pool.prepareForecast({ rows: manySeries(1, 40), target: 'y', timestamp: 't', itemId: 'id' });
    const forecast = await pool.forecastPrepared(prepared, { horizon: 3, quantiles: [0.1, 0.9] });
    finished.push('forecast');
    expect(forecast[0]!.mean).toHaveLength(3);
    const [first, second] = await Promise.all(backtests);
    // the forecast did not wait for a backtest to end
    expect(finished).toEqual(['forecast', 'backtest', 'backtest']);
    // and both backtests answer in full, the same
    expect(first).toHaveLength(1500);
    expect(second).toEqual(first);
  }, 120_000);

  it('runs at most `limit` holders at once, the others in arrival order, and passes a slot on when one fails', async () => {
    const slots = new Slots(2);
    let running = 0;
    let most = 0;
    const order: number[] = [];
    const job = (n: number, fail = false) =>
      slots.run(async () => {
        running += 1;
        most = Math.max(most, running);
        await new Promise((resolve) => setTimeout(resolve, 20));
        running -= 1;
        order.push(n);
        if (fail) throw new Error('failed');
        return n;
      });
    const results = await Promise.allSettled([job(1), job(2, true), job(3), job(4), job(5)]);
    expect(most).toBe(2);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled', 'fulfilled', 'fulfilled']);
    expect(order.slice(2)).toEqual([3, 4, 5]);
    // every slot is free again
    expect(await Promise.all([job(6), job(7)])).toEqual([6, 7]);
  });
});
