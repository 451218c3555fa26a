import type { ChildProcess } from 'node:child_process';
import { AccountSchema, CreditLedgerSchema } from '../../db/entities';
import { freePort } from '../../scripts/lib/ports';
import { releaseLapsedReservations } from '../../services/credits';
import { churnRows, withoutTarget } from '../support/datasets';
import { startHarness, type Harness } from '../support/harness';
import { killProcessGroup, spawnServiceProcess } from '../support/processes';

const HOLD_SECONDS = 2;

/**
 * The API process killed (SIGKILL) while a paid call computes: the credits it reserved are not kept.
 * The call's reservation stays held until its deadline, then the sweep gives it back, once.
 */
describe('credits across an API process killed mid-call', () => {
  let h: Harness;
  let child: ChildProcess | null = null;
  let base = '';

  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(async () => {
    kill();
    await h.stop();
  });

  function kill(): void {
    killProcessGroup(child);
    child = null;
  }

  async function startApi(): Promise<void> {
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    child = spawnServiceProcess('api', h.taskQueue, {
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      ENGINE_THREADS: '1',
      CREDIT_HOLD_SECONDS: String(HOLD_SECONDS),
    });
    const deadline = Date.now() + 60_000;
    while (Date.now() < deadline) {
      const up = await fetch(`${base}/health`).then((r) => r.ok, () => false);
      if (up) return;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    throw new Error('the API process did not come up');
  }

  const credits = async (accountId: string) => {
    const a = await h.orm.em.fork().findOneOrFail(AccountSchema, { id: accountId });
    return a.allowanceRemaining + a.purchasedBalance;
  };
  const states = (accountId: string) =>
    h.orm.em.fork().getConnection().execute<Array<{ state: string }>>(`select state from credit_reservations where account_id = ?`, [accountId]);

  /** Sends the call to the child API and kills the process as soon as the call holds its credits. */
  async function killWhileHeld(accountId: string, send: () => Promise<unknown>): Promise<void> {
    const answer = send().catch(() => 'connection lost');
    const deadline = Date.now() + 30_000;
    while (Date.now() < deadline) {
      if ((await states(accountId)).some((r) => r.state === 'held')) break;
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
    kill();
    expect(await answer).toBe('connection lost');
  }

  async function expectGivenBackOnce(accountId: string, before: number, cost: number): Promise<void> {
    expect(await credits(accountId)).toBe(before - cost);
    expect(await states(accountId)).toEqual([{ state: 'held' }]);
    await new Promise((resolve) => setTimeout(resolve, HOLD_SECONDS * 1000 + 500));
    // The sweep, twice (as two overlapping Schedule runs would): the credits come back once.
    await releaseLapsedReservations(h.orm.em.fork(), new Date());
    await releaseLapsedReservations(h.orm.em.fork(), new Date());
    expect(await credits(accountId)).toBe(before);
    expect(await states(accountId)).toEqual([{ state: 'released' }]);
    const moves = await h.orm.em.fork().find(CreditLedgerSchema, { accountId, kind: { $in: ['charge', 'refund'] } }, { orderBy: { createdAt: 'asc' } });
    expect(moves.map((m) => [m.kind, m.allowanceDelta + m.balanceDelta])).toEqual([
      ['charge', -cost],
      ['refund', cost],
    ]);
  }

  it('a 10,000-row predict killed mid-call keeps no credit after the sweep', async () => {
    const account = await h.provision('growth');
    const trained = await h.http.post('/v1/models').set('X-API-Key', account.apiKey).send({ target: 'churned', engine: 'tabular-gbdt', data: churnRows(200) });
    expect(trained.status).toBe(201);
    await startApi();
    const before = await credits(account.account.id);
    const rows = withoutTarget(churnRows(10_000, 3), 'churned');
    await killWhileHeld(account.account.id, () =>
      fetch(`${base}/v1/models/${trained.body.id as string}/predict`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': account.apiKey },
        body: JSON.stringify({ rows }),
      }).then((r) => r.status),
    );
    await expectGivenBackOnce(account.account.id, before, 10_000);
  });

  it('one-row predicts charged with their answers, the API killed among them: every charge has its stored row and every stored row its charge', async () => {
    const account = await h.provision('growth');
    const trained = await h.http.post('/v1/models').set('X-API-Key', account.apiKey).send({ target: 'churned', engine: 'tabular-gbdt', data: churnRows(200) });
    expect(trained.status).toBe(201);
    const modelId = trained.body.id as string;
    await startApi();
    const before = await credits(account.account.id);
    const body = JSON.stringify({ rows: withoutTarget(churnRows(1, 11), 'churned') });
    let answered = 0;
    let running = true;
    const loop = async () => {
      while (running) {
        const status = await fetch(`${base}/v1/models/${modelId}/predict`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': account.apiKey }, body }).then(
          (r) => r.status,
          () => 0,
        );
        if (status === 200) answered += 1;
        else running = false;
      }
    };
    const loops = Array.from({ length: 4 }, () => loop());
    // Let the calls run until this process has charged the account with answers a while, then kill it.
    const deadline = Date.now() + 30_000;
    while (Date.now() < deadline && answered < 300) await new Promise((resolve) => setTimeout(resolve, 20));
    kill();
    running = false;
    await Promise.all(loops);

    const conn = h.orm.em.fork().getConnection();
    const [tally] = await conn.execute<Array<{ charges: number; charged: number; with_rows: number; rows: number; orphan_rows: number; together: number; held: number }>>(
      `select
         (select count(*)::int from credit_ledger where account_id = ? and kind = 'charge') as charges,
         (select coalesce(-sum(allowance_delta + balance_delta), 0)::int from credit_ledger where account_id = ? and kind = 'charge') as charged,
         (select count(*)::int from credit_ledger l where l.account_id = ? and l.kind = 'charge'
            and exists (select 1 from predictions p where p.http_request_id = l.reference)) as with_rows,
         (select count(*)::int from predictions where model_id = ?) as rows,
         (select count(*)::int from predictions p where p.model_id = ?
            and not exists (select 1 from credit_ledger l where l.reference = p.http_request_id and l.kind = 'charge')) as orphan_rows,
         (select count(*)::int from credit_reservations where account_id = ? and closed_at = created_at) as together,
         (select count(*)::int from credit_reservations where account_id = ? and state = 'held') as held`,
      [account.account.id, account.account.id, account.account.id, modelId, modelId, account.account.id, account.account.id],
    );
    // The calls did take the one-statement path, and the kill did cut calls short.
    expect(tally!.together).toBeGreaterThan(100);
    expect(answered).toBeGreaterThanOrEqual(300);
    // No charge without its row, no row without its charge; at most the calls in flight were charged unanswered.
    expect(tally!.with_rows).toBe(tally!.charges);
    expect(tally!.orphan_rows).toBe(0);
    expect(tally!.rows).toBe(tally!.charges);
    expect(tally!.charges - answered).toBeGreaterThanOrEqual(0);
    expect(tally!.charges - answered).toBeLessThanOrEqual(4);
    // Any call that was still reserving when it died is given back by the sweep; the account agrees with the ledger.
    await new Promise((resolve) => setTimeout(resolve, HOLD_SECONDS * 1000 + 500));
    await releaseLapsedReservations(h.orm.em.fork(), new Date());
    const [refunded] = await conn.execute<Array<{ n: number }>>(
      `select coalesce(sum(allowance_delta + balance_delta), 0)::int as n from credit_ledger where account_id = ? and kind = 'refund'`,
      [account.account.id],
    );
    expect(await credits(account.account.id)).toBe(before - tally!.charged + refunded!.n);
    expect(await states(account.account.id)).not.toContainEqual({ state: 'held' });
  });

  it('a forecast of many series killed mid-call keeps no credit after the sweep', async () => {
    const account = await h.provision('growth');
    await startApi();
    const before = await credits(account.account.id);
    const data = Array.from({ length: 60 }, (_, s) =>
      Array.from({ length: 120 }, (_, i) => ({ id: `s${s}`, t: new Date(Date.UTC(2010, i, 1)).toISOString().slice(0, 10), y: 100 + s + 10 * Math.sin((i * Math.PI) / 6) + (i % 5) })),
    ).flat();
    await killWhileHeld(account.account.id, () =>
      fetch(`${base}/v1/forecast`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': account.apiKey },
        body: JSON.stringify({ target: 'y', item_id: 'id', timestamp: 't', data, horizon: 12 }),
      }).then((r) => r.status),
    );
    await expectGivenBackOnce(account.account.id, before, 60 * 12);
  });
});
