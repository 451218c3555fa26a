import { EnginePool } from '../../../services/engine-pool';

describe('engine pool: warming every thread at start', () => {
  it('reaches each thread of the pool once, also threads not started yet, however short the warm-up', async () => {
    // minThreads 1, and that thread ready: the others start only when the warm-up's tasks find it busy;
    // with no series to forecast a task ends at once, so only the tasks' wait for each other spreads them.
    const pool = new EnginePool(3, 1);
    try {
      await pool.analyse([{ x: 1, y: 2 }], 'y').catch(() => undefined);
      const warmed = await pool.warmUp(0);
      expect(warmed).toHaveLength(3);
      expect(new Set(warmed).size).toBe(3);
    } finally {
      await pool.close();
    }
  });

  it('forecasts its series on every thread without an error', async () => {
    const pool = new EnginePool(2, 2);
    try {
      expect(new Set(await pool.warmUp(2)).size).toBe(2);
    } finally {
      await pool.close();
    }
  });
});
