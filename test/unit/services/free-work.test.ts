import { AppError } from '../../../services/errors';
import { FreeWorkQueue } from '../../../services/free-work';

/** Work that ends when the test says so, recording when it began. */
function gate(log: string[], name: string) {
  let open!: () => void;
  const done = new Promise<void>((resolve) => (open = resolve));
  return { work: async () => (log.push(name), await done, name), open };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

async function refusal(p: Promise<unknown>): Promise<AppError> {
  const err = await p.then(() => null, (e: unknown) => e);
  if (!(err instanceof AppError)) throw new Error(`expected an AppError, got ${String(err)}`);
  return err;
}

describe('free engine work: bounded per account and in total, served by turns', () => {
  it('refuses an account\'s call beyond its two running or waiting with 429 RATE_LIMITED and retry_after_seconds, and takes another account\'s', async () => {
    const queue = new FreeWorkQueue(1, { perOwner: 2, maxWaiting: 8 });
    const log: string[] = [];
    const [a1, a2, b1] = [gate(log, 'a1'), gate(log, 'a2'), gate(log, 'b1')];
    const running = [queue.run({ owner: 'a' }, a1.work), queue.run({ owner: 'a' }, a2.work)];
    const third = await refusal(queue.run({ owner: 'a' }, async () => 'never'));
    expect([third.status, third.code, third.extra.retry_after_seconds]).toEqual([429, 'RATE_LIMITED', 10]);
    const other = queue.run({ owner: 'b' }, b1.work);
    expect([queue.activeCount, queue.pendingCount]).toEqual([1, 2]);
    a1.open();
    a2.open();
    b1.open();
    await expect(Promise.all([...running, other])).resolves.toEqual(['a1', 'a2', 'b1']);
    // every slot given back: the account may call again
    await expect(queue.run({ owner: 'a' }, async () => 'again')).resolves.toBe('again');
    expect([queue.activeCount, queue.pendingCount]).toEqual([0, 0]);
  });

  it('refuses any call with 503 SERVICE_UNAVAILABLE once maxWaiting calls wait, and frees a slot when a call fails', async () => {
    const queue = new FreeWorkQueue(1, { perOwner: 2, maxWaiting: 2 });
    const log: string[] = [];
    const first = gate(log, 'first');
    const calls = [queue.run({ owner: 'a' }, first.work), queue.run({ owner: 'b' }, async () => 'b'), queue.run({ owner: 'c' }, async () => 'c')];
    const busy = await refusal(queue.run({ owner: 'd' }, async () => 'never'));
    expect([busy.status, busy.code]).toEqual([503, 'SERVICE_UNAVAILABLE']);
    first.open();
    await expect(Promise.all(calls)).resolves.toEqual(['first', 'b', 'c']);
    await expect(queue.run({ owner: 'd' }, () => Promise.reject(new Error('engine failed')))).rejects.toThrow('engine failed');
    await expect(queue.run({ owner: 'd' }, async () => 'd')).resolves.toBe('d');
  });

  it('gives a freed thread to accounts in turn: the other account\'s one call runs before the first account\'s second', async () => {
    const queue = new FreeWorkQueue(1, { perOwner: 2, maxWaiting: 8 });
    const log: string[] = [];
    const [a1, a2, a3, b1] = [gate(log, 'a1'), gate(log, 'a2'), gate(log, 'a3'), gate(log, 'b1')];
    const calls = [queue.run({ owner: 'a' }, a1.work), queue.run({ owner: 'a' }, a2.work)];
    await tick();
    calls.push(queue.run({ owner: 'b' }, b1.work));
    a1.open();
    await calls[0];
    await tick();
    // arrival order would start a2 here
    expect(log).toEqual(['a1', 'b1']);
    calls.push(queue.run({ owner: 'a' }, a3.work));
    b1.open();
    a2.open();
    a3.open();
    await Promise.all(calls);
    expect(log).toEqual(['a1', 'b1', 'a2', 'a3']);
  });

  it('drops a waiting call whose client hangs up: 499 at once, its work never begun, its slot and place given back', async () => {
    const queue = new FreeWorkQueue(1, { perOwner: 2, maxWaiting: 8 });
    const log: string[] = [];
    const first = gate(log, 'first');
    const hungUp = new AbortController();
    const running = queue.run({ owner: 'a' }, first.work);
    const waiting = queue.run({ owner: 'b', signal: hungUp.signal }, async () => (log.push('abandoned'), 'abandoned'));
    const after = queue.run({ owner: 'c' }, async () => (log.push('c'), 'c'));
    expect(queue.pendingCount).toBe(2);
    hungUp.abort();
    const dropped = await refusal(waiting);
    expect([dropped.status, dropped.code]).toEqual([499, 'CLIENT_CLOSED_REQUEST']);
    expect(queue.pendingCount).toBe(1);
    first.open();
    await expect(Promise.all([running, after])).resolves.toEqual(['first', 'c']);
    expect(log).toEqual(['first', 'c']);
    // b's two slots are free again
    await expect(Promise.all([queue.run({ owner: 'b' }, async () => 1), queue.run({ owner: 'b' }, async () => 2)])).resolves.toEqual([1, 2]);
  });
});
