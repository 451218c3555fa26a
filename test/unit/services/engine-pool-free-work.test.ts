import { EnginePool } from '../../../services/engine-pool';
import { manySeries } from '../../support/datasets';

describe('engine pool: the free calls\' work never takes every thread', () => {
  const pool = new EnginePool(2, 2);
  afterAll(() => pool.close());

  it('answers a paid forecast while two free backtests run: they held both threads until one ended (a seventh probe: 20 s for a one-series forecast)', async () => {
    const finished: string[] = [];
    const rows = manySeries(1500, 12);
    const request = { target: 'y', timestamp: 't', itemId: 'id', horizon: 2, horizonDefaulted: false };
    const backtests = [pool.backtest({ owner: 'acc_a' }, rows, request), pool.backtest({ owner: 'acc_b' }, rows, request)].map((p) => p.then((answer) => (finished.push('backtest'), answer)));
    await new Promise((resolve) => setTimeout(resolve, 300));
    // one backtest holds the only thread free work may take; the other waits for it
    expect([pool.freeWork.activeCount, pool.freeWork.pendingCount]).toEqual([1, 1]);
    const prepared = await pool.prepareForecast({ rows: manySeries(1, 40), target: 'y', timestamp: 't', itemId: 'id' });
    const forecast = await pool.forecastPrepared(prepared, { horizon: 3, quantiles: [0.1, 0.9] });
    finished.push('forecast');
    expect(forecast[0]!.mean).toHaveLength(3);
    const [first, second] = await Promise.all(backtests);
    // the forecast did not wait for a backtest to end
    expect(finished).toEqual(['forecast', 'backtest', 'backtest']);
    // and both backtests answer in full, the same
    expect(first.series).toHaveLength(1500);
    expect(second).toEqual(first);
  }, 120_000);
});
