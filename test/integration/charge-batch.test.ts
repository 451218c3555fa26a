import { AccountSchema, CreditLedgerSchema, PredictionSchema } from '../../db/entities';
import { chargeBatchCalls } from '../../services/metrics';
import { churnRows, withoutTarget } from '../support/datasets';
import { startHarness, trainedChurnModel, type Harness } from '../support/harness';

/**
 * Small predictions answered before they are charged share charge statements when they arrive
 * together (services/charge-batch.ts). Whatever the batches, each call is charged as if alone: its
 * own ledger row and settled reservation, its stored row, the allowance drawn before the purchased
 * balance, and never more than the account holds.
 */
describe('small predictions charged together', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(() => h.stop());

  const oneRow = () => ({ rows: withoutTarget(churnRows(1, 11), 'churned') });

  /** Calls and statements of the shared charge so far (the histogram's sum and count). */
  async function chargeStatements(): Promise<{ calls: number; statements: number }> {
    const metric = await chargeBatchCalls.get();
    // A histogram's values carry the name of their series (_bucket, _sum, _count).
    const values = metric.values as Array<{ metricName?: string; value: number }>;
    const value = (suffix: string) => values.find((v) => v.metricName === `credit_charge_batch_calls_${suffix}`)?.value ?? 0;
    return { calls: value('sum'), statements: value('count') };
  }

  /** A trained model whose account this process has already charged once (so small calls take the shared path). */
  async function warmedModel() {
    const model = await trainedChurnModel(h, 'build');
    const warm = await h.http.post(`/v1/models/${model.modelId}/predict`).set('X-API-Key', model.apiKey).send(oneRow());
    expect(warm.status).toBe(200);
    return model;
  }

  async function setCredits(accountId: string, allowance: number, balance: number) {
    await h.orm.em.fork().nativeUpdate(AccountSchema, { id: accountId }, { allowanceRemaining: allowance, purchasedBalance: balance });
  }

  const predictAtOnce = (model: { modelId: string; apiKey: string }, n: number) =>
    Promise.all(Array.from({ length: n }, () => h.http.post(`/v1/models/${model.modelId}/predict`).set('X-API-Key', model.apiKey).send(oneRow())));

  it('charges 24 concurrent one-row calls in fewer statements than calls, each with its own ledger row, settled reservation and stored row', async () => {
    const model = await warmedModel();
    await setCredits(model.account.id, 1_000, 0);
    const before = await chargeStatements();
    const answers = await predictAtOnce(model, 24);
    expect(answers.map((a) => a.status)).toEqual(Array(24).fill(200));
    const after = await chargeStatements();
    expect(after.calls - before.calls).toBe(24);
    expect(after.statements - before.statements).toBeLessThan(24);

    const em = h.orm.em.fork();
    const references = answers.map((a) => a.headers['x-request-id'] as string);
    const ledger = await em.find(CreditLedgerSchema, { accountId: model.account.id, kind: 'charge', reference: { $in: references } });
    expect(ledger).toHaveLength(24);
    // One credit each, and the after-values step down by one from 1,000 with none repeated: each row
    // says what the account held right after its own call.
    expect(ledger.every((l) => l.allowanceDelta === -1 && l.balanceDelta === 0)).toBe(true);
    expect(ledger.map((l) => l.allowanceAfter).sort((a, b) => b - a)).toEqual(Array.from({ length: 24 }, (_, i) => 999 - i));
    const reservations = (await em.getKnex()('credit_reservations').whereIn('id', ledger.map((l) => l.id)).select('state', 'from_allowance')) as Array<{ state: string; from_allowance: number }>;
    expect(reservations.map((r) => [r.state, r.from_allowance])).toEqual(Array(24).fill(['settled', 1]));
    const ids = answers.map((a) => a.body.predictions[0].request_id as string);
    expect(await em.count(PredictionSchema, { id: { $in: ids } })).toBe(24);
    expect((await em.findOneOrFail(AccountSchema, { id: model.account.id })).allowanceRemaining).toBe(976);
    // The answers' remaining credits are those of their own ledger rows.
    const remainingByReference = new Map(ledger.map((l) => [l.reference, l.allowanceAfter + l.balanceAfter]));
    for (const a of answers) expect(a.body.credits_remaining).toBe(remainingByReference.get(a.headers['x-request-id'] as string));
  });

  it('answers a one-row call on the shared charge path without forking an ORM entity manager (its statements run on the call pool)', async () => {
    const model = await warmedModel();
    // the model's version is cached by the warming call; the account can pay, so the call takes the shared path
    // Forks by the paid path only: the request log's batched writer forks on its own timer meanwhile.
    const original = h.orm.em.fork.bind(h.orm.em);
    const pathForks: string[] = [];
    const fork = jest.spyOn(h.orm.em, 'fork').mockImplementation((...args) => {
      const stack = new Error().stack ?? '';
      if (/services\/(predictions|credits|credit-alerts)|middleware\/idempotency|routes\/models/.test(stack)) pathForks.push(stack);
      return original(...args);
    });
    try {
      const answer = await h.http.post(`/v1/models/${model.modelId}/predict`).set('X-API-Key', model.apiKey).send(oneRow());
      expect(answer.status).toBe(200);
      expect(answer.body.credits_charged).toBe(1);
      expect(pathForks).toEqual([]);
    } finally {
      fork.mockRestore();
    }
  });

  it('draws the allowance first and then the purchased balance across calls charged together', async () => {
    const model = await warmedModel();
    await setCredits(model.account.id, 3, 10);
    const answers = await predictAtOnce(model, 6);
    expect(answers.map((a) => a.status)).toEqual(Array(6).fill(200));
    const references = answers.map((a) => a.headers['x-request-id'] as string);
    const ledger = await h.orm.em.fork().find(CreditLedgerSchema, { accountId: model.account.id, kind: 'charge', reference: { $in: references } });
    const deltas = ledger.map((l) => [l.allowanceDelta, l.balanceDelta]);
    expect(deltas.filter(([a, b]) => a === -1 && b === 0)).toHaveLength(3);
    expect(deltas.filter(([a, b]) => a === 0 && b === -1)).toHaveLength(3);
    const account = await h.orm.em.fork().findOneOrFail(AccountSchema, { id: model.account.id });
    expect([account.allowanceRemaining, account.purchasedBalance]).toEqual([0, 7]);
  });

  it('when the calls arriving together ask for more than the account holds, charges as many as it can pay and answers 402 to the rest, storing rows only for the charged', async () => {
    const model = await warmedModel();
    await setCredits(model.account.id, 2, 3);
    const answers = await predictAtOnce(model, 12);
    const statuses = answers.map((a) => a.status).sort();
    expect(statuses).toEqual([...Array(5).fill(200), ...Array(7).fill(402)]);
    for (const refused of answers.filter((a) => a.status === 402)) expect(refused.body.message).toBe('CREDITS_EXHAUSTED');

    const em = h.orm.em.fork();
    const references = answers.map((a) => a.headers['x-request-id'] as string);
    const ledger = await em.find(CreditLedgerSchema, { accountId: model.account.id, reference: { $in: references } });
    expect(ledger.map((l) => l.kind)).toEqual(Array(5).fill('charge'));
    const charged = new Set(ledger.map((l) => l.reference));
    expect(answers.filter((a) => a.status === 200).every((a) => charged.has(a.headers['x-request-id'] as string))).toBe(true);
    expect(await em.count(PredictionSchema, { httpRequestId: { $in: references } })).toBe(5);
    const account = await em.findOneOrFail(AccountSchema, { id: model.account.id });
    expect([account.allowanceRemaining, account.purchasedBalance]).toEqual([0, 0]);
  });
});
