import { AccessTokens } from '../../services/auth/access-tokens';
import { workflowIds } from '../../services/temporal/ids';
import { requestAccountDeletion } from '../../services/account-deletion';
import { createKey } from '../../services/api-keys';
import { newId } from '../../services/ids';
import type { SweepResult } from '../../workflows/sweep-ended-keys';
import { churnRows, withoutTarget } from '../support/datasets';
import { expectError, signInByMail, startHarness, type Harness, type WebSession } from '../support/harness';
import { startInProcessWorker } from '../support/processes';
import { eventually, ledgerOf, payBuildSubscriptionAs, startBillingHarness } from '../support/billing';
import { pruneClosedAllowances } from '../../services/closed-allowances';
import { addressHash } from '../../services/address-hash';
import { VALIDATIONS_PER_DAY } from '../../config/plans';
import { createStripeClient } from '../../services/stripe';
import { Billing } from '../../services/billing';
import { TemporalGateway } from '../../services/temporal/gateway';
import pino from 'pino';
import type { StripeStandIn } from '../../scripts/lib/stripe-standin';

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ config: { WEBHOOKS_ALLOW_LOOPBACK_HTTP: true } });
});
afterAll(async () => {
  await h.stop();
});

const as = (session: WebSession, workspaceId?: string) => {
  const headers: Record<string, string> = { Authorization: session.bearer };
  if (workspaceId) headers['X-Workspace-Id'] = workspaceId;
  return headers;
};

describe('profile', () => {
  test('GET /v1/auth/me shows the profile, plan, credits and workspaces; PATCH changes the full name', async () => {
    const session = await signInByMail(h);
    const me = await h.http.get('/v1/auth/me').set(as(session));
    expect(me.status).toBe(200);
    expect(me.body).toEqual(
      expect.objectContaining({ id: session.accountId, email: session.email, full_name: null, plan: 'free', is_staff: false, credits: expect.objectContaining({ remaining: 1000 }) }),
    );
    expect(me.body.workspaces).toHaveLength(1);
    const patched = await h.http.patch('/v1/auth/me').set(as(session)).send({ full_name: 'Ada Lovelace' });
    expect({ status: patched.status, name: patched.body.full_name }).toEqual({ status: 200, name: 'Ada Lovelace' });
    expectError(await h.http.patch('/v1/auth/me').set(as(session)).send({ full_name: '' }), 400, 'VALIDATION_ERROR');
  });

  test('shows the credits of the current month, opened first when the month changed, as GET /v1/billing/subscription does (a nineteenth probe: 0 left from last month while 1,000 were there)', async () => {
    const session = await signInByMail(h);
    const resets = async (): Promise<number> =>
      (await h.orm.em.fork().getConnection().execute(`select count(*)::int as n from credit_ledger where account_id = ? and kind = 'allowance_reset'`, [session.accountId]))[0].n;
    // last month spent, and the new month not opened yet (before the Schedule's run or any charge)
    await h.orm.em.fork().getConnection().execute(`update accounts set allowance_period = '2020-01', allowance_remaining = 0 where id = ?`, [session.accountId]);
    const before = await resets();
    const me = await h.http.get('/v1/auth/me').set(as(session));
    expect(me.body.credits).toEqual({ monthly_allowance: 1000, allowance_remaining: 1000, purchased_balance: 0, remaining: 1000 });
    const subscription = await h.http.get('/v1/billing/subscription').set(as(session));
    if (subscription.status === 200) expect(subscription.body.credits_remaining).toBe(me.body.credits.remaining);
    expect((await h.http.get('/v1/auth/me').set(as(session))).body.credits.remaining).toBe(1000);
    // opened once, with its ledger row, whichever route read it first
    expect((await resets()) - before).toBe(1);
  });

  /** The writes that take a display name (profile, workspace created and renamed, API key, model), each sent `name`. */
  const nameEverywhere = async (session: WebSession, workspaceId: string, apiKey: string, name: string) => [
    await h.http.patch('/v1/auth/me').set(as(session)).send({ full_name: name }),
    await h.http.post('/v1/workspaces').set(as(session)).send({ name }),
    await h.http.patch(`/v1/workspaces/${workspaceId}`).set(as(session)).send({ name }),
    await h.http.post('/v1/api-keys').set(as(session)).send({ name }),
    await h.http.post('/v1/models').set('X-API-Key', apiKey).send({ name, target: 'churned', engine: 'tabular-gbdt', data: churnRows(40) }),
  ];

  test('refuses the Unicode line and paragraph separators (U+2028, U+2029) in names as it refuses a line feed: they break the line where a name is shown (a nineteenth probe named a model "x\\u2028y")', async () => {
    const session = await signInByMail(h);
    const workspaceId = (await h.http.get('/v1/auth/me').set(as(session))).body.workspaces[0].id as string;
    const { apiKey } = await h.provision('build');
    for (const name of ['prod\u2028admin', 'first\u2029second']) {
      for (const refused of await nameEverywhere(session, workspaceId, apiKey, name)) {
        expectError(refused, 400, 'VALIDATION_ERROR');
        expect(refused.body.errors[0]).toEqual({ path: expect.stringMatching(/^body\.(full_name|name)$/), message: 'a name may not hold a control character (a line break, a tab…)' });
      }
    }
    // a model named after a target that holds one is named without it
    const data = churnRows(40).map(({ churned, ...row }) => ({ ...row, ['churned\u2028now']: churned }));
    const model = await h.http.post('/v1/models').set('X-API-Key', apiKey).send({ target: 'churned\u2028now', engine: 'tabular-gbdt', data });
    expect([model.status, model.body.name]).toEqual([201, 'Model of churnednow']);
  });

  test('refuses names that show nothing or display reversed (a zero-width space alone, U+202E, a control character) on the account, workspaces, API keys and models, and changes nothing (an eighth probe)', async () => {
    const session = await signInByMail(h);
    const workspaceId = (await h.http.get('/v1/auth/me').set(as(session))).body.workspaces[0].id as string;
    const { apiKey } = await h.provision('build');
    const invisible = ['\u200b', '\u200b\u2060\u3164', '\u202egpj.exe', 'a\u2067b', 'line\nbreak', 'bell\u0007'];
    for (const name of invisible) {
      for (const refused of await nameEverywhere(session, workspaceId, apiKey, name)) {
        expectError(refused, 400, 'VALIDATION_ERROR');
        expect(refused.body.errors[0].path).toMatch(/^body\.(full_name|name)$/);
      }
    }
    const me = await h.http.get('/v1/auth/me').set(as(session));
    expect(me.body.full_name).toBeNull();
    expect(me.body.workspaces.map((w: { name: string }) => w.name)).toEqual(['Default workspace']);
    expect((await h.http.get('/v1/api-keys').set(as(session))).body.pagination.total).toBe(0);
    // names in any script, with a right-to-left mark or an emoji sequence, stay welcome
    for (const name of ['  Zoë  ', 'محمد\u200f', 'Équipe 👩\u200d💻']) {
      const named = await h.http.patch('/v1/auth/me').set(as(session)).send({ full_name: name });
      expect({ status: named.status, name: named.body.full_name }).toEqual({ status: 200, name: name.trim() });
    }
  });
});

describe('workspaces', () => {
  test('create, list, get and rename; another account\'s workspace is a 404', async () => {
    const session = await signInByMail(h);
    const other = await signInByMail(h);
    const created = await h.http.post('/v1/workspaces').set(as(session)).send({ name: 'Forecasts' });
    expect(created.status).toBe(201);
    expect(created.body).toEqual(expect.objectContaining({ id: expect.stringMatching(/^ws_/), name: 'Forecasts' }));
    const list = await h.http.get('/v1/workspaces').set(as(session));
    expect(list.body.data.map((w: { name: string }) => w.name)).toEqual(['Default workspace', 'Forecasts']);
    expect((await h.http.get(`/v1/workspaces/${created.body.id}`).set(as(session))).body.name).toBe('Forecasts');
    const renamed = await h.http.patch(`/v1/workspaces/${created.body.id}`).set(as(session)).send({ name: 'Demand' });
    expect({ status: renamed.status, name: renamed.body.name }).toEqual({ status: 200, name: 'Demand' });
    expectError(await h.http.get(`/v1/workspaces/${created.body.id}`).set(as(other)), 404, 'NOT_FOUND');
    expectError(await h.http.patch(`/v1/workspaces/${created.body.id}`).set(as(other)).send({ name: 'Mine now' }), 404, 'NOT_FOUND');
  });

  test('X-Workspace-Id chooses the workspace a session acts on; without it the oldest; another account\'s is a 404', async () => {
    const session = await signInByMail(h);
    const other = await signInByMail(h);
    const second = (await h.http.post('/v1/workspaces').set(as(session)).send({ name: 'Second' })).body.id as string;
    const key = await h.http.post('/v1/api-keys').set(as(session, second)).send({ name: 'in second' });
    expect({ status: key.status, workspace: key.body.workspace_id }).toEqual({ status: 201, workspace: second });
    const inDefault = await h.http.get('/v1/api-keys').set(as(session));
    expect(inDefault.body.data.map((k: { id: string }) => k.id)).not.toContain(key.body.id);
    const inSecond = await h.http.get('/v1/api-keys').set(as(session, second));
    expect(inSecond.body.data.map((k: { id: string }) => k.id)).toEqual([key.body.id]);
    expectError(await h.http.get('/v1/api-keys').set(as(other, second)), 404, 'NOT_FOUND');
    expectError(await h.http.get('/v1/models').set(as(session, 'ws_doesnotexist')), 404, 'NOT_FOUND');
  });

  test('an X-Workspace-Id sent empty or blank is a 404 that changes nothing, not the oldest workspace (a ninth probe: a key was created in the oldest workspace)', async () => {
    const session = await signInByMail(h);
    await h.http.post('/v1/workspaces').set(as(session)).send({ name: 'Second' });
    for (const blank of ['', '   ']) {
      expectError(await h.http.post('/v1/api-keys').set({ Authorization: session.bearer, 'X-Workspace-Id': blank }).send({ name: 'where?' }), 404, 'NOT_FOUND');
    }
    expect((await h.http.get('/v1/api-keys').set(as(session))).body.data).toEqual([]);
  });

  test('GET /v1/usage?workspace_id= reads any workspace of a web session\'s account; a key reads only its own, and another account\'s is a 404', async () => {
    const session = await signInByMail(h);
    const other = await signInByMail(h);
    const first = (await h.http.get('/v1/auth/me').set(as(session))).body.workspaces[0].id as string;
    const second = (await h.http.post('/v1/workspaces').set(as(session)).send({ name: 'Second' })).body.id as string;
    const key = (await h.http.post('/v1/api-keys').set(as(session, second)).send({ name: 'in second' })).body.secret as string;
    expect((await h.http.get('/v1/models').set('X-API-Key', key)).status).toBe(200);

    const read = await h.http.get(`/v1/usage?workspace_id=${second}`).set(as(session));
    expect(read.status).toBe(200);
    expect(read.body.workspace_id).toBe(second);
    // the second workspace's calls: the key's creation (the session acting there) and the key's listing
    expect(read.body.by_day.map((d: { operation: string; calls: number }) => [d.operation, d.calls])).toEqual([
      ['models.list', 1],
      ['post /v1/api-keys', 1],
    ]);
    const own = await h.http.get('/v1/usage').set(as(session));
    expect(own.body.workspace_id).toBe(first);
    expect(own.body.by_day.map((d: { operation: string }) => d.operation)).not.toContain('models.list');

    expectError(await h.http.get(`/v1/usage?workspace_id=${first}`).set('X-API-Key', key), 404, 'NOT_FOUND');
    expectError(await h.http.get(`/v1/usage?workspace_id=${second}`).set(as(other)), 404, 'NOT_FOUND');
    expectError(await h.http.get('/v1/usage?workspace_id=ws_doesnotexist').set(as(session)), 404, 'NOT_FOUND');
  });

  test('a web session creates admin keys; an admin key still cannot (403), and a usage key made by the session predicts', async () => {
    const session = await signInByMail(h);
    const admin = await h.http.post('/v1/api-keys').set(as(session)).send({ name: 'ops', kind: 'admin' });
    expect({ status: admin.status, kind: admin.body.kind, prefix: admin.body.secret.slice(0, 13) }).toEqual({ status: 201, kind: 'admin', prefix: 'sk-svc-admin-' });
    const refused = await h.http.post('/v1/api-keys').set('X-API-Key', admin.body.secret).send({ name: 'nested', kind: 'admin' });
    expect(refused.status).toBe(403);
    const usage = await h.http.post('/v1/api-keys').set('X-API-Key', admin.body.secret).send({ name: 'app' });
    expect(usage.status).toBe(201);
    const forecast = await h.http
      .post('/v1/forecast')
      .set('X-API-Key', usage.body.secret)
      .send({ target: 'y', horizon: 2, data: Array.from({ length: 20 }, (_, i) => ({ t: `2026-01-${String(i + 1).padStart(2, '0')}`, y: i % 5 })) });
    expect(forecast.status).toBe(200);
  });
});

describe('account deletion', () => {
  async function countRows(accountId: string, workspaceIds: string[], modelIds: string[]) {
    const em = h.orm.em.fork();
    const count = async (sql: string, params: unknown[]) => Number((await em.execute<Array<{ n: string }>>(sql, params))[0]!.n);
    const ws = workspaceIds.length ? workspaceIds : ['-'];
    const mdl = modelIds.length ? modelIds : ['-'];
    return {
      accounts: await count(`select count(*) as n from accounts where id = ?`, [accountId]),
      workspaces: await count(`select count(*) as n from workspaces where account_id = ?`, [accountId]),
      api_keys: await count(`select count(*) as n from api_keys where workspace_id in (?)`, [ws]),
      models: await count(`select count(*) as n from models where account_id = ?`, [accountId]),
      model_versions: await count(`select count(*) as n from model_versions where model_id in (?)`, [mdl]),
      context: await count(`select count(*) as n from model_context_chunks where model_id in (?)`, [mdl]),
      predictions: await count(`select count(*) as n from predictions where workspace_id in (?)`, [ws]),
      outcomes: await count(`select count(*) as n from outcomes where workspace_id in (?)`, [ws]),
      request_log: await count(`select count(*) as n from request_log where account_id = ?`, [accountId]),
      ledger: await count(`select count(*) as n from credit_ledger where account_id = ?`, [accountId]),
      sessions: await count(`select count(*) as n from sessions where account_id = ?`, [accountId]),
      refresh_tokens: await count(`select count(*) as n from refresh_tokens where account_id = ?`, [accountId]),
      webhooks: await count(`select count(*) as n from webhook_endpoints where workspace_id in (?)`, [ws]),
      webhook_events: await count(`select count(*) as n from webhook_events where workspace_id in (?)`, [ws]),
    };
  }

  /** An account with two workspaces, a key, a trained model, predictions and an outcome. */
  async function populatedAccount() {
    const session = await signInByMail(h);
    const second = (await h.http.post('/v1/workspaces').set(as(session)).send({ name: 'Second' })).body.id as string;
    const key = (await h.http.post('/v1/api-keys').set(as(session, second)).send({ name: 'app' })).body.secret as string;
    const model = await h.http.post('/v1/models').set('X-API-Key', key).send({ target: 'churned', engine: 'tabular-gbdt', data: churnRows(120) });
    expect(model.status).toBe(201);
    const scored = await h.http.post(`/v1/models/${model.body.id}/predict`).set('X-API-Key', key).send({ rows: withoutTarget(churnRows(3, 7), 'churned') });
    expect(scored.status).toBe(200);
    const outcome = await h.http
      .post(`/v1/models/${model.body.id}/outcomes`)
      .set('X-API-Key', key)
      .send({ outcomes: [{ request_id: scored.body.predictions[0].request_id, actual: 'yes' }] });
    expect(outcome.status).toBe(201);
    const hook = await h.http.post('/v1/webhooks').set(as(session, second)).send({ url: 'http://127.0.0.1:9/hook' });
    expect(hook.status).toBe(201);
    const workspaces = (await h.http.get('/v1/workspaces').set(as(session))).body.data.map((w: { id: string }) => w.id) as string[];
    return { session, key, workspaces, modelId: model.body.id as string };
  }

  test('an account made again with a deleted account\'s address in the same month starts from what that one had left of its allowance, not a fresh one (a twentieth probe renewed 1,000 free credits at will); another address, or another month, starts full', async () => {
    const first = await signInByMail(h);
    await h.orm.em.fork().getConnection().execute(`update accounts set allowance_remaining = 5 where id = ?`, [first.accountId]);
    expect((await h.http.delete('/v1/auth/me').set(as(first)).send({ email: first.email })).status).toBe(204);
    const again = await signInByMail(h, first.email);
    expect(again.accountId).not.toBe(first.accountId);
    const me = await h.http.get('/v1/auth/me').set(as(again));
    expect(me.body.credits).toEqual(expect.objectContaining({ monthly_allowance: 1000, allowance_remaining: 5, remaining: 5 }));
    expect(await ledgerOf(h, again.accountId, ['allowance_reset'])).toEqual([expect.objectContaining({ operation: 'monthly_allowance', allowanceDelta: 5 })]);
    // deleted again with less: the least is kept
    await h.orm.em.fork().getConnection().execute(`update accounts set allowance_remaining = 2 where id = ?`, [again.accountId]);
    expect((await h.http.delete('/v1/auth/me').set(as(again)).send({ email: again.email })).status).toBe(204);
    const third = await signInByMail(h, first.email);
    expect((await h.http.get('/v1/auth/me').set(as(third))).body.credits.allowance_remaining).toBe(2);
    // another address starts full; a row of last month counts for nothing and the sweep removes it
    const other = await signInByMail(h);
    expect((await h.http.get('/v1/auth/me').set(as(other))).body.credits.allowance_remaining).toBe(1000);
    const em = h.orm.em.fork();
    expect((await h.http.delete('/v1/auth/me').set(as(third)).send({ email: third.email })).status).toBe(204);
    await em.getConnection().execute(`update closed_allowances set period = '2000-01' where period <> '2000-01'`);
    const fourth = await signInByMail(h, first.email);
    expect((await h.http.get('/v1/auth/me').set(as(fourth))).body.credits.allowance_remaining).toBe(1000);
    expect(await pruneClosedAllowances(em, new Date())).toBeGreaterThanOrEqual(1);
    expect(await em.getConnection().execute(`select 1 from closed_allowances where period = '2000-01'`)).toEqual([]);
  });

  test("an account made again with a deleted account's address the same day finds that one's free daily budgets spent, not fresh ones; another address has its own", async () => {
    const first = await signInByMail(h);
    const validate = (session: WebSession) => h.http.post('/v1/datasets/validate').set(as(session)).send({ target: 'churned', data: churnRows(120) });
    expect((await validate(first)).status).toBe(200);
    // The call was counted under the address (not the account's id); the rest of the day's 50 spent at once.
    const counter = `validation:free:${addressHash(first.email)}`;
    expect((await h.callPool.query('update rate_limits set points = $1 where key = $2 and points = 1', [VALIDATIONS_PER_DAY.free, counter])).rowCount).toBe(1);
    expectError(await validate(first), 429, 'RATE_LIMITED');
    expect((await h.http.delete('/v1/auth/me').set(as(first)).send({ email: first.email })).status).toBe(204);
    const again = await signInByMail(h, first.email);
    expect(again.accountId).not.toBe(first.accountId);
    expectError(await validate(again), 429, 'RATE_LIMITED');
    const other = await signInByMail(h);
    expect((await validate(other)).status).toBe(200);
  });

  test('a wrong confirmation is a 400 CONFIRMATION_MISMATCH and changes nothing', async () => {
    const session = await signInByMail(h);
    expectError(await h.http.delete('/v1/auth/me').set(as(session)).send({ email: 'someone.else@example.test' }), 400, 'CONFIRMATION_MISMATCH');
    expect((await h.http.get('/v1/auth/me').set(as(session))).status).toBe(200);
  });

  test('deletion stops every credential at once and the delete-account workflow erases every row of the account', async () => {
    const { session, key, workspaces, modelId } = await populatedAccount();
    const before = await countRows(session.accountId, workspaces, [modelId]);
    expect(before).toEqual(expect.objectContaining({ accounts: 1, workspaces: 2, models: 1, model_versions: 1, predictions: 3, outcomes: 1, webhooks: 1, webhook_events: 1 }));

    expect((await h.http.delete('/v1/auth/me').set(as(session)).send({ email: session.email.toUpperCase() })).status).toBe(204);
    expectError(await h.http.get('/v1/auth/me').set(as(session)), 401, 'TOKEN_INVALID');
    expectError(await h.http.get('/v1/models').set('X-API-Key', key), 401, 'API_KEY_INVALID');
    expectError(await h.http.post('/v1/auth/refresh').send({ refresh_token: session.refreshToken }), 401, 'TOKEN_INVALID');

    const result = await h.client.workflow.getHandle(workflowIds.deleteAccount(session.accountId)).result();
    expect(result.workflowsStopped).toBe(3);
    const after = await countRows(session.accountId, workspaces, [modelId]);
    expect(Object.values(after).every((n) => n === 0)).toBe(true);

    // The address is free again: signing in makes a new, empty account.
    const again = await signInByMail(h, session.email);
    expect(again.accountId).not.toBe(session.accountId);
  });
});

describe('account deletion whose workflow never started', () => {
  test('an account marked deleted by a process that died before starting its erasure is erased by the sweep', async () => {
    const session = await signInByMail(h);
    // The first half of DELETE /v1/auth/me alone: what a process killed right after its commit leaves.
    await requestAccountDeletion(h.orm.em.fork(), session.accountId, session.email, new Date());
    expectError(await h.http.get('/v1/auth/me').set(as(session)), 401, 'TOKEN_INVALID');
    await h.orm.em.fork().execute(`update accounts set deleted_at = deleted_at - interval '1 hour' where id = ?`, [session.accountId]);
    const swept = await h.client.workflow.execute<() => Promise<SweepResult>>('sweepEndedKeysWorkflow', { taskQueue: h.taskQueue, workflowId: `test-sweep-${newId('request')}` });
    expect(swept.deletionsStarted).toBeGreaterThanOrEqual(1);
    await h.client.workflow.getHandle(workflowIds.deleteAccount(session.accountId)).result();
    expect(await h.orm.em.fork().execute(`select id from accounts where id = ?`, [session.accountId])).toEqual([]);
  });

  test('a key created in a workspace of an account marked deleted never authenticates (401 API_KEY_INVALID) while the erasure has not reached it', async () => {
    const session = await signInByMail(h);
    const workspaceId = (await h.http.get('/v1/workspaces').set(as(session))).body.data[0].id as string;
    await requestAccountDeletion(h.orm.em.fork(), session.accountId, session.email, new Date());
    // What a POST /v1/api-keys authenticated just before the deletion commits just after it (a
    // seventeenth probe's concurrent creations kept 7 to 9 working keys), or the operator CLI's create-key.
    for (const kind of ['api', 'admin'] as const) {
      const late = await createKey(h.orm.em.fork(), workspaceId, { name: `late ${kind}`, kind, expiresAt: null });
      expectError(await h.http.get('/v1/models').set('X-API-Key', late.secret), 401, 'API_KEY_INVALID');
      expectError(await h.http.get('/v1/webhooks').set('X-API-Key', late.secret), 401, 'API_KEY_INVALID');
    }
  });
});

describe('account deletion across a worker restart', () => {
  let w: Harness;
  beforeAll(async () => {
    w = await startHarness({ withoutWorker: true });
  });
  afterAll(async () => {
    await w.stop();
  });

  test('asked while no worker runs, the erasure finishes once a worker starts, and the account never authenticates meanwhile', async () => {
    const session = await signInByMail(w);
    expect((await w.http.delete('/v1/auth/me').set(as(session)).send({ email: session.email })).status).toBe(204);
    expectError(await w.http.get('/v1/auth/me').set(as(session)), 401, 'TOKEN_INVALID');
    const marked = await w.orm.em.fork().execute<Array<{ deleted_at: Date | null }>>(`select deleted_at from accounts where id = ?`, [session.accountId]);
    expect(marked[0]?.deleted_at).toBeTruthy();

    const worker = await startInProcessWorker(w);
    try {
      await w.client.workflow.getHandle(workflowIds.deleteAccount(session.accountId)).result();
    } finally {
      await worker.stop();
    }
    expect(await w.orm.em.fork().execute(`select id from accounts where id = ?`, [session.accountId])).toEqual([]);
    expect(await w.orm.em.fork().execute(`select id from workspaces where account_id = ?`, [session.accountId])).toEqual([]);
  });
});

describe('account deletion with billing', () => {
  let b: Harness;
  let stripe: StripeStandIn;
  beforeAll(async () => {
    ({ h: b, stripe } = await startBillingHarness());
  });
  afterAll(async () => {
    await b.stop();
  });
  /** A signed-in account whose checkout of `plan` was paid, once its subscription is applied. */
  async function subscribedTo(plan: 'build' | 'pro'): Promise<{ session: WebSession; subscriptionId: string }> {
    const session = await signInByMail(b);
    const checkout = await b.http.post('/v1/billing/checkout').set(as(session)).send({ plan });
    await stripe.completeCheckout(checkout.body.id);
    const subscribed = await eventually(
      () => b.http.get('/v1/billing/subscription').set(as(session)),
      (r) => r.body.plan === plan,
    );
    return { session, subscriptionId: subscribed.body.subscription_id as string };
  }

  test('ends the Stripe subscription with the paid period, stops the purchase waiting for payment, and erases the purchases', async () => {
    const session = await signInByMail(b);
    const checkout = await b.http.post('/v1/billing/checkout').set(as(session)).send({ plan: 'build' });
    expect(checkout.status).toBe(200);
    await stripe.completeCheckout(checkout.body.id);
    const subscribed = await eventually(
      () => b.http.get('/v1/billing/subscription').set(as(session)),
      (r) => r.body.plan === 'build',
    );
    const subscriptionId = subscribed.body.subscription_id as string;
    const purchase = await b.http.post('/v1/billing/credits').set(as(session)).send({ units: 100 });
    expect(purchase.status).toBe(200);

    expect((await b.http.delete('/v1/auth/me').set(as(session)).send({ email: session.email })).status).toBe(204);
    const result = await b.client.workflow.getHandle(workflowIds.deleteAccount(session.accountId)).result();
    expect(result).toEqual(expect.objectContaining({ subscriptionEnded: true, workflowsStopped: 1 }));
    const atStripe = await createStripeClient(b.config)!.subscriptions.retrieve(subscriptionId);
    expect(atStripe.cancel_at_period_end).toBe(true);
    const purchaseRun = await b.client.workflow.getHandle(`purchase/${purchase.body.id}`).describe();
    expect(purchaseRun.status.name).toBe('CANCELLED');
    expect(await b.orm.em.fork().execute(`select id from credit_purchases where account_id = ?`, [session.accountId])).toEqual([]);
    expect(await b.orm.em.fork().execute(`select id from accounts where id = ?`, [session.accountId])).toEqual([]);
  });

  test('erases an account whose subscription no longer bills at Stripe though the service still holds it live: removed at Stripe (404) or ended with its event lost (an eighteenth probe: the step that ends it failed on that answer and was retried for ever, the account never erased)', async () => {
    const subscribed = async () => {
      const session = await signInByMail(b);
      const checkout = await b.http.post('/v1/billing/checkout').set(as(session)).send({ plan: 'build' });
      expect(checkout.status).toBe(200);
      await stripe.completeCheckout(checkout.body.id);
      const shown = await eventually(
        () => b.http.get('/v1/billing/subscription').set(as(session)),
        (r) => r.body.plan === 'build',
      );
      return { session, subscriptionId: shown.body.subscription_id as string };
    };
    const removed = await subscribed();
    const ended = await subscribed();
    // Removed at Stripe (a test mode's data deleted): Stripe answers 404 and still knows the customer.
    stripe.subscriptions.delete(removed.subscriptionId);
    // Ended at Stripe (cancelled at once from the portal), its customer.subscription.deleted never delivered.
    stripe.autoDeliver = false;
    try {
      await stripe.setSubscriptionStatus(ended.subscriptionId, 'canceled');
    } finally {
      stripe.outbox.length = 0;
      stripe.autoDeliver = true;
    }

    for (const { session } of [removed, ended]) {
      expect((await b.http.delete('/v1/auth/me').set(as(session)).send({ email: session.email })).status).toBe(204);
      const erased = b.client.workflow.getHandle(workflowIds.deleteAccount(session.accountId)).result();
      const stuck = new Promise<'stuck'>((resolve) => setTimeout(() => resolve('stuck'), 15_000));
      expect(await Promise.race([erased, stuck])).toEqual(expect.objectContaining({ subscriptionEnded: false }));
      expect(await b.orm.em.fork().execute(`select id from accounts where id = ?`, [session.accountId])).toEqual([]);
    }
  });

  test('closes the payment pages still open, so that nothing can be paid for the deleted account (a sixth probe paid both after the deletion)', async () => {
    const session = await signInByMail(b);
    // build without a subscription (as an operator's account): it can both check out and buy credits
    await b.orm.em.fork().execute(`update accounts set plan = 'build' where id = ?`, [session.accountId]);
    const checkout = await b.http.post('/v1/billing/checkout').set(as(session)).send({ plan: 'pro' });
    expect(checkout.status).toBe(200);
    const purchase = await b.http.post('/v1/billing/credits').set(as(session)).send({ units: 100 });
    expect(purchase.status).toBe(200);

    expect((await b.http.delete('/v1/auth/me').set(as(session)).send({ email: session.email })).status).toBe(204);
    await b.client.workflow.getHandle(workflowIds.deleteAccount(session.accountId)).result();
    for (const sessionId of [checkout.body.id as string, purchase.body.checkout_session_id as string]) {
      expect(stripe.sessions.get(sessionId)?.status).toBe('expired');
      await expect(stripe.completeCheckout(sessionId)).rejects.toThrow(/expired/);
    }
  });

  test("refunds a credit purchase paid in the moment its account was deleted, whose payment's events arrive after the erasure, once however often they come (a twenty-fifth probe: neither credited nor refunded)", async () => {
    const session = await signInByMail(b);
    await b.orm.em.fork().execute(`update accounts set plan = 'build' where id = ?`, [session.accountId]);
    const purchase = await b.http.post('/v1/billing/credits').set(as(session)).send({ units: 100 });
    expect(purchase.status).toBe(200);
    const sessionId = purchase.body.checkout_session_id as string;
    // paid just before the deletion closed the page; its events held back until after the erasure
    stripe.autoDeliver = false;
    try {
      await stripe.completeCheckout(sessionId);
      expect((await b.http.delete('/v1/auth/me').set(as(session)).send({ email: session.email })).status).toBe(204);
      await b.client.workflow.getHandle(workflowIds.deleteAccount(session.accountId)).result();
    } finally {
      stripe.autoDeliver = true;
    }
    const paymentIntent = stripe.sessions.get(sessionId)!.payment_intent as string;
    const charge = () => [...stripe.charges.values()].find((c) => c.payment_intent === paymentIntent)!;
    const refundsOf = () => [...stripe.refunds.values()].filter((r) => r.payment_intent === paymentIntent);
    expect(charge().amount_refunded).toBe(0);
    const late = stripe.outbox.splice(0);
    expect(late.map((e) => e.type)).toContain('checkout.session.completed');
    for (const e of late) expect(await stripe.send(e)).toBe(200);
    expect(refundsOf()).toEqual([expect.objectContaining({ amount: charge().amount, status: 'succeeded', metadata: { purchase_id: purchase.body.id } })]);
    expect(charge().amount_refunded).toBe(charge().amount);
    // delivered again, and again under a new id (as after Stripe's 24 hours of idempotency): one refund
    for (const e of late) expect(await stripe.send(e)).toBe(200);
    for (const e of late) expect(await stripe.send({ ...e, id: `${e.id}_again` })).toBe(200);
    expect(refundsOf()).toHaveLength(1);
  });

  test("ends with its period a subscription whose downgrade waits for the period's end: its schedule is released first (Stripe refuses to change a scheduled subscription's cancellation, and the erasure would retry for ever)", async () => {
    const { session, subscriptionId } = await subscribedTo('pro');
    expect((await b.http.patch('/v1/billing/subscription').set(as(session)).send({ plan: 'build' })).body.pending_plan).toBe('build');
    const scheduleId = stripe.subscriptions.get(subscriptionId)?.schedule as string;
    expect(stripe.schedules.get(scheduleId)?.status).toBe('active');

    expect((await b.http.delete('/v1/auth/me').set(as(session)).send({ email: session.email })).status).toBe(204);
    const result = await b.client.workflow.getHandle(workflowIds.deleteAccount(session.accountId)).result();
    expect(result).toEqual(expect.objectContaining({ subscriptionEnded: true }));
    expect(stripe.subscriptions.get(subscriptionId)).toEqual(expect.objectContaining({ status: 'active', cancel_at_period_end: true, schedule: null }));
    expect(stripe.schedules.get(scheduleId)?.status).toBe('released');
  });

  test("a deletion made while a plan change is in progress ends the subscription once that change is over, though the change undid the subscription's cancellation at Stripe and its event was lost", async () => {
    const { session, subscriptionId } = await subscribedTo('pro');
    expect((await b.http.delete('/v1/billing/subscription').set(as(session))).body.cancel_at_period_end).toBe(true);
    stripe.autoDeliver = false;
    try {
      // The upgrade undoes the cancellation first; it waits on Stripe right there.
      const held = stripe.hold('POST', `/v1/subscriptions/${subscriptionId}`);
      const upgrade = b.http.patch('/v1/billing/subscription').set(as(session)).send({ plan: 'growth' }).then((r) => r);
      await held.arrived;
      expect((await b.http.delete('/v1/auth/me').set(as(session)).send({ email: session.email })).status).toBe(204);
      const deletion = b.client.workflow.getHandle(workflowIds.deleteAccount(session.accountId));
      // the deletion's step waits for the change (it found the account's billing lease taken)
      await new Promise((resolve) => setTimeout(resolve, 3_000));
      expect((await deletion.describe()).status.name).toBe('RUNNING');
      held.release();
      expect((await upgrade).status).toBe(200);
      expect(stripe.subscriptions.get(subscriptionId)?.cancel_at_period_end).toBe(false);
      expect(await deletion.result()).toEqual(expect.objectContaining({ subscriptionEnded: true }));
      expect(stripe.subscriptions.get(subscriptionId)?.cancel_at_period_end).toBe(true);
    } finally {
      stripe.autoDeliver = true;
      stripe.outbox.splice(0);
    }
  });

  test('a plan change or cancellation that reaches a deleted account (admitted before its deletion) is 409 ACCOUNT_DELETED and asks Stripe nothing', async () => {
    const { session } = await subscribedTo('build');
    // The deletion's first half alone (its commit), as a change admitted just before it meets it.
    await requestAccountDeletion(b.orm.em.fork(), session.accountId, session.email, new Date());
    const requestsBefore = stripe.requests.length;
    const billing = new Billing({ orm: b.orm, stripe: createStripeClient(b.config), temporal: new TemporalGateway(b.client, b.taskQueue), config: b.config, logger: pino({ level: 'silent' }) });
    for (const change of [() => billing.changePlan(session.accountId, 'pro'), () => billing.cancel(session.accountId)]) {
      await expect(change()).rejects.toMatchObject({ code: 'ACCOUNT_DELETED', status: 409 });
    }
    expect(stripe.requests.length).toBe(requestsBefore);
  });

  test('a subscription paid for an account already erased is set to end with its period (it was ignored and billed every month)', async () => {
    const session = await signInByMail(b);
    await b.orm.em.fork().execute(`update accounts set plan = 'build' where id = ?`, [session.accountId]);
    expect((await b.http.post('/v1/billing/credits').set(as(session)).send({ units: 100 })).status).toBe(200); // makes the Stripe customer
    const [{ stripe_customer_id: customer }] = await b.orm.em.fork().execute<Array<{ stripe_customer_id: string }>>(`select stripe_customer_id from accounts where id = ?`, [session.accountId]);
    expect((await b.http.delete('/v1/auth/me').set(as(session)).send({ email: session.email })).status).toBe(204);
    await b.client.workflow.getHandle(workflowIds.deleteAccount(session.accountId)).result();
    expect(await b.orm.em.fork().execute(`select id from accounts where id = ?`, [session.accountId])).toEqual([]);

    // A session the expiry could not close (paid while the deletion ran), as the service's checkout makes it.
    const sdk = createStripeClient(b.config)!;
    const subscriptionId = await payBuildSubscriptionAs(stripe, sdk, customer, session.accountId);
    const sub = await eventually(async () => stripe.subscriptions.get(subscriptionId), (s) => s?.cancel_at_period_end === true);
    expect(sub).toEqual(expect.objectContaining({ status: 'active', cancel_at_period_end: true }));
  });

  test('leaves alone a subscription of the same Stripe account that names an account this service never had (a nineteenth probe: another deployment’s, or another product’s, was set to end with its period)', async () => {
    // Another deployment sharing the Stripe account (a second region, staging beside a developer's
    // `stripe listen`) sells a subscription the way this service does: its own customer and account id.
    const sdk = createStripeClient(b.config)!;
    const foreignAccount = `acc_${newId('account').slice(4, 14)}Elsewhere0000`;
    const customer = await sdk.customers.create({ email: 'someone@elsewhere.example', metadata: { account_id: foreignAccount } });
    const subscriptionId = await payBuildSubscriptionAs(stripe, sdk, customer.id, foreignAccount);
    // the stand-in delivered its events (subscription created, session completed) before answering
    expect(stripe.subscriptions.get(subscriptionId)).toEqual(expect.objectContaining({ status: 'active', cancel_at_period_end: false }));
    expect(b.logLines.some((line) => line.includes(subscriptionId) && line.includes('no known account'))).toBe(true);
  });
});

describe('separation by route', () => {
  const ACCOUNT_ROUTES = ['GET /v1/auth/me', 'PATCH /v1/auth/me', 'DELETE /v1/auth/me', 'GET /v1/workspaces', 'POST /v1/workspaces', 'GET /v1/workspaces/{workspaceId}', 'PATCH /v1/workspaces/{workspaceId}', 'POST /v1/auth/oauth/{provider}/link'];
  const isAdminRoute = (path: string) => /^\/v1\/(api-keys|webhooks|billing)(\/|$)/.test(path);

  async function operations(): Promise<Array<{ method: string; path: string; url: string; open: boolean }>> {
    const doc = (await h.http.get('/openapi.json')).body as { paths: Record<string, Record<string, { security?: unknown[] }>> };
    return Object.entries(doc.paths).flatMap(([path, ops]) =>
      Object.entries(ops).map(([method, op]) => ({
        method: method.toUpperCase(),
        path,
        url: path.replace(/\{[^}]+\}/g, (p) => (p === '{workspaceId}' ? 'ws_unknown000' : p === '{keyId}' ? 'key_unknown000' : 'mdl_unknown000')),
        open: (op.security ?? []).length === 0,
      })),
    );
  }

  const call = (method: string, url: string, headers: Record<string, string>) => {
    const agent = h.http as unknown as Record<string, (u: string) => { set(h: Record<string, string>): { send(b: object): Promise<{ status: number; body: { message?: string }; headers: Record<string, string> }> } }>;
    return agent[method.toLowerCase()]!(url).set(headers).send({});
  };

  test('the spec\'s table, row by row', async () => {
    const session = await signInByMail(h);
    const usage = (await h.http.post('/v1/api-keys').set(as(session)).send({ name: 'usage' })).body.secret as string;
    for (const path of ['/v1/models', '/v1/usage']) expect((await h.http.get(path).set('X-API-Key', usage)).status).toBe(200);
    const series = Array.from({ length: 20 }, (_, i) => ({ t: i + 1, y: (i * 7) % 5 }));
    expect((await h.http.post('/v1/forecast').set('X-API-Key', usage).send({ target: 'y', horizon: 2, data: series })).status).toBe(200);
    expectError(await h.http.get('/v1/auth/me').set('X-API-Key', usage), 401, 'AUTH_REQUIRED');
    expectError(await h.http.get('/v1/workspaces').set('Authorization', `Bearer ${usage}`), 401, 'AUTH_REQUIRED');
    expectError(await h.http.get('/v1/api-keys').set('X-API-Key', usage), 403, 'ADMIN_KEY_REQUIRED');
    expectError(await h.http.get('/v1/webhooks').set('X-API-Key', usage), 403, 'ADMIN_KEY_REQUIRED');
    expectError(await h.http.get('/v1/models').set('X-API-Key', 'sk-svc-api-unknownkeyunknownkey'), 401, 'API_KEY_INVALID');
    const claims = JSON.parse(Buffer.from(session.accessToken.split('.')[1]!, 'base64url').toString()) as { sid: string };
    const expired = (await AccessTokens.fromConfig(h.config).sign({ accountId: session.accountId, sessionId: claims.sid }, new Date(Date.now() - 3_600_000))).token;
    expectError(await h.http.get('/v1/models').set('Authorization', `Bearer ${expired}`), 401, 'TOKEN_INVALID');
  });

  test('every authenticated route, with every identity: usage key, admin key, web session, unknown key, expired access token', async () => {
    const session = await signInByMail(h);
    const admin = (await h.http.post('/v1/api-keys').set(as(session)).send({ name: 'admin', kind: 'admin' })).body.secret as string;
    const usage = (await h.http.post('/v1/api-keys').set(as(session)).send({ name: 'usage' })).body.secret as string;
    const claims = JSON.parse(Buffer.from(session.accessToken.split('.')[1]!, 'base64url').toString()) as { sid: string };
    const expired = (await AccessTokens.fromConfig(h.config).sign({ accountId: session.accountId, sessionId: claims.sid }, new Date(Date.now() - 3_600_000))).token;
    const checked: string[] = [];
    for (const op of await operations()) {
      if (op.open) continue;
      const name = `${op.method} ${op.path}`;
      const account = ACCOUNT_ROUTES.includes(name);
      const adminRoute = isAdminRoute(op.path);
      const answers = {
        unknownKey: await call(op.method, op.url, { 'X-API-Key': 'sk-svc-api-unknownkeyunknownkey' }),
        expiredToken: await call(op.method, op.url, { Authorization: `Bearer ${expired}` }),
        usage: await call(op.method, op.url, { 'X-API-Key': usage }),
        admin: await call(op.method, op.url, { Authorization: `Bearer ${admin}` }),
        session: await call(op.method, op.url, { Authorization: session.bearer }),
      };
      const got = Object.fromEntries(Object.entries(answers).map(([who, res]) => [who, res.status === 401 || res.status === 403 ? `${res.status} ${res.body.message}` : 'allowed']));
      expect({ route: name, ...got }).toEqual({
        route: name,
        unknownKey: '401 API_KEY_INVALID',
        expiredToken: '401 TOKEN_INVALID',
        usage: account ? '401 AUTH_REQUIRED' : adminRoute ? '403 ADMIN_KEY_REQUIRED' : 'allowed',
        admin: account ? '401 AUTH_REQUIRED' : name === 'POST /v1/models/{id}/predict' || name === 'POST /v1/forecast' ? '403 ADMIN_KEY_CANNOT_PREDICT' : 'allowed',
        session: 'allowed',
      });
      checked.push(name);
    }
    expect(checked).toEqual(expect.arrayContaining([...ACCOUNT_ROUTES, 'GET /v1/api-keys', 'POST /v1/models/{id}/predict', 'POST /v1/forecast']));
  });
});
