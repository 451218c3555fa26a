import { RECENT_KEY_MS } from '../../services/api-keys';
import { rateBudgetStatements } from '../../services/metrics';
import { churnRows, withoutTarget } from '../support/datasets';
import { expectError, startHarness, trainedChurnModel, type Harness } from '../support/harness';

/**
 * A small predict without an Idempotency-Key, of a key this process read within RECENT_KEY_MS, is
 * admitted without reading the key again: the statement that charges it checks the key (another
 * process may have revoked it), and any other answer reads the key first. Revocations here are made
 * in PostgreSQL directly, as another API process would make them, so this process's memory of the key
 * is never what refuses it.
 */
describe('predict: the key checked by the charge statement', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(() => h.stop());

  const rows = (n: number) => withoutTarget(churnRows(n, 11), 'churned');
  const credits = async (accountId: string): Promise<number> => {
    const { rows: found } = await h.callPool.query<{ n: number }>('select allowance_remaining + purchased_balance as n from accounts where id = $1', [accountId]);
    return Number(found[0]!.n);
  };
  const storedCalls = async (modelId: string): Promise<number> => {
    const { rows: found } = await h.callPool.query<{ n: string }>('select count(*) as n from prediction_calls where model_id = $1', [modelId]);
    return Number(found[0]!.n);
  };
  const keyStatements = async (): Promise<number> => (await rateBudgetStatements.get()).values.reduce((sum, v) => sum + v.value, 0);
  const keyIdOf = async (secretPrefix: string, workspaceId: string, kind: 'api' | 'admin'): Promise<string> => {
    const { rows: found } = await h.callPool.query<{ id: string }>(`select id from api_keys where workspace_id = $1 and kind = $2 and display_prefix = $3`, [
      workspaceId,
      kind,
      secretPrefix,
    ]);
    return found[0]!.id;
  };
  const displayPrefix = (secret: string, kind: 'api' | 'admin') => secret.slice(0, (kind === 'api' ? 'sk-svc-api-' : 'sk-svc-admin-').length + 4);

  /**
   * A trained model whose key and account this process has seen, with budget points in hand: the
   * training call and 7 predictions claim 1, 2, 4 and 8 points, so the next 7 calls spend points in hand.
   */
  async function warmedUp() {
    const model = await trainedChurnModel(h, 'build');
    for (let i = 0; i < 7; i += 1) {
      const res = await h.http.post(`/v1/models/${model.modelId}/predict`).set('X-API-Key', model.apiKey).send({ rows: rows(1) });
      expect(res.status).toBe(200);
    }
    const keyId = await keyIdOf(displayPrefix(model.apiKey, 'api'), model.workspace.id, 'api');
    return { ...model, keyId };
  }

  /** A call admitted on the recent read: no key statement counted for it (a confirmation is not one). */
  async function deferred<T>(call: () => PromiseLike<T>): Promise<T> {
    const before = await keyStatements();
    const answer = await call();
    expect((await keyStatements()) - before).toBe(0);
    return answer;
  }

  it('charges and answers 40 one-row predictions of a key read a moment before without any statement of its own for the key', async () => {
    const { apiKey, modelId, account } = await warmedUp();
    const before = await credits(account.id);
    const storedBefore = await storedCalls(modelId);
    const statementsBefore = await keyStatements();
    const started = Date.now();
    for (let i = 0; i < 40; i += 1) {
      const res = await h.http.post(`/v1/models/${modelId}/predict`).set('X-API-Key', apiKey).send({ rows: rows(1) });
      expect(res.status).toBe(200);
      expect(res.headers['ratelimit-remaining']).toMatch(/^\d+$/);
    }
    // A read every RECENT_KEY_MS at most, and a claim when a lease runs out (1, 2, 4, … points).
    const allowed = Math.ceil((Date.now() - started) / RECENT_KEY_MS) + 6;
    expect((await keyStatements()) - statementsBefore).toBeLessThanOrEqual(allowed);
    expect(await credits(account.id)).toBe(before - 40);
    expect(await storedCalls(modelId)).toBe(storedBefore + 40);
  });

  it('refuses the next predict of a key revoked by another process with 401 API_KEY_INVALID, charging, storing and logging nothing', async () => {
    const { apiKey, modelId, account, keyId } = await warmedUp();
    const before = await credits(account.id);
    const storedBefore = await storedCalls(modelId);
    await h.callPool.query(`update api_keys set revoked_at = now(), revoke_reason = 'deleted' where id = $1`, [keyId]);
    const res = await deferred(() => h.http.post(`/v1/models/${modelId}/predict`).set('X-API-Key', apiKey).send({ rows: rows(1) }));
    expectError(res, 401, 'API_KEY_INVALID');
    expect(res.body.messageDetail).toMatch(/revoked/);
    expect(await credits(account.id)).toBe(before);
    expect(await storedCalls(modelId)).toBe(storedBefore);
    await h.requestLog.flush();
    const { rows: logged } = await h.callPool.query<{ n: string }>(`select count(*) as n from request_log where key_id = $1 and status = 401`, [keyId]);
    expect(Number(logged[0]!.n)).toBe(0);
  });

  it('refuses a key whose rotation grace ended elsewhere at its next predict', async () => {
    const { apiKey, modelId, account, keyId } = await warmedUp();
    const before = await credits(account.id);
    await h.callPool.query(`update api_keys set ends_at = now() - interval '1 second', rotated_at = now() - interval '8 days' where id = $1`, [keyId]);
    expectError(await deferred(() => h.http.post(`/v1/models/${modelId}/predict`).set('X-API-Key', apiKey).send({ rows: rows(1) })), 401, 'API_KEY_INVALID');
    expect(await credits(account.id)).toBe(before);
  });

  it.each([
    ['wrong columns', async (m: Awaited<ReturnType<typeof warmedUp>>) => h.http.post(`/v1/models/${m.modelId}/predict`).set('X-API-Key', m.apiKey).send({ rows: [{ nope: 1 }] })],
    ['an unknown model', async (m: Awaited<ReturnType<typeof warmedUp>>) => h.http.post(`/v1/models/mdl_doesnotexist000000000000/predict`).set('X-API-Key', m.apiKey).send({ rows: rows(1) })],
    // More rows than are charged with their answer: credits are reserved by a statement of their own.
    ['a call of 20 rows', async (m: Awaited<ReturnType<typeof warmedUp>>) => h.http.post(`/v1/models/${m.modelId}/predict`).set('X-API-Key', m.apiKey).send({ rows: rows(20) })],
    [
      // Another process spent every credit: the call leaves the shared charge for a charge of its own.
      'an account that ran dry',
      async (m: Awaited<ReturnType<typeof warmedUp>>) => {
        await h.callPool.query(`update accounts set allowance_remaining = 0, purchased_balance = 0 where id = $1`, [m.account.id]);
        return h.http.post(`/v1/models/${m.modelId}/predict`).set('X-API-Key', m.apiKey).send({ rows: rows(1) });
      },
    ],
  ])("answers a key revoked elsewhere with its 401 rather than the route's refusal: %s", async (_case, call) => {
    const model = await warmedUp();
    const storedBefore = await storedCalls(model.modelId);
    await h.callPool.query(`update api_keys set revoked_at = now(), revoke_reason = 'deleted' where id = $1`, [model.keyId]);
    expectError(await deferred(() => call(model)), 401, 'API_KEY_INVALID');
    expect(await storedCalls(model.modelId)).toBe(storedBefore);
  });

  it('still answers the route itself to a usable key on the deferred path: 400 for wrong columns, 402 when the account ran dry', async () => {
    const { apiKey, modelId, account } = await warmedUp();
    expectError(await deferred(() => h.http.post(`/v1/models/${modelId}/predict`).set('X-API-Key', apiKey).send({ rows: [{ nope: 1 }] })), 400, 'COLUMN_MISMATCH');
    await h.callPool.query(`update accounts set allowance_remaining = 0, purchased_balance = 0 where id = $1`, [account.id]);
    expectError(await deferred(() => h.http.post(`/v1/models/${modelId}/predict`).set('X-API-Key', apiKey).send({ rows: rows(1) })), 402, 'CREDITS_EXHAUSTED');
  });

  it('answers an administration key revoked elsewhere with 401 rather than ADMIN_KEY_CANNOT_PREDICT', async () => {
    const { adminKey, modelId, workspace } = await warmedUp();
    const adminKeyId = await keyIdOf(displayPrefix(adminKey, 'admin'), workspace.id, 'admin');
    // Read by this process as usable (403 is its own answer then; the two calls claim 1 and 2 points
    // of its budget, one left in hand), then revoked elsewhere.
    for (let i = 0; i < 2; i += 1) {
      expectError(await h.http.post(`/v1/models/${modelId}/predict`).set('X-API-Key', adminKey).send({ rows: rows(1) }), 403, 'ADMIN_KEY_CANNOT_PREDICT');
    }
    await h.callPool.query(`update api_keys set revoked_at = now(), revoke_reason = 'deleted' where id = $1`, [adminKeyId]);
    expectError(await deferred(() => h.http.post(`/v1/models/${modelId}/predict`).set('X-API-Key', adminKey).send({ rows: rows(1) })), 401, 'API_KEY_INVALID');
  });
});
