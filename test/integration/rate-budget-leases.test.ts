import { authenticateKey } from '../../services/api-keys';
import { BudgetLeases } from '../../services/budget-leases';
import { AppError } from '../../services/errors';
import { rateBudgetStatements } from '../../services/metrics';
import { startHarness, type Harness } from '../support/harness';

/**
 * An API key's calls are counted on budget leases (services/budget-leases.ts): each process claims
 * points of the shared counters in PostgreSQL ahead of its calls and spends them in memory, while the
 * key itself is read on every call. Two BudgetLeases here are two API processes on one database.
 */
describe('budget leases over PostgreSQL', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(() => h.stop());

  async function points(key: string): Promise<number | null> {
    const { rows } = (await h.callPool.query('select points from rate_limits where key = $1', [key])) as { rows: Array<{ points: number }> };
    return rows[0]?.points ?? null;
  }

  async function statements(): Promise<{ read: number; claim: number }> {
    const values = (await rateBudgetStatements.get()).values;
    const of = (statement: string) => values.find((v) => v.labels.statement === statement)?.value ?? 0;
    return { read: of('read'), claim: of('claim') };
  }

  it("never admits more than the key's budget of a window across two processes, and the shared counter holds every admitted call", async () => {
    const { apiKey } = await h.provision('free'); // 100 calls per key per 10-second window
    const processes = [new BudgetLeases(), new BudgetLeases()];
    const now = new Date();
    let admitted = 0;
    let keyId = '';
    for (let i = 0; i < 150; i += 1) {
      const call = await authenticateKey(h.callPool, apiKey, now, processes[i % 3 === 0 ? 0 : 1]);
      keyId = call.keyId;
      if (call.overBudget === null) admitted += 1;
      else expect(call.overBudget).toBe('key');
    }
    expect(admitted).toBeLessThanOrEqual(100);
    // At most what each process claimed and had not spent is lost: five points (a twentieth) each.
    expect(admitted).toBeGreaterThanOrEqual(100 - 2 * BudgetLeases.maxClaim(100));
    expect(await points(`key:free:${keyId}`)).toBeGreaterThanOrEqual(admitted);
  });

  it('reads the key without writing on most calls of a busy key: 300 calls claim points in at most 10 statements', async () => {
    const { apiKey } = await h.provision('growth'); // 10,000 calls per key and 20,000 per workspace per window
    const leases = new BudgetLeases();
    const now = new Date();
    const before = await statements();
    const remaining: number[] = [];
    for (let i = 0; i < 300; i += 1) {
      const call = await authenticateKey(h.callPool, apiKey, now, leases);
      expect(call.overBudget).toBeNull();
      remaining.push(call.budget.remaining);
    }
    const after = await statements();
    expect(after.claim - before.claim).toBeLessThanOrEqual(10);
    expect(after.read - before.read).toBeGreaterThanOrEqual(290);
    // One process alone sees its budget go down by exactly one per call.
    expect(remaining).toEqual(Array.from({ length: 300 }, (_, i) => 10_000 - 1 - i));
  });

  it('refuses a revoked key at its next call although its process still holds points of its budget, and counts nothing for it', async () => {
    const { apiKey, adminKey, workspace } = await h.provision('growth');
    const leases = new BudgetLeases();
    const now = new Date();
    let keyId = '';
    for (let i = 0; i < 20; i += 1) keyId = (await authenticateKey(h.callPool, apiKey, now, leases)).keyId;
    const held = { key: await points(`key:growth:${keyId}`), workspace: await points(`workspace:growth:${workspace.id}`) };
    expect(held.key).toBeGreaterThan(20); // points claimed ahead, still in hand
    expect((await h.http.delete(`/v1/api-keys/${keyId}`).set('X-API-Key', adminKey)).status).toBe(204);
    const afterRevocation = { key: await points(`key:growth:${keyId}`), workspace: await points(`workspace:growth:${workspace.id}`) };
    const refused = await authenticateKey(h.callPool, apiKey, new Date(), leases).then(
      () => null,
      (err: unknown) => err,
    );
    expect(refused).toBeInstanceOf(AppError);
    expect((refused as AppError).code).toBe('API_KEY_INVALID');
    expect({ key: await points(`key:growth:${keyId}`), workspace: await points(`workspace:growth:${workspace.id}`) }).toEqual(afterRevocation);
  });

  it("counts a key's calls on its new plan's counters from the first call after the plan changed", async () => {
    const { apiKey, account } = await h.provision('free');
    const leases = new BudgetLeases();
    const now = new Date();
    let keyId = '';
    for (let i = 0; i < 10; i += 1) keyId = (await authenticateKey(h.callPool, apiKey, now, leases)).keyId;
    await h.callPool.query(`update accounts set plan = 'build' where id = $1`, [account.id]);
    const call = await authenticateKey(h.callPool, apiKey, now, leases);
    expect(call.plan).toBe('build');
    expect(call.overBudget).toBeNull();
    expect(call.budget.limit).toBe(500); // build: 50 calls per second per key over 10 seconds
    expect(await points(`key:build:${keyId}`)).toBe(1);
    expect(call.budget.remaining).toBe(499);
  });
});
