import { PLAN_NAMES } from '../../config/plans';
import { ENGINE_CATALOGUE } from '../../engines/catalogue';
import { AccountSchema, ContextChunkSchema, CreditLedgerSchema, ModelSchema, OutcomeSchema } from '../../db/entities';
import { BudgetLeases } from '../../services/budget-leases';
import { gzipJson } from '../../services/compression';
import { contextChunks, createModelForTraining, loadContext } from '../../services/models';
import { contextRows } from '../../services/context-rows';
import { releaseLapsedReservations, releaseReservation, reserveCredits, settleReservationAlone } from '../../services/credits';
import pino from 'pino';
import { createActivities } from '../../activities';
import { webhookSettings } from '../../services/webhooks/settings';
import { claimIdempotencyKey, completeIdempotencyKey, releaseIdempotencyKey, renewIdempotencyLease, requestFingerprint } from '../../services/idempotency';
import { newIdRun } from '../../services/ids';
import { storeWithSettlement } from '../../services/predictions';
import type { Worker } from 'node:worker_threads';
import zlib from 'node:zlib';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { churnRows, dailySeriesRows, withoutTarget } from '../support/datasets';
import { expectError, signInByMail, startHarness, trainedChurnModel, type Harness } from '../support/harness';

describe('service path: durable credits, idempotency leases, hostile input', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(() => h.stop());

  const trainedModel = (plan: 'free' | 'build' = 'build') => trainedChurnModel(h, plan);
  const rows = (n: number, seed = 7) => withoutTarget(churnRows(n, seed), 'churned');
  const credits = async (accountId: string) => {
    const a = await h.orm.em.fork().findOneOrFail(AccountSchema, { id: accountId });
    return a.allowanceRemaining + a.purchasedBalance;
  };
  const ledger = (accountId: string) => h.orm.em.fork().find(CreditLedgerSchema, { accountId }, { orderBy: { createdAt: 'asc' } });
  const reservationsOf = async (accountId: string) =>
    h.orm.em.fork().getConnection().execute<Array<{ state: string; operation: string }>>(`select state, operation from credit_reservations where account_id = ?`, [accountId]);

  /** The id of the account's held reservation, once a call in flight has made it (within 20 s). */
  const heldReservation = async (accountId: string, caller: string): Promise<string> => {
    const deadline = Date.now() + 20_000;
    for (;;) {
      const [held] = (await h.callPool.query<{ id: string }>(`select id from credit_reservations where account_id = $1 and state = 'held'`, [accountId])).rows.map((r) => r.id);
      if (held) return held;
      if (Date.now() > deadline) throw new Error(`${caller} never reserved its credits`);
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
  };

  describe('charged with the answer', () => {
    const predictionsOf = async (modelId: string) =>
      h.orm.em
        .fork()
        .getConnection()
        .execute<Array<{ id: string }>>(`select id from predictions where model_id = ?`, [modelId]);

    it('charges a call of an account this process saw able to pay in the very statement that stores its rows', async () => {
      const { apiKey, modelId, account } = await trainedModel();
      const before = await credits(account.id);
      // The first call of an unknown account reserves before scoring; the second is charged with its rows.
      for (const n of [3, 5]) expect((await h.http.post(`/v1/models/${modelId}/predict`).set('X-API-Key', apiKey).send({ rows: rows(n) })).status).toBe(200);
      expect(await credits(account.id)).toBe(before - 8);
      const charges = (await ledger(account.id)).filter((l) => l.kind === 'charge');
      expect(charges.map((c) => -(c.allowanceDelta + c.balanceDelta))).toEqual([3, 5]);
      expect((await ledger(account.id)).filter((l) => l.kind === 'refund')).toEqual([]);
      const reservations = await h.orm.em
        .fork()
        .getConnection()
        .execute<Array<{ state: string; closed_with_it: boolean }>>(`select state, closed_at = created_at as closed_with_it from credit_reservations where account_id = ? order by created_at`, [account.id]);
      // One statement, one transaction: PostgreSQL's now() is the same for the charge, its settlement
      // and the rows; the first call was reserved, then settled by a later statement.
      expect(reservations).toEqual([
        { state: 'settled', closed_with_it: false },
        { state: 'settled', closed_with_it: true },
      ]);
      const [together] = await h.orm.em
        .fork()
        .getConnection()
        .execute<Array<{ n: number }>>(
          `select count(*)::int as n from predictions p join credit_ledger l on l.reference = p.http_request_id and l.kind = 'charge' where l.id = ? and p.created_at = l.created_at`,
          [charges[1]!.id],
        );
      expect(together!.n).toBe(5);
    });

    it('answers 402 without charging or storing anything when the account ran dry after this process last charged it', async () => {
      const { apiKey, modelId, account } = await trainedModel();
      expect((await h.http.post(`/v1/models/${modelId}/predict`).set('X-API-Key', apiKey).send({ rows: rows(2) })).status).toBe(200);
      const ledgerBefore = await ledger(account.id);
      const storedBefore = await predictionsOf(modelId);
      // Another process spends everything.
      await h.orm.em.fork().nativeUpdate(AccountSchema, { id: account.id }, { allowanceRemaining: 0, purchasedBalance: 0 });
      const res = await h.http.post(`/v1/models/${modelId}/predict`).set('X-API-Key', apiKey).send({ rows: rows(2) });
      expectError(res, 402, 'CREDITS_EXHAUSTED');
      expect(await ledger(account.id)).toHaveLength(ledgerBefore.length);
      expect(await predictionsOf(modelId)).toHaveLength(storedBefore.length);
      expect(await credits(account.id)).toBe(0);
    });

    it('never scores with a model this process read before it was archived or deleted: 409 and 404, nothing charged', async () => {
      const { apiKey, adminKey, modelId, account } = await trainedModel();
      expect((await h.http.post(`/v1/models/${modelId}/predict`).set('X-API-Key', apiKey).send({ rows: rows(2) })).status).toBe(200);
      const before = await credits(account.id);
      expect((await h.http.post(`/v1/models/${modelId}/archive`).set('X-API-Key', adminKey)).status).toBe(204);
      expectError(await h.http.post(`/v1/models/${modelId}/predict`).set('X-API-Key', apiKey).send({ rows: rows(2) }), 409, 'MODEL_ARCHIVED');
      expect((await h.http.post(`/v1/models/${modelId}/restore`).set('X-API-Key', adminKey)).status).toBe(200);
      expect((await h.http.post(`/v1/models/${modelId}/predict`).set('X-API-Key', apiKey).send({ rows: rows(2) })).status).toBe(200);
      expect((await h.http.delete(`/v1/models/${modelId}`).set('X-API-Key', adminKey)).status).toBe(204);
      expectError(await h.http.post(`/v1/models/${modelId}/predict`).set('X-API-Key', apiKey).send({ rows: rows(2) }), 404, 'NOT_FOUND');
      expect(await credits(account.id)).toBe(before - 2);
    });

    it('answers 404 and charges nothing when a call finds its version\'s artefact gone (the model\'s deletion committed between the call\'s read of the model and of the artefact)', async () => {
      const { apiKey, modelId, account } = await trainedModel();
      const before = await credits(account.id);
      // what deleteModel commits to the versions, seen by a call that read the model as serving before it
      await h.orm.em.fork().getConnection().execute(`update model_versions set artefact = null where model_id = ?`, [modelId]);
      expectError(await h.http.post(`/v1/models/${modelId}/predict`).set('X-API-Key', apiKey).send({ rows: rows(20) }), 404, 'NOT_FOUND');
      expect(await credits(account.id)).toBe(before);
      const moved = (await ledger(account.id)).filter((l) => l.kind === 'charge' || l.kind === 'refund');
      expect(moved.reduce((sum, l) => sum + l.allowanceDelta + l.balanceDelta, 0)).toBe(0);
    });
  });

  describe('credit reservations', () => {
    it('settles the reservation of an answered predict: one charge, no refund, state settled', async () => {
      const { apiKey, modelId, account } = await trainedModel();
      const res = await h.http.post(`/v1/models/${modelId}/predict`).set('X-API-Key', apiKey).send({ rows: rows(4) });
      expect(res.status).toBe(200);
      expect(await reservationsOf(account.id)).toEqual([{ state: 'settled', operation: 'models.predict' }]);
      expect((await ledger(account.id)).filter((l) => l.kind !== 'allowance_reset').map((l) => l.kind)).toEqual(['charge']);
    });

    it('the sweep gives back a reservation whose call never answered, exactly once even when released concurrently', async () => {
      const account = await h.provision('build');
      const before = await credits(account.account.id);
      const held = await reserveCredits({ em: h.orm.em.fork(), callPool: h.callPool }, {
        accountId: account.account.id,
        workspaceId: account.workspace.id,
        amount: 25,
        operation: 'models.predict',
        reference: 'req_abandoned',
        holdSeconds: 1,
      });
      expect(await credits(account.account.id)).toBe(before - 25);
      // Not yet past its deadline: the sweep leaves it alone.
      expect(await releaseLapsedReservations(h.orm.em.fork(), new Date())).toBe(0);
      const later = new Date(Date.now() + 5_000);
      const released = await Promise.all([
        releaseLapsedReservations(h.orm.em.fork(), later),
        releaseLapsedReservations(h.orm.em.fork(), later),
        releaseReservation(h.orm.em.fork(), held.id),
      ]);
      expect(released[0] + released[1] + (released[2] === null ? 0 : 1)).toBe(1);
      expect(await credits(account.account.id)).toBe(before);
      const refunds = (await ledger(account.account.id)).filter((l) => l.kind === 'refund');
      expect(refunds.map((r) => [r.reference, r.allowanceDelta + r.balanceDelta])).toEqual([[held.id, 25]]);
      expect(await reservationsOf(account.account.id)).toEqual([{ state: 'released', operation: 'models.predict' }]);
    });

    it('the periodic sweep removes reservations closed (settled or released) more than 30 days ago; held ones and recently closed ones stay (a seventeenth probe: one row per paid call was kept for good, never read again)', async () => {
      const account = await h.provision('build');
      const stores = { em: h.orm.em.fork(), callPool: h.callPool };
      const reserve = (reference: string) =>
        reserveCredits(stores, { accountId: account.account.id, workspaceId: account.workspace.id, amount: 1, operation: 'models.predict', reference, holdSeconds: 900 });
      const [oldSettled, oldReleased, recentSettled, held] = [await reserve('req_a'), await reserve('req_b'), await reserve('req_c'), await reserve('req_d')];
      await settleReservationAlone(h.callPool, oldSettled.id);
      await releaseReservation(h.orm.em.fork(), oldReleased.id);
      await settleReservationAlone(h.callPool, recentSettled.id);
      const em = h.orm.em.fork();
      await em.execute(`update credit_reservations set created_at = now() - interval '31 days', closed_at = now() - interval '31 days' where id in (?, ?)`, [oldSettled.id, oldReleased.id]);
      // a held one whose call is long gone is the release's to handle, never the prune's
      await em.execute(`update credit_reservations set created_at = now() - interval '31 days' where id = ?`, [held.id]);
      const activities = createActivities({ orm: h.orm, logger: pino({ level: 'silent' }), enginePool: h.enginePool, strandedAfterMs: 120_000, fitHeartbeatTimeoutMs: 30_000, webhooks: webhookSettings(h.config).delivery, stripe: null });
      const swept = await activities.sweepEndedKeys();
      expect(swept.reservationsPruned).toBeGreaterThanOrEqual(2);
      const left = await em.execute<Array<{ id: string; state: string }>>(`select id, state from credit_reservations where account_id = ? order by id`, [account.account.id]);
      expect(Object.fromEntries(left.map((r) => [r.id, r.state]))).toEqual({ [recentSettled.id]: 'settled', [held.id]: 'held' });
      // the ledger, the account's record, keeps every charge and the refund
      const kinds = (await ledger(account.account.id)).map((l) => l.kind).filter((k) => k !== 'allowance_reset');
      expect(kinds.sort()).toEqual(['charge', 'charge', 'charge', 'charge', 'refund']);
    });

    it('stores the rows of a large call with its settlement only while the reservation is held: after the sweep gave it back, the call expires (503 CALL_EXPIRED) and nothing is stored or settled', async () => {
      const account = await h.provision('build');
      const stores = { em: h.orm.em.fork(), callPool: h.callPool };
      const spec = { accountId: account.account.id, workspaceId: account.workspace.id, amount: 2, operation: 'models.predict', holdSeconds: 1 };
      const runs = { kept: newIdRun('request', 2), lapsed: newIdRun('request', 2) };
      const batch = (id: 'kept' | 'lapsed') => ({
        modelId: 'mdl_store',
        workspaceId: account.workspace.id,
        versionNumber: 1,
        httpRequestId: `req_${id}`,
        rows: { stem: runs[id].stem, features: [{ x: 0 }, { x: 1 }], outputs: runs[id].ids.map((rid) => ({ request_id: rid, prediction: 'yes' })) },
      });
      const storedFor = async (id: string) =>
        (await h.orm.em.fork().getConnection().execute<Array<{ id: string }>>(`select id from predictions where http_request_id = ? order by id`, [`req_${id}`])).map((r) => r.id);

      const held = await reserveCredits(stores, { ...spec, reference: 'req_kept' });
      await storeWithSettlement(h.callPool, held.id, batch('kept'));
      expect(await storedFor('kept')).toEqual(runs.kept.ids);

      const lapsed = await reserveCredits(stores, { ...spec, reference: 'req_lapsed' });
      expect(await releaseLapsedReservations(h.orm.em.fork(), new Date(Date.now() + 5_000))).toBe(1);
      await expect(storeWithSettlement(h.callPool, lapsed.id, batch('lapsed'))).rejects.toMatchObject({ code: 'CALL_EXPIRED', status: 503 });
      expect(await storedFor('lapsed')).toEqual([]);
      const states = await h.orm.em.fork().getConnection().execute<Array<{ id: string; state: string }>>(`select id, state from credit_reservations where account_id = ?`, [account.account.id]);
      expect(Object.fromEntries(states.map((r) => [r.id, r.state]))).toEqual({ [held.id]: 'settled', [lapsed.id]: 'released' });
    });

    it('refunds FORECAST_FAILED at once when the engine thread dies mid-forecast: the ledger nets to zero and the reservation is released', async () => {
      // Any series within the accepted range forecasts, so the failure is a real one: the engine
      // threads are terminated while they compute, after the credits were reserved.
      const account = await h.provision('build');
      const before = await credits(account.account.id);
      const data = dailySeriesRows(60, 200);
      const call = h.http.post('/v1/forecast').set('X-API-Key', account.apiKey).send({ target: 'value', timestamp: 'date', item_id: 'item', data, horizon: 3 });
      const answered = call.then((res) => res);
      const deadline = Date.now() + 20_000;
      while ((await reservationsOf(account.account.id)).length === 0) {
        if (Date.now() > deadline) throw new Error('the forecast never reserved its credits');
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      const threads = (h.enginePool as unknown as { pool: { threads: Worker[] } }).pool.threads;
      expect(threads.length).toBeGreaterThan(0);
      await Promise.all(threads.map((t) => t.terminate()));
      const res = await answered;
      expectError(res, 422, 'FORECAST_FAILED');
      expect(await credits(account.account.id)).toBe(before);
      const moves = (await ledger(account.account.id)).filter((l) => l.kind === 'charge' || l.kind === 'refund');
      expect(moves.map((l) => [l.kind, l.allowanceDelta + l.balanceDelta])).toEqual([
        ['charge', -180],
        ['refund', 180],
      ]);
      expect(await reservationsOf(account.account.id)).toEqual([{ state: 'released', operation: 'forecast' }]);
      // The pool replaces its threads: the next forecast is answered.
      const next = await h.http.post('/v1/forecast').set('X-API-Key', account.apiKey).send({ target: 'value', timestamp: 'date', data: dailySeriesRows(1, 30).map(({ date, value }) => ({ date, value })), horizon: 3 });
      expect(next.status).toBe(200);
    });

    it('logs a predict whose credits were given back before its answer was stored (503 CALL_EXPIRED) with no credits, so usage does not count them', async () => {
      const { apiKey, modelId, account, workspace } = await trainedModel();
      const before = await credits(account.id);
      // With an Idempotency-Key the credits stay held until the answer is stored for replay; they are
      // given back (as the sweep would after the deadline) while the 10,000 rows are scored.
      const call = h.http.post(`/v1/models/${modelId}/predict`).set('X-API-Key', apiKey).set('Idempotency-Key', 'given-back-before-stored').send({ rows: rows(10_000) });
      const answered = call.then((res) => res);
      const held = await heldReservation(account.id, 'the predict');
      expect(await releaseReservation(h.orm.em.fork(), held)).not.toBeNull();
      const res = await answered;
      expectError(res, 503, 'CALL_EXPIRED');
      expect(await credits(account.id)).toBe(before);
      await h.requestLog.flush();
      const { rows: logged } = await h.callPool.query<{ status: number; credits: number }>(
        `select status, credits from request_log where workspace_id = $1 and operation = 'models.predict'`,
        [workspace.id],
      );
      expect(logged).toEqual([{ status: 503, credits: 0 }]);
    });

    it('answers 413 TOO_MANY_ROWS on a predict of more rows than one call scores, and charges nothing', async () => {
      const { apiKey, modelId, account } = await trainedModel();
      const before = await credits(account.id);
      const res = await h.http.post(`/v1/models/${modelId}/predict`).set('X-API-Key', apiKey).send({ rows: rows(10_001) });
      expectError(res, 413, 'TOO_MANY_ROWS');
      expect(await credits(account.id)).toBe(before);
      expect(await reservationsOf(account.id)).toEqual([]);
    });
  });

  describe('idempotency leases', () => {
    async function claimedElsewhere(workspaceId: string, key: string, modelId: string, body: unknown, leaseMs: number) {
      await h.orm.em
        .fork()
        .getKnex()('idempotency_records')
        .insert({
          workspace_id: workspaceId,
          key,
          request_hash: requestFingerprint({ method: 'POST', path: `/v1/models/${modelId}/predict`, body }),
          state: 'in_progress',
          expires_at: new Date(Date.now() + 3_600_000),
          lease_until: new Date(Date.now() + leaseMs),
        });
    }

    it('answers 409 REQUEST_IN_PROGRESS while the first call holds its lease', async () => {
      const { apiKey, modelId, workspace } = await trainedModel();
      const body = { rows: rows(1) };
      await claimedElsewhere(workspace.id, 'running', modelId, body, 60_000);
      expectError(await h.http.post(`/v1/models/${modelId}/predict`).set('X-API-Key', apiKey).set('Idempotency-Key', 'running').send(body), 409, 'REQUEST_IN_PROGRESS');
    });

    it('lets a retry proceed once the first call died (lease over), charges it once, then replays it', async () => {
      const { apiKey, modelId, workspace, account } = await trainedModel();
      const body = { rows: rows(2) };
      await claimedElsewhere(workspace.id, 'died', modelId, body, -1_000);
      const before = await credits(account.id);
      const retry = await h.http.post(`/v1/models/${modelId}/predict`).set('X-API-Key', apiKey).set('Idempotency-Key', 'died').send(body);
      expect(retry.status).toBe(200);
      const replay = await h.http.post(`/v1/models/${modelId}/predict`).set('X-API-Key', apiKey).set('Idempotency-Key', 'died').send(body);
      expect(replay.status).toBe(200);
      expect(replay.headers['idempotent-replayed']).toBe('true');
      expect(replay.body).toEqual(retry.body);
      expect(await credits(account.id)).toBe(before - 2);
    });

    it('refuses an administration key before any Idempotency-Key is claimed: it never gets a usage key\'s stored answer, and its refusal is never replayed to a usage key', async () => {
      const { apiKey, adminKey, modelId, account } = await trainedModel();
      const body = { rows: rows(1) };
      const before = await credits(account.id);
      const answered = await h.http.post(`/v1/models/${modelId}/predict`).set('X-API-Key', apiKey).set('Idempotency-Key', 'usage-first').send(body);
      expect(answered.status).toBe(200);
      const admin = await h.http.post(`/v1/models/${modelId}/predict`).set('X-API-Key', adminKey).set('Idempotency-Key', 'usage-first').send(body);
      expectError(admin, 403, 'ADMIN_KEY_CANNOT_PREDICT');
      expect(admin.headers['idempotent-replayed']).toBeUndefined();

      expectError(await h.http.post(`/v1/models/${modelId}/predict`).set('X-API-Key', adminKey).set('Idempotency-Key', 'admin-first').send(body), 403, 'ADMIN_KEY_CANNOT_PREDICT');
      const usage = await h.http.post(`/v1/models/${modelId}/predict`).set('X-API-Key', apiKey).set('Idempotency-Key', 'admin-first').send(body);
      expect(usage.status).toBe(200);
      expect(usage.headers['idempotent-replayed']).toBeUndefined();
      const forecast = { data: Array.from({ length: 20 }, (_, i) => ({ ds: `2026-01-${String(i + 1).padStart(2, '0')}`, y: i })), target: 'y', timestamp: 'ds', horizon: 2 };
      expectError(await h.http.post('/v1/forecast').set('X-API-Key', adminKey).set('Idempotency-Key', 'admin-forecast').send(forecast), 403, 'ADMIN_KEY_CANNOT_PREDICT');
      const stored = await h.orm.em.fork().getConnection().execute<Array<{ key: string }>>(`select key from idempotency_records where key in ('admin-first', 'admin-forecast', 'usage-first') order by key`);
      expect(stored.map((r) => r.key)).toEqual(['admin-first', 'usage-first']);
      expect(await credits(account.id)).toBe(before - 2);
    });

    it('charges a key once when its first call outlives its lease: the retry that took the key over answers and is charged, the first call gets 503 CALL_EXPIRED with nothing kept', async () => {
      const { apiKey, modelId, account } = await trainedModel();
      const body = { rows: rows(2_000) };
      const before = await credits(account.id);
      const predict = () => h.http.post(`/v1/models/${modelId}/predict`).set('X-API-Key', apiKey).set('Idempotency-Key', 'outlived').send(body);
      // The first call stalls where it settles its credits (a lock held on its reservation), as a process
      // stalled past its lease would...
      const first = predict().then((res) => res);
      const reservationId = await heldReservation(account.id, 'the first call');
      const blocker = await h.callPool.connect();
      let retryRequestId = '';
      try {
        await blocker.query('begin');
        await blocker.query('select id from credit_reservations where id = $1 for update', [reservationId]);
        // ...its lease runs out, and a retry takes the key over and answers in full.
        await h.callPool.query(`update idempotency_records set lease_until = now() - interval '1 second' where key = 'outlived'`);
        const retry = await predict();
        expect(retry.status).toBe(200);
        retryRequestId = retry.headers['x-request-id'] as string;
        expect(retry.headers['idempotent-replayed']).toBeUndefined();
        await blocker.query('rollback');
        expectError(await first, 503, 'CALL_EXPIRED');
        const replay = await predict();
        expect(replay.headers['idempotent-replayed']).toBe('true');
        expect(replay.body).toEqual(retry.body);
      } finally {
        blocker.release();
      }
      expect(await credits(account.id)).toBe(before - 2_000);
      expect((await reservationsOf(account.id)).map((r) => r.state).sort()).toEqual(['released', 'settled']);
      // Its rows went with its credits: the history holds the retry's call only.
      const calls = await h.callPool.query<{ http_request_id: string; row_count: number }>(`select http_request_id, row_count from prediction_calls where model_id = $1`, [modelId]);
      expect(calls.rows).toEqual([{ http_request_id: retryRequestId, row_count: 2_000 }]);
    });

    it('a call whose key a retry took over neither releases, renews nor completes the retry\'s claim', async () => {
      const { workspace } = await trainedModel();
      const em = () => h.orm.em.fork();
      const claimOf = async () => {
        const claim = await claimIdempotencyKey(em(), { workspaceId: workspace.id, key: 'taken-over', fingerprint: 'f'.repeat(64), leaseSeconds: 30 });
        if (claim.kind !== 'claimed') throw new Error('the key was not claimed');
        return claim.held;
      };
      const record = async () =>
        (await h.callPool.query<{ claim_id: string; state: string; lease_until: Date }>(`select claim_id, state, lease_until from idempotency_records where workspace_id = $1 and key = 'taken-over'`, [workspace.id])).rows;
      const first = await claimOf();
      await h.callPool.query(`update idempotency_records set lease_until = now() - interval '1 second' where workspace_id = $1 and key = 'taken-over'`, [workspace.id]);
      const retry = await claimOf();
      const [taken] = await record();
      await releaseIdempotencyKey(em(), first);
      await renewIdempotencyLease(em(), first, 3_600);
      expect(await completeIdempotencyKey(em(), first, { status: 200, body: '{}', headers: {} })).toBe(false);
      expect(await record()).toEqual([taken]);
      expect(taken?.claim_id).toBe(retry.claimId);
      expect(await completeIdempotencyKey(em(), retry, { status: 200, body: '{}', headers: {} })).toBe(true);
      expect((await record()).map((r) => r.state)).toEqual(['completed']);
    });

    it('a lease that ended does not let different content take the key', async () => {
      const { apiKey, modelId, workspace } = await trainedModel();
      await claimedElsewhere(workspace.id, 'other', modelId, { rows: rows(1) }, -1_000);
      expectError(await h.http.post(`/v1/models/${modelId}/predict`).set('X-API-Key', apiKey).set('Idempotency-Key', 'other').send({ rows: rows(3) }), 422, 'IDEMPOTENCY_KEY_REUSED');
    });
  });

  describe('hostile input: a clear 4xx in the envelope, nothing changed', () => {
    it('refuses a NUL byte in a path segment', async () => {
      const { apiKey } = await h.provision('build');
      expectError(await h.http.get('/v1/models/mdl_%00x').set('X-API-Key', apiKey), 400, 'VALIDATION_ERROR');
    });

    it('refuses a NUL byte in a name, a column name, a target and a feature value, and creates no model', async () => {
      const { apiKey, account } = await h.provision('build');
      const data = churnRows(30);
      const attempts = [
        { target: 'churned', engine: 'tabular-gbdt', name: 'a\u0000b', data },
        { target: 'churned', engine: 'tabular-gbdt', data: data.map((r) => ({ ...r, 'x\u00001': 1 })) },
        { target: 'churn\u0000ed', engine: 'tabular-gbdt', data },
        { target: 'churned', engine: 'tabular-gbdt', data: data.map((r, i) => (i === 3 ? { ...r, colour: 're\u0000d' } : r)) },
      ];
      for (const body of attempts) expectError(await h.http.post('/v1/models').set('X-API-Key', apiKey).send(body), 400, 'VALIDATION_ERROR');
      expect(await h.orm.em.fork().count(ModelSchema, { account: account.id })).toBe(0);
    });

    it('refuses a lone UTF-16 surrogate in a small prediction with 400, and another account\'s calls charged at the same moments all answer 200', async () => {
      const victim = await trainedModel();
      const attacker = await trainedModel();
      const before = await credits(victim.account.id);
      const [row] = rows(1);
      // "\ud800" is a valid JSON escape that encodes no character; PostgreSQL refuses it in json
      const poisoned = JSON.stringify({ rows: [{ ...row, colour: 'X' }] }).replace('"X"', '"\\ud800"');
      for (let round = 0; round < 3; round++) {
        const answers = await Promise.all([
          ...Array.from({ length: 6 }, () => h.http.post(`/v1/models/${victim.modelId}/predict`).set('X-API-Key', victim.apiKey).send({ rows: [row] })),
          ...Array.from({ length: 2 }, () =>
            h.http.post(`/v1/models/${attacker.modelId}/predict`).set('X-API-Key', attacker.apiKey).set('Content-Type', 'application/json').send(poisoned),
          ),
        ]);
        expect(answers.slice(0, 6).map((r) => r.status)).toEqual([200, 200, 200, 200, 200, 200]);
        for (const r of answers.slice(6)) {
          expectError(r, 400, 'VALIDATION_ERROR');
          expect(r.body.messageDetail).toContain('lone UTF-16 surrogate');
        }
      }
      expect(await credits(victim.account.id)).toBe(before - 18);
      expect((await ledger(attacker.account.id)).filter((l) => l.kind === 'charge')).toEqual([]);
    });

    it('refuses a NUL or a lone UTF-16 surrogate in a multipart form field read as JSON (rows) with 400, and another account\'s calls charged at the same moments all answer 200', async () => {
      const victim = await trainedModel();
      const attacker = await trainedModel();
      const before = await credits(victim.account.id);
      const [row] = rows(1);
      for (const [escape, detail] of [
        ['\\u0000', 'NUL character'],
        ['\\ud800', 'lone UTF-16 surrogate'],
      ]) {
        const poisoned = JSON.stringify([{ ...row, colour: 'X' }]).replace('"X"', `"${escape}"`);
        const answers = await Promise.all([
          ...Array.from({ length: 6 }, () => h.http.post(`/v1/models/${victim.modelId}/predict`).set('X-API-Key', victim.apiKey).send({ rows: [row] })),
          ...Array.from({ length: 2 }, () => h.http.post(`/v1/models/${attacker.modelId}/predict`).set('X-API-Key', attacker.apiKey).field('rows', poisoned)),
        ]);
        expect(answers.slice(0, 6).map((r) => r.status)).toEqual([200, 200, 200, 200, 200, 200]);
        for (const r of answers.slice(6)) {
          expectError(r, 400, 'VALIDATION_ERROR');
          expect(r.body.messageDetail).toContain(detail);
        }
      }
      // the same field without the escape is read as before
      const fine = await h.http.post(`/v1/models/${attacker.modelId}/predict`).set('X-API-Key', attacker.apiKey).field('rows', JSON.stringify([row]));
      expect(fine.status).toBe(200);
      expect(await credits(victim.account.id)).toBe(before - 12);
      expect((await ledger(attacker.account.id)).filter((l) => l.kind === 'charge')).toHaveLength(1);
    });

    it('refuses a column named by nothing but spaces in JSON rows and JSON files, as a CSV header refuses it, and creates no model', async () => {
      const { apiKey, account } = await h.provision('build');
      const data = churnRows(30).map((r) => ({ ...r, '': 1 }));
      const rows = await h.http.post('/v1/models').set('X-API-Key', apiKey).send({ target: 'churned', engine: 'tabular-gbdt', data });
      expectError(rows, 400, 'VALIDATION_ERROR');
      expect(rows.body.messageDetail).toContain('more than spaces');
      const file = Buffer.from(JSON.stringify(churnRows(30).map((r) => ({ ...r, '  ': 'x' }))));
      const upload = await h.http.post('/v1/models').set('X-API-Key', apiKey).field('target', 'churned').field('engine', 'tabular-gbdt').attach('file', file, 'rows.json');
      expectError(upload, 400, 'VALIDATION_ERROR');
      expect(upload.body.messageDetail).toContain('more than spaces');
      const csv = await h.http.post('/v1/models').set('X-API-Key', apiKey).field('target', 'churned').field('engine', 'tabular-gbdt').attach('file', Buffer.from('x1,,churned\n1,2,yes\n'), 'rows.csv');
      expectError(csv, 400, 'CSV_UNREADABLE');
      expect(await h.orm.em.fork().count(ModelSchema, { account: account.id })).toBe(0);
    });

    it('reads a column named like a member of Object.prototype (constructor, valueOf) only from the row itself: a row without it is a missing value in training and COLUMN_MISMATCH in a prediction, never the prototype\'s function', async () => {
      const { apiKey, account } = await h.provision('build');
      const data = Array.from({ length: 40 }, (_, i) => ({
        x: (i * 37) % 11,
        ...(i % 5 === 0 ? {} : { constructor: i % 7 }),
        ...(i % 4 === 0 ? {} : { valueOf: `v${i % 3}` }),
        y: i % 2 === 0 ? 'yes' : 'no',
      }));
      const validated = await h.http.post('/v1/datasets/validate').set('X-API-Key', apiKey).send({ target: 'y', data });
      expect(validated.status).toBe(200);
      const columns = validated.body.report.columns as Array<{ name: string; type: string; missing: number }>;
      expect(columns.filter((c) => c.name !== 'x').map((c) => [c.name, c.type, c.missing])).toEqual([
        ['constructor', 'numeric', 8],
        ['valueOf', 'categorical', 10],
      ]);
      const created = await h.http.post('/v1/models').set('X-API-Key', apiKey).send({ target: 'y', engine: 'tabular-gbdt', data });
      expect(created.status).toBe(201);
      const before = await credits(account.id);
      const cases: Array<[Record<string, unknown>, string]> = [
        [{ x: 1, constructor: 2 }, 'valueOf'],
        [{ x: 1, valueOf: 'v1' }, 'constructor'],
      ];
      for (const [row, missing] of cases) {
        const res = await h.http.post(`/v1/models/${created.body.id as string}/predict`).set('X-API-Key', apiKey).send({ rows: [row] });
        expectError(res, 400, 'COLUMN_MISMATCH');
        expect(res.body.missing_columns).toEqual([missing]);
      }
      expect(await credits(account.id)).toBe(before);
    });

    it('answers proba___proto__ for a class labelled "__proto__", scored on the main thread and on the engine threads alike', async () => {
      const { apiKey } = await h.provision('build');
      const data = Array.from({ length: 60 }, (_, i) => ({ a: i % 5, b: (i * 7) % 3, y: (i % 5) + ((i * 7) % 3) > 3 ? '__proto__' : 'yes' }));
      const created = await h.http.post('/v1/models').set('X-API-Key', apiKey).send({ target: 'y', engine: 'tabular-gbdt', data });
      expect(created.status).toBe(201);
      for (const n of [1, 200]) {
        const res = await h.http
          .post(`/v1/models/${created.body.id as string}/predict`)
          .set('X-API-Key', apiKey)
          .send({ rows: Array.from({ length: n }, (_, i) => ({ a: i % 5, b: i % 3 })) });
        expect(res.status).toBe(200);
        for (const p of res.body.predictions as Array<Record<string, number>>) {
          expect(Object.keys(p).filter((k) => k.startsWith('proba_')).sort()).toEqual(['proba___proto__', 'proba_yes']);
          expect(p.proba___proto__! + p.proba_yes!).toBeCloseTo(1, 10);
        }
      }
    });

    it('names at most the first 100 refused rows of a list of bad rows (rows, data, the forecast\'s data, a multipart rows field), in a short answer', async () => {
      const { modelId, apiKey } = await trainedModel();
      const bad = Array.from({ length: 100_000 }, (_, i) => (i === 3 ? { ok: 1 } : 1));
      const answers = [
        await h.http.post(`/v1/models/${modelId}/predict`).set('X-API-Key', apiKey).send({ rows: bad }),
        await h.http.post('/v1/datasets/validate').set('X-API-Key', apiKey).send({ target: 'y', data: bad }),
        await h.http.post('/v1/models').set('X-API-Key', apiKey).send({ target: 'y', engine: 'tabular-gbdt', data: bad }),
        await h.http.post('/v1/forecast/backtest').set('X-API-Key', apiKey).send({ target: 'y', data: bad }),
        await h.http.post(`/v1/models/${modelId}/predict`).set('X-API-Key', apiKey).field('rows', JSON.stringify(bad)),
      ];
      for (const res of answers) {
        expect(res.status).toBe(400);
        expect(res.body.errors).toHaveLength(100);
        expect(res.body.errors[0].path).toMatch(/^body\.(rows|data)\.0$/);
        expect(res.body.errors[3].path).toMatch(/^body\.(rows|data)\.4$/);
        expect(res.body.errors[99].path).toMatch(/^body\.(rows|data)\.100$/);
        expect(res.text.length).toBeLessThan(20_000);
      }
      // A few bad rows among good ones are each named, as before.
      const few = await h.http.post(`/v1/models/${modelId}/predict`).set('X-API-Key', apiKey).send({ rows: [...rows(3), 7, { x: [1] }] });
      expectError(few, 400, 'VALIDATION_ERROR');
      expect(few.body.errors.map((e: { path: string }) => e.path)).toEqual(['body.rows.3', 'body.rows.4']);
    });

    it('answers an unusual HTTP method with 405 in the envelope', async () => {
      const res = await h.http.propfind('/v1/models');
      expectError(res, 405, 'METHOD_NOT_ALLOWED');
    });

    it('refuses non-finite numbers (1e999) as targets and features', async () => {
      const { apiKey, account } = await h.provision('build');
      const text = `{"target":"y","engine":"tabular-gbdt","data":[${Array.from({ length: 30 }, (_, i) => `{"x":${i},"y":${i === 5 ? '1e999' : i}}`).join(',')}]}`;
      const res = await h.http.post('/v1/models').set('X-API-Key', apiKey).set('Content-Type', 'application/json').send(text);
      expectError(res, 400, 'VALIDATION_ERROR');
      expect(res.body.messageDetail).toContain('not finite');
      expect(await h.orm.em.fork().count(ModelSchema, { account: account.id })).toBe(0);
    });

    it('refuses strings where the contract says integer or boolean in JSON, and reads them from multipart fields', async () => {
      const { apiKey } = await h.provision('build');
      const series = Array.from({ length: 30 }, (_, i) => ({ t: `2026-01-${String(i + 1).padStart(2, '0')}`, y: 10 + (i % 7) }));
      expectError(await h.http.post('/v1/forecast').set('X-API-Key', apiKey).send({ target: 'y', data: series, horizon: '6' }), 400, 'INVALID_INPUT');
      expectError(await h.http.post('/v1/models').set('X-API-Key', apiKey).send({ target: 'churned', engine: 'tabular-gbdt', auto_update: 'true', data: churnRows(30) }), 400, 'VALIDATION_ERROR');
      const csv = ['t,y', ...series.map((r) => `${r.t},${r.y}`)].join('\n');
      const form = await h.http.post('/v1/forecast').set('X-API-Key', apiKey).field('target', 'y').field('horizon', '6').attach('file', Buffer.from(csv), 'series.csv');
      expect(form.status).toBe(200);
      expect(form.text.trim().split('\n')).toHaveLength(7);
      // numeric text is decimal, as the engine reads it: Number() read "0x6" as 6 (a sixth probe)
      for (const horizon of ['0x6', '0b110', '']) {
        const refused = await h.http.post('/v1/forecast').set('X-API-Key', apiKey).field('target', 'y').field('horizon', horizon).attach('file', Buffer.from(csv), 'series.csv');
        expectError(refused, 400, 'INVALID_INPUT');
        expect(refused.body.errors[0].path).toBe('body.horizon');
      }
    });

    it('reads an integer query parameter in decimal digits only, and documents it as an integer (a sixth probe: offset=0x10 was 16, an empty offset 0, and the document said nullable)', async () => {
      const { adminKey, apiKey } = await h.provision('build');
      expect((await h.http.get('/v1/api-keys?limit=1&offset=1').set('X-API-Key', adminKey)).body.pagination).toEqual(expect.objectContaining({ limit: 1, offset: 1 }));
      for (const query of ['offset=0x10', 'limit=1e2', 'offset=', 'limit=%205', 'limit=1&limit=2', 'offset=null']) {
        const refused = await h.http.get(`/v1/api-keys?${query}`).set('X-API-Key', adminKey);
        expectError(refused, 400, 'VALIDATION_ERROR');
        expect(refused.body.errors[0].path).toMatch(/^query\.(limit|offset)$/);
      }
      expectError(await h.http.get('/v1/requests?limit=0x10').set('X-API-Key', apiKey), 400, 'VALIDATION_ERROR');
      expectError(await h.http.get('/v1/models/mdl_unknown000/performance?days=1e1').set('X-API-Key', apiKey), 400, 'VALIDATION_ERROR');
      const doc = (await h.http.get('/openapi.json')).body as { paths: Record<string, Record<string, { parameters?: Array<{ in: string; name: string; schema: { type: unknown } }> }>> };
      const integers = Object.values(doc.paths)
        .flatMap((ops) => Object.values(ops))
        .flatMap((op) => (op.parameters ?? []).filter((p) => p.in === 'query' && ['limit', 'offset', 'days'].includes(p.name)));
      expect(integers.length).toBeGreaterThan(20);
      for (const parameter of integers) expect(parameter.schema.type).toBe('integer');
    });

    it('names a multipart "file" sent as a text field (no file name: curl -F "file=<data.csv") instead of refusing it as an unknown key, with no charge (a thirteenth probe)', async () => {
      const { apiKey, account } = await h.provision('build');
      const before = await credits(account.id);
      const csv = ['date,value', ...dailySeriesRows(1, 30).map(({ date, value }) => `${date},${value}`)].join('\n');
      const answers = [
        await h.http.post('/v1/forecast').set('X-API-Key', apiKey).field('target', 'value').field('file', csv),
        await h.http.post('/v1/datasets/validate').set('X-API-Key', apiKey).field('target', 'value').field('file', csv),
      ];
      for (const res of answers) {
        expectError(res, 400, 'VALIDATION_ERROR');
        expect(res.body.messageDetail).toMatch(/^The multipart field "file" arrived as a text field/);
        expect(res.body.errors).toEqual([{ path: 'body.file', message: expect.any(String) }]);
      }
      expect(await credits(account.id)).toBe(before);
    });

    it('answers a second multipart file part with 400, not FILE_TOO_LARGE', async () => {
      const { apiKey } = await h.provision('build');
      const csv = Buffer.from('x,y\n1,2\n');
      const res = await h.http.post('/v1/datasets/validate').set('X-API-Key', apiKey).field('target', 'y').attach('file', csv, 'a.csv').attach('file', csv, 'b.csv');
      expectError(res, 400, 'VALIDATION_ERROR');
    });

    it('names a multipart field sent twice instead of refusing its list of texts in other words (a ninth probe: quantiles=0.1 twice was "quantiles.0: expected number, received string"), with no charge', async () => {
      const { apiKey, modelId, account } = await trainedModel();
      const before = await credits(account.id);
      const body = JSON.stringify(rows(1));
      const twice = await h.http.post(`/v1/models/${modelId}/predict`).set('X-API-Key', apiKey).field('rows', body).field('rows', body);
      expectError(twice, 400, 'VALIDATION_ERROR');
      expect(twice.body.messageDetail).toMatch(/^The multipart field "rows" is sent 2 times; send each field once/);
      const csv = Buffer.from(['date,value', ...dailySeriesRows(1, 30).map(({ date, value }) => `${date},${value}`)].join('\n'));
      const quantiles = await h.http.post('/v1/forecast').set('X-API-Key', apiKey).field('target', 'value').field('quantiles', '0.1').field('quantiles', '0.9').attach('file', csv, 's.csv');
      expectError(quantiles, 400, 'VALIDATION_ERROR');
      expect(quantiles.body.messageDetail).toMatch(/^The multipart field "quantiles" is sent 2 times/);
      const once = await h.http.post('/v1/forecast').set('X-API-Key', apiKey).field('target', 'value').field('horizon', '2').field('quantiles', '0.1,0.9').attach('file', csv, 's.csv');
      expect(once.status).toBe(200);
      expect(once.text.split('\n')[0]).toBe('date,value_prediction,quantile_0.1,quantile_0.9');
      expect(await credits(account.id)).toBe(before - 2);
    });

    it('names a multipart field called __proto__ as not allowed and refuses one called constructor as an unknown field (a ninth probe: "Unrecognized key \\"0\\"" and 500), with no charge', async () => {
      const { apiKey, modelId, account } = await trainedModel();
      const before = await credits(account.id);
      const body = JSON.stringify(rows(2));
      const proto = await h.http.post(`/v1/models/${modelId}/predict`).set('X-API-Key', apiKey).field('__proto__', 'x').field('rows', body);
      expectError(proto, 400, 'VALIDATION_ERROR');
      expect(proto.body.messageDetail).toBe('A multipart field may not be named "__proto__".');
      const upload = await h.http.post('/v1/datasets/validate').set('X-API-Key', apiKey).field('target', 'y').field('__proto__', '{"a":1}').attach('file', Buffer.from('x,y\n1,2\n'), 'a.csv');
      expectError(upload, 400, 'VALIDATION_ERROR');
      expect(upload.body.messageDetail).toContain('__proto__');
      for (const name of ['constructor', 'toString', 'hasOwnProperty']) {
        const res = await h.http.post(`/v1/models/${modelId}/predict`).set('X-API-Key', apiKey).field(name, 'x').field('rows', body);
        expectError(res, 400, 'VALIDATION_ERROR');
        expect(res.body.messageDetail).toBe(`Invalid body: Unrecognized key: "${name}".`);
      }
      expect(await credits(account.id)).toBe(before);
      // the same call without the extra field is read and charged as before
      expect((await h.http.post(`/v1/models/${modelId}/predict`).set('X-API-Key', apiKey).field('rows', body)).status).toBe(200);
      expect(await credits(account.id)).toBe(before - 2);
    });

    it('holds multipart form fields to the plan’s dataset bytes and to 50 fields (an eighth probe: a free plan’s 16 MiB of rows in a `data` field passed its 10 MiB limit, and 1,200 fields beside a 5-byte file were FILE_TOO_LARGE)', async () => {
      const { apiKey } = await h.provision('free');
      // 11 MiB of rows written as JSON in the `data` field: a JSON body so large is 413 DATASET_TOO_LARGE, and so is this
      const row = JSON.stringify({ a: 'x'.repeat(1000), y: 1 });
      const data = `[${Array.from({ length: Math.ceil((11 * 1048576) / row.length) }, () => row).join(',')}]`;
      const big = await h.http.post('/v1/datasets/validate').set('X-API-Key', apiKey).field('target', 'y').field('data', data);
      expectError(big, 413, 'DATASET_TOO_LARGE');
      expect(big.body.messageDetail).toContain('10 MiB');
      let many = h.http.post('/v1/datasets/validate').set('X-API-Key', apiKey).field('target', 'y');
      for (let i = 0; i < 60; i++) many = many.field(`f${i}`, 'v');
      const refused = await many.attach('file', Buffer.from('x,y\n1,2\n'), 'a.csv');
      expectError(refused, 400, 'VALIDATION_ERROR');
      expect(refused.body.messageDetail).toContain('50 form fields');
      // a body within both limits is read as before
      const small = await h.http.post('/v1/datasets/validate').set('X-API-Key', apiKey).field('target', 'y').field('data', JSON.stringify(churnRows(40).map((r, i) => ({ ...r, y: i % 2 }))));
      expect(small.status).toBe(200);
    });

    it('leaves no uploaded file on disk when a multipart upload is refused (a file in another field, a second file or an unstorable field stayed in the temporary directory for good: a seventh probe)', async () => {
      const { apiKey } = await h.provision('build');
      const marker = `leftover_${Math.random().toString(36).slice(2)}`;
      const csv = Buffer.from(`x,${marker}\n1,2\n3,4\n`);
      /** The temporary files (and those one directory down) holding this test's bytes. */
      const leftovers = async (): Promise<string[]> => {
        const found: string[] = [];
        const scan = async (dir: string, depth: number): Promise<void> => {
          for (const entry of await fs.readdir(dir, { withFileTypes: true }).catch(() => [])) {
            const full = path.join(dir, entry.name);
            if (entry.isDirectory() && depth > 0) await scan(full, depth - 1);
            else if (entry.isFile() && (await fs.stat(full).catch(() => null))?.size === csv.length && (await fs.readFile(full).catch(() => Buffer.alloc(0))).includes(marker)) found.push(full);
          }
        };
        await scan(os.tmpdir(), 1);
        return found;
      };
      const refusals = [
        await h.http.post('/v1/datasets/validate').set('X-API-Key', apiKey).field('target', 'y').attach('other', csv, 'a.csv'),
        await h.http.post('/v1/datasets/validate').set('X-API-Key', apiKey).field('target', 'y').attach('file', csv, 'a.csv').attach('file', csv, 'b.csv'),
        await h.http.post('/v1/forecast').set('X-API-Key', apiKey).field('target', 'y').field('item_id', 'a\u0000b').attach('file', csv, 'a.csv'),
        await h.http.post('/v1/models/mdl_unknown000/predict').set('X-API-Key', apiKey).attach('data', csv, 'a.csv'),
      ];
      for (const refused of refusals) expect(refused.status).toBe(400);
      // the exchange's end removes a late file too
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(await leftovers()).toEqual([]);
      // an accepted upload is read as before
      const accepted = await h.http.post('/v1/datasets/validate').set('X-API-Key', apiKey).field('target', 'x').attach('file', csv, 'a.csv');
      expect(accepted.status).toBe(200);
      expect(accepted.body.hint).toContain('got 2');
      expect(await leftovers()).toEqual([]);
    });

    it('names a __proto__ key as not allowed instead of calling the JSON invalid', async () => {
      const { apiKey } = await h.provision('build');
      const res = await h.http.post('/v1/datasets/validate').set('X-API-Key', apiKey).set('Content-Type', 'application/json').send('{"target":"y","data":[{"__proto__":{"x":1},"y":1}]}');
      expectError(res, 400, 'VALIDATION_ERROR');
      expect(res.body.messageDetail).toContain('__proto__');
    });

    it('refuses class labels that are integers beyond 2^53 - 1 (JSON and CSV): 9007199254740993 and 9007199254740992 were one class and 12345678901234567891 was named 12345678901234567000 (a seventh probe)', async () => {
      const { apiKey, account } = await h.provision('build');
      const labels = ['9007199254740993', '9007199254740992', '12345678901234567891'];
      const rows = Array.from({ length: 60 }, (_, i) => `{"a":${(i * 7) % 13},"b":${i % 5},"label":${labels[i % 3]!}}`);
      const json = `{"target":"label","engine":"tabular-gbdt","data":[${rows.join(',')}]}`;
      const validated = await h.http.post('/v1/datasets/validate').set('X-API-Key', apiKey).set('Content-Type', 'application/json').send(json);
      expect(validated.status).toBe(200);
      // was valid, a binary task with the classes 9007199254740992 and 12345678901234567000
      expect([validated.body.valid, validated.body.errors.map((e: { code: string }) => e.code)]).toEqual([false, ['TARGET_NOT_EXACT']]);
      const created = await h.http.post('/v1/models').set('X-API-Key', apiKey).set('Content-Type', 'application/json').send(json);
      expectError(created, 422, 'DATA_VALIDATION_FAILED');
      expect(created.body.report.errors.map((e: { code: string }) => e.code)).toEqual(['TARGET_NOT_EXACT']);
      const csv = ['a,b,label', ...Array.from({ length: 60 }, (_, i) => `${(i * 7) % 13},${i % 5},${labels[i % 3]!}`)].join('\n');
      const fromFile = await h.http.post('/v1/models').set('X-API-Key', apiKey).field('target', 'label').field('engine', 'tabular-gbdt').attach('file', Buffer.from(csv), 'labels.csv');
      expectError(fromFile, 422, 'DATA_VALIDATION_FAILED');
      expect(await h.orm.em.fork().count(ModelSchema, { account: account.id, status: { $ne: 'deleted' } })).toBe(0);
      // labels within 2^53 - 1, and such integers as a regression's quantities, train as before
      const safe = json.replaceAll('9007199254740993', '9007199254740991').replaceAll('9007199254740992', '5').replaceAll('12345678901234567891', '7');
      const fine = await h.http.post('/v1/datasets/validate').set('X-API-Key', apiKey).set('Content-Type', 'application/json').send(safe);
      expect([fine.body.valid, fine.body.report.classes]).toEqual([true, ['5', '7', '9007199254740991']]);
      const quantities = await h.http.post('/v1/datasets/validate').set('X-API-Key', apiKey).set('Content-Type', 'application/json').send(json.replace('"engine"', '"task":"regression","engine"'));
      expect(quantities.body.valid).toBe(true);
    });

    it('refuses class labels longer than 200 characters, which every scored row repeats (a ninth probe: ten labels of 100,000 characters made a 1 KB call of 100 rows answer 110 MB, and one of 600 rows a 500)', async () => {
      const { apiKey, account } = await h.provision('build');
      const data = (length: number) => Array.from({ length: 60 }, (_, i) => ({ a: i % 10, y: String.fromCharCode(97 + (i % 10)).repeat(length) }));
      const validated = await h.http.post('/v1/datasets/validate').set('X-API-Key', apiKey).send({ target: 'y', data: data(201) });
      expect([validated.status, validated.body.valid, validated.body.errors.map((e: { code: string }) => e.code)]).toEqual([200, false, ['CLASS_LABEL_TOO_LONG']]);
      const created = await h.http.post('/v1/models').set('X-API-Key', apiKey).send({ target: 'y', engine: 'tabular-gbdt', data: data(201) });
      expectError(created, 422, 'DATA_VALIDATION_FAILED');
      expect(created.body.report.errors.map((e: { code: string }) => e.code)).toEqual(['CLASS_LABEL_TOO_LONG']);
      expect(await h.orm.em.fork().count(ModelSchema, { account: account.id, status: { $ne: 'deleted' } })).toBe(0);
      const fine = await h.http.post('/v1/models').set('X-API-Key', apiKey).send({ target: 'y', engine: 'tabular-gbdt', data: data(200) });
      expect([fine.status, fine.body.task]).toEqual([201, 'multiclass']);
    });

    it('refuses a feature column named in more than 500 characters, as a target is, on training and validation (a ninth probe: a 10,000,000-character name trained, and every answer about the model carried it)', async () => {
      const { apiKey, account } = await h.provision('build');
      const csv = (length: number) => [`${'c'.repeat(length)},y`, ...Array.from({ length: 40 }, (_, i) => `${i % 7},${i % 7 > 3 ? 'p' : 'q'}`)].join('\n');
      const validated = await h.http.post('/v1/datasets/validate').set('X-API-Key', apiKey).field('target', 'y').attach('file', Buffer.from(csv(501)), 'd.csv');
      expect([validated.status, validated.body.valid, validated.body.errors.map((e: { code: string }) => e.code)]).toEqual([200, false, ['COLUMN_NAME_TOO_LONG']]);
      const created = await h.http.post('/v1/models').set('X-API-Key', apiKey).field('target', 'y').field('engine', 'tabular-gbdt').attach('file', Buffer.from(csv(501)), 'd.csv');
      expectError(created, 422, 'DATA_VALIDATION_FAILED');
      expect(created.body.report.errors.map((e: { code: string }) => e.code)).toEqual(['COLUMN_NAME_TOO_LONG']);
      expect(await h.orm.em.fork().count(ModelSchema, { account: account.id, status: { $ne: 'deleted' } })).toBe(0);
      const fine = await h.http.post('/v1/models').set('X-API-Key', apiKey).field('target', 'y').field('engine', 'tabular-gbdt').attach('file', Buffer.from(csv(500)), 'd.csv');
      expect([fine.status, fine.body.feature_columns]).toEqual([201, ['c'.repeat(500)]]);
    });

    it('refuses data of more than 2,000 feature columns, or of column names longer than 65,536 characters together, on training and validation, and creates nothing (a nineteenth probe: 20,000 columns named in 499 characters trained, and every answer about the model carried 10 MB)', async () => {
      const { apiKey, account } = await h.provision('build');
      const csv = (names: string[]) => [[...names, 'y'].join(','), ...Array.from({ length: 12 }, (_, i) => [...names.map((_, c) => (i * (c + 1)) % 7), i % 2 ? 'p' : 'q'].join(','))].join('\n');
      const cases: Array<[string, string[]]> = [
        ['TOO_MANY_COLUMNS', Array.from({ length: 2_001 }, (_, c) => `c${c}`)],
        ['COLUMN_NAMES_TOO_LONG', Array.from({ length: 132 }, (_, c) => `${c}`.padStart(500, 'c'))],
      ];
      for (const [code, names] of cases) {
        const validated = await h.http.post('/v1/datasets/validate').set('X-API-Key', apiKey).field('target', 'y').attach('file', Buffer.from(csv(names)), 'd.csv');
        expect([validated.status, validated.body.valid, validated.body.errors.map((e: { code: string }) => e.code)]).toEqual([200, false, [code]]);
        const created = await h.http.post('/v1/models').set('X-API-Key', apiKey).field('target', 'y').field('engine', 'tabular-gbdt').attach('file', Buffer.from(csv(names)), 'd.csv');
        expectError(created, 422, 'DATA_VALIDATION_FAILED');
        expect(created.body.report.errors.map((e: { code: string }) => e.code)).toEqual([code]);
      }
      expect(await h.orm.em.fork().count(ModelSchema, { account: account.id })).toBe(0);
      const widest = Array.from({ length: 2_000 }, (_, c) => `c${c}`);
      const fine = await h.http.post('/v1/models').set('X-API-Key', apiKey).field('target', 'y').field('engine', 'tabular-gbdt').attach('file', Buffer.from(csv(widest)), 'd.csv');
      expect([fine.status, fine.body.feature_columns]).toEqual([201, widest]);
    });

    it('names a model created without a name within the rules of a name: a 300-character target answered 500 (the name column holds 200), and one holding U+202E named the model with it (a ninth probe)', async () => {
      const { apiKey } = await h.provision('build');
      const data = (target: string) => Array.from({ length: 30 }, (_, i) => ({ a: i % 7, [target]: i % 7 > 3 ? 'p' : 'q' }));
      const long = 'T'.repeat(300);
      const created = await h.http.post('/v1/models').set('X-API-Key', apiKey).send({ target: long, engine: 'tabular-gbdt', data: data(long) });
      expect(created.status).toBe(201);
      expect([created.body.target, created.body.name]).toEqual([long, `Model of ${'T'.repeat(190)}…`]);
      const reversed = await h.http.post('/v1/models').set('X-API-Key', apiKey).send({ target: '\u202Etxt.exe', engine: 'tabular-gbdt', data: data('\u202Etxt.exe') });
      expect([reversed.status, reversed.body.target, reversed.body.name]).toEqual([201, '\u202Etxt.exe', 'Model of txt.exe']);
      // the name is one a PATCH could have given
      const renamed = await h.http.patch(`/v1/models/${created.body.id as string}`).set('X-API-Key', apiKey).send({ name: created.body.name });
      expect(renamed.status).toBe(200);
    });

    it('refuses regression targets and outcomes beyond ±1e150, whose squares overflow: 422 on training, 400 on outcomes, nothing recorded', async () => {
      const { apiKey, account } = await h.provision('build');
      const data = Array.from({ length: 40 }, (_, i) => ({ a: (i * 7) % 13, b: i % 2 === 0 ? 'x' : 'y', t: 3 * ((i * 7) % 13) + (i % 5) }));
      const huge = await h.http.post('/v1/models').set('X-API-Key', apiKey).send({ target: 't', engine: 'tabular-gbdt', task: 'regression', data: data.map((r, i) => (i === 7 ? { ...r, t: 1e200 } : r)) });
      expectError(huge, 422, 'DATA_VALIDATION_FAILED');
      expect(huge.body.report.errors.map((e: { code: string }) => e.code)).toEqual(['TARGET_OUT_OF_RANGE']);
      expect(await h.orm.em.fork().count(ModelSchema, { account: account.id, status: { $ne: 'deleted' } })).toBe(0);
      const created = await h.http.post('/v1/models').set('X-API-Key', apiKey).send({ target: 't', engine: 'tabular-gbdt', task: 'regression', data });
      expect(created.status).toBe(201);
      for (const actual of [1e200, -2e150, '1e300']) {
        expectError(await h.http.post(`/v1/models/${created.body.id as string}/outcomes`).set('X-API-Key', apiKey).send({ outcomes: [{ features: { a: 1, b: 'x' }, actual }] }), 400, 'VALIDATION_ERROR');
      }
      const kept = await h.http.post(`/v1/models/${created.body.id as string}/outcomes`).set('X-API-Key', apiKey).send({ outcomes: [{ features: { a: 1, b: 'x' }, actual: 1e150 }] });
      expect(kept.status).toBe(201);
      const [outcomes] = await h.orm.em.fork().getConnection().execute<Array<{ n: number }>>(`select count(*)::int as n from outcomes where model_id = ?`, [created.body.id]);
      expect(outcomes!.n).toBe(1);
    });

    it('answers a text/plain body with 415 instead of reading it as an empty object', async () => {
      const { apiKey } = await h.provision('build');
      const res = await h.http.post('/v1/datasets/validate').set('X-API-Key', apiKey).set('Content-Type', 'text/plain').send('target=y');
      expectError(res, 415, 'UNSUPPORTED_MEDIA_TYPE');
    });

    it('answers 415 to a compressed multipart body as to a compressed JSON body, and reads a body whose coding is identity in any case', async () => {
      const { apiKey, modelId, account } = await trainedModel();
      const before = await credits(account.id);
      const csv = ['x1,x2,colour', '12.5,3.1,red'].join('\n');
      const boundary = 'probe5boundary';
      const multipart = Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="rows.csv"\r\nContent-Type: text/csv\r\n\r\n${csv}\r\n--${boundary}--\r\n`,
      );
      const gzipped = zlib.gzipSync(multipart);
      const res = await h.http
        .post(`/v1/models/${modelId}/predict`)
        .set('X-API-Key', apiKey)
        .set('Content-Type', `multipart/form-data; boundary=${boundary}`)
        .set('Content-Encoding', 'gzip')
        .send(gzipped);
      expectError(res, 415, 'UNSUPPORTED_MEDIA_TYPE');
      const json = await h.http
        .post(`/v1/models/${modelId}/predict`)
        .set('X-API-Key', apiKey)
        .set('Content-Type', 'application/json')
        .set('Content-Encoding', 'gzip')
        .send(zlib.gzipSync(JSON.stringify({ rows: rows(1) })));
      expectError(json, 415, 'UNSUPPORTED_MEDIA_TYPE');
      expect(await credits(account.id)).toBe(before);
      // Content codings are case-insensitive: Identity is no coding at all.
      for (const coding of ['Identity', 'identity, IDENTITY']) {
        const plain = await h.http.post(`/v1/models/${modelId}/predict`).set('X-API-Key', apiKey).set('Content-Type', 'application/json').set('Content-Encoding', coding).send(JSON.stringify({ rows: rows(1) }));
        expect(plain.status).toBe(200);
        const form = await h.http.post(`/v1/models/${modelId}/predict`).set('X-API-Key', apiKey).set('Content-Type', `multipart/form-data; boundary=${boundary}`).set('Content-Encoding', coding).send(multipart);
        expect(form.status).toBe(200);
      }
    });

    it('neutralises formula cells echoed into a forecast CSV', async () => {
      const { apiKey } = await h.provision('build');
      const data = ['=HYPERLINK("x")', '@SUM(1)'].flatMap((id) => Array.from({ length: 30 }, (_, i) => ({ id, t: `2026-01-${String(i + 1).padStart(2, '0')}`, y: 5 + (i % 3) })));
      const res = await h.http.post('/v1/forecast').set('X-API-Key', apiKey).send({ target: 'y', item_id: 'id', data, horizon: 2 });
      expect(res.status).toBe(200);
      const cells = res.text.trim().split('\n').slice(1).map((line) => line.split(',')[1]);
      expect(new Set(cells)).toEqual(new Set([`"'=HYPERLINK(""x"")"`, "'@SUM(1)"]));
    });

    it('refuses outcomes whose actual is not a class of the model or whose features do not fit, and records nothing', async () => {
      const { apiKey, modelId } = await trainedModel();
      const features = rows(1)[0]!;
      const bad = [
        { actual: 'maybe', features },
        { actual: 'yes', features: { ...features, x1: 'not a number' } },
        { actual: 'yes', features: { ...features, extra: 1 } },
      ];
      const codes = [];
      for (const outcome of bad) codes.push((await h.http.post(`/v1/models/${modelId}/outcomes`).set('X-API-Key', apiKey).send({ outcomes: [outcome] })).body.message);
      expect(codes).toEqual(['VALIDATION_ERROR', 'SCHEMA_MISMATCH', 'COLUMN_MISMATCH']);
      expect(await h.orm.em.fork().count(OutcomeSchema, { modelId })).toBe(0);
    });

    it('refuses an empty Idempotency-Key with 400 and charges nothing, as it refuses one too long or not visible ASCII (a ninth probe: an empty one was taken for none, and its retry charged again)', async () => {
      const { apiKey, modelId, account } = await trainedModel();
      const before = await credits(account.id);
      const answers = [];
      for (const key of ['', 'k'.repeat(256), 'a\tb', 'clé']) {
        const res = await h.http.post(`/v1/models/${modelId}/predict`).set('X-API-Key', apiKey).set('Idempotency-Key', key).send({ rows: rows(2) });
        answers.push([res.status, res.body.message]);
      }
      expect(answers).toEqual(Array(4).fill([400, 'VALIDATION_ERROR']));
      expect(await credits(account.id)).toBe(before);
      const forecast = await h.http.post('/v1/forecast').set('X-API-Key', apiKey).set('Idempotency-Key', '').send({ target: 'value', timestamp: 'date', data: dailySeriesRows(1, 30).map(({ date, value }) => ({ date, value })), horizon: 2 });
      expectError(forecast, 400, 'VALIDATION_ERROR');
      expect(await credits(account.id)).toBe(before);
    });

    it('records outcomes of a model trained on columns named constructor, __entity and __reference, by features and by request_id, and refreshes on them (a ninth probe: 500 from the ORM\'s insert, so such a model could never be given an outcome)', async () => {
      const account = await h.provision('build');
      const data = Array.from({ length: 60 }, (_, i) => ({ constructor: i % 7, __entity: (i * 5) % 3, __reference: i % 2 ? 'p' : 'q', y: (i % 7) + ((i * 5) % 3) > 4 ? 'hi' : 'lo' }));
      const trained = await h.http.post('/v1/models').set('X-API-Key', account.apiKey).send({ target: 'y', engine: 'tabular-gbdt', data });
      expect(trained.status).toBe(201);
      const modelId = trained.body.id as string;
      const features = { constructor: 6, __entity: 2, __reference: 'p' };
      const scored = await h.http.post(`/v1/models/${modelId}/predict`).set('X-API-Key', account.apiKey).send({ rows: [features] });
      expect(scored.status).toBe(200);
      const outcomes = [
        { features, actual: 'hi' },
        { request_id: scored.body.predictions[0].request_id, actual: 'lo' },
      ];
      const reported = await h.http.post(`/v1/models/${modelId}/outcomes`).set('X-API-Key', account.apiKey).send({ outcomes });
      expect(reported.status).toBe(201);
      expect(reported.body).toEqual(expect.objectContaining({ accepted: 2, pending: 2 }));
      const stored = await h.orm.em.fork().find(OutcomeSchema, { modelId }, { orderBy: { id: 'asc' } });
      expect(stored.map((o) => o.features)).toEqual([features, features]);
      expect(stored.map((o) => o.actual).sort()).toEqual(['hi', 'lo']);
      const refreshed = await h.http.post(`/v1/models/${modelId}/refresh`).set('X-API-Key', account.apiKey);
      expect(refreshed.status).toBe(201);
      expect(refreshed.body.outcomes_folded).toBe(2);
    });

    it('answers every list with the pagination object, and the default model list leaves out models still training', async () => {
      const { apiKey, modelId, workspace, account } = await trainedModel();
      await h.http.post(`/v1/models/${modelId}/predict`).set('X-API-Key', apiKey).send({ rows: rows(3) });
      const em = h.orm.em.fork();
      em.create(ModelSchema, {
        id: 'mdl_stilltrainingxxxxxxxxxx',
        workspace: workspace.id,
        account: account.id,
        name: 'training',
        target: 'y',
        task: 'binary',
        engineId: 'tabular-gbdt',
        featureColumns: [],
        status: 'training',
        explain: false,
        autoUpdate: false,
        currentVersion: null,
        createdAt: new Date(),
        updatedAt: new Date(),
        archivedAt: null,
        deletedAt: null,
      });
      await em.flush();
      const versions = await h.http.get(`/v1/models/${modelId}/versions`).set('X-API-Key', apiKey);
      const predictions = await h.http.get(`/v1/models/${modelId}/predictions?limit=2`).set('X-API-Key', apiKey);
      const requests = await h.http.get('/v1/requests?limit=1').set('X-API-Key', apiKey);
      const models = await h.http.get('/v1/models').set('X-API-Key', apiKey);
      expect(versions.body.pagination).toEqual({ total: 1, limit: 50, offset: 0, has_more: false });
      expect(predictions.body.pagination).toEqual({ total: 3, limit: 2, offset: 0, has_more: true });
      expect(requests.body.pagination).toEqual(expect.objectContaining({ limit: 1, offset: 0, has_more: true }));
      expect(models.body.data.map((m: { id: string }) => m.id)).toEqual([modelId]);

      const session = await signInByMail(h);
      expect((await h.http.post('/v1/workspaces').set('Authorization', session.bearer).send({ name: 'second' })).status).toBe(201);
      const workspaces = await h.http.get('/v1/workspaces?limit=1').set('Authorization', session.bearer);
      expect(workspaces.body.pagination).toEqual({ total: 2, limit: 1, offset: 0, has_more: true });
      expect(workspaces.body.data).toHaveLength(1);
      const rest = await h.http.get('/v1/workspaces?limit=1&offset=1').set('Authorization', session.bearer);
      expect(rest.body.pagination).toEqual({ total: 2, limit: 1, offset: 1, has_more: false });
      expect(rest.body.data[0].name).toBe('second');
      const plans = await h.http.get('/v1/plans');
      expect(plans.body.pagination).toEqual({ total: PLAN_NAMES.length, limit: 50, offset: 0, has_more: false });
      const engines = await h.http.get('/v1/engines?offset=1');
      expect(engines.body.pagination).toEqual({ total: ENGINE_CATALOGUE.length, limit: 50, offset: 1, has_more: false });
      expect(engines.body.data.map((e: { id: string }) => e.id)).toEqual(ENGINE_CATALOGUE.slice(1).map((e) => e.id));
      expectError(await h.http.get('/v1/plans?limit=0'), 400, 'VALIDATION_ERROR');
    });
  });

  describe('bounded work', () => {
    it('a refresh trains on at most the plan\'s training rows: the newest kept, the oldest dropped', async () => {
      const account = await h.provision('free');
      const first = Array.from({ length: 6_000 }, (_, i) => ({ n: i, y: 'a' }));
      const model = await createModelForTraining(h.orm.em.fork(), {
        workspaceId: account.workspace.id,
        accountId: account.account.id,
        name: undefined,
        target: 'y',
        task: 'binary',
        engineId: 'tabular-gbdt',
        explain: false,
        autoUpdate: false,
        rows: first,
      });
      const em = h.orm.em.fork();
      for (const [version, start] of [[2, 6_000], [3, 11_000]] as const) {
        em.create(ContextChunkSchema, {
          id: `evt_chunk${version}xxxxxxxxxxxxxxxxx`,
          model: model.id,
          versionNumber: version,
          rowCount: 5_000,
          data: await gzipJson(Array.from({ length: 5_000 }, (_, i) => ({ n: start + i, y: 'b' }))),
          createdAt: new Date(),
        });
      }
      await em.flush();
      // 16,000 rows in three chunks; the free plan trains on 10,000.
      const rows = await loadContext(h.orm.em.fork(), model.id, 3, 10_000);
      expect(rows).toHaveLength(10_000);
      expect(rows[0]).toEqual({ n: 6_000, y: 'b' });
      expect(rows[rows.length - 1]).toEqual({ n: 15_999, y: 'b' });
      expect((await loadContext(h.orm.em.fork(), model.id, 3)).length).toBe(16_000);
      // what a fit reads: the stored chunks, made into the same rows on its engine thread
      expect(contextRows(await contextChunks(h.orm.em.fork(), model.id, 3, 10_000), 10_000)).toEqual(rows);
      expect(contextRows(await contextChunks(h.orm.em.fork(), model.id, 3, null), null)).toHaveLength(16_000);
    });
  });

  describe('large uploads', () => {
    it('a CSV file large enough to be parsed in the engine pool gives the same report as its JSON rows, and its refusal keeps its code', async () => {
      const { apiKey } = await h.provision('build');
      const data = churnRows(20_000, 4);
      const csv = ['x1,x2,colour,churned', ...data.map((r) => `${r.x1},${r.x2},${r.colour},${r.churned}`)].join('\n');
      expect(Buffer.byteLength(csv)).toBeGreaterThan(256 * 1024);
      const viaFile = await h.http.post('/v1/datasets/validate').set('X-API-Key', apiKey).field('target', 'churned').attach('file', Buffer.from(csv), 'big.csv');
      const viaJson = await h.http.post('/v1/datasets/validate').set('X-API-Key', apiKey).send({ target: 'churned', data });
      expect(viaFile.status).toBe(200);
      expect(viaFile.body.report).toEqual(viaJson.body.report);
      const broken = `${csv}\n"unterminated,1,red,yes`;
      expectError(await h.http.post('/v1/datasets/validate').set('X-API-Key', apiKey).field('target', 'churned').attach('file', Buffer.from(broken), 'big.csv'), 400, 'CSV_UNREADABLE');
    });
  });

  describe('rate limits', () => {
    it('answers 429 RATE_LIMITED with Retry-After and RateLimit headers once the key budget is spent, shared through PostgreSQL', async () => {
      const { apiKey } = await h.provision('free');
      // The free plan's key budget: 10 requests per second over a 10-second window.
      const answers = [];
      for (let i = 0; i < 101; i += 1) answers.push(await h.http.get('/v1/models').set('X-API-Key', apiKey));
      expect(answers.slice(0, 100).every((r) => r.status === 200)).toBe(true);
      expect(answers[0]!.headers['ratelimit-limit']).toBe('100');
      expect(answers[99]!.headers['ratelimit-remaining']).toBe('0');
      const refused = answers[100]!;
      expectError(refused, 429, 'RATE_LIMITED');
      expect(Number(refused.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      const [stored] = await h.orm.em.fork().getConnection().execute<Array<{ points: number }>>(`select points from rate_limits where key like 'key:free:%' order by points desc limit 1`);
      expect(stored?.points).toBeGreaterThanOrEqual(101);
    });

    it('answers a call refused for its kind of key with the RateLimit headers of the budgets it was counted on, as every authenticated answer (a nineteenth probe: 403 and 401 had none)', async () => {
      const { apiKey, adminKey } = await h.provision('free');
      const refusals = [
        [await h.http.get('/v1/api-keys').set('X-API-Key', apiKey), 403, 'ADMIN_KEY_REQUIRED'],
        [await h.http.get('/v1/auth/me').set('X-API-Key', apiKey), 401, 'AUTH_REQUIRED'],
        [await h.http.post('/v1/models/mdl_unknown000/predict').set('X-API-Key', adminKey).send({ rows: [{ a: 1 }] }), 403, 'ADMIN_KEY_CANNOT_PREDICT'],
      ] as const;
      for (const [res, status, code] of refusals) {
        expectError(res, status, code);
        expect({ code, limit: res.headers['ratelimit-limit'], remaining: res.headers['ratelimit-remaining'], reset: res.headers['ratelimit-reset'] }).toEqual({
          code,
          limit: '100',
          remaining: expect.stringMatching(/^\d+$/),
          reset: expect.stringMatching(/^\d+$/),
        });
      }
      // 401/403 still come before a spent budget's 429
      for (let i = 0; i < 100; i += 1) await h.http.get('/v1/models').set('X-API-Key', apiKey);
      const spent = await h.http.get('/v1/api-keys').set('X-API-Key', apiKey);
      expectError(spent, 403, 'ADMIN_KEY_REQUIRED');
      expect(spent.headers['ratelimit-remaining']).toBe('0');
    });

    const workspaceBudget = async (workspaceId: string) => {
      const [row] = await h.orm.em
        .fork()
        .getConnection()
        .execute<Array<{ points: number }>>(`select points from rate_limits where key = ?`, [`workspace:free:${workspaceId}`]);
      return row?.points ?? 0;
    };

    it('counts nothing for a key that may not call: a revoked key cannot spend its workspace budget', async () => {
      const { apiKey, adminKey, workspace } = await h.provision('free');
      const listed = await h.http.get('/v1/api-keys').set('X-API-Key', adminKey);
      const usage = (listed.body.data as Array<{ id: string; kind: string }>).find((k) => k.kind === 'api')!;
      expect((await h.http.delete(`/v1/api-keys/${usage.id}`).set('X-API-Key', adminKey)).status).toBe(204);
      const spent = await workspaceBudget(workspace.id);
      for (let i = 0; i < 30; i += 1) expectError(await h.http.get('/v1/models').set('X-API-Key', apiKey), 401, 'API_KEY_INVALID');
      expect(await workspaceBudget(workspace.id)).toBe(spent);
      // A key that may call does move the counter (by the points its process claims ahead of its calls).
      for (let i = 0; i < 20; i += 1) expect((await h.http.get('/v1/models').set('X-API-Key', adminKey)).status).toBe(200);
      expect(await workspaceBudget(workspace.id)).toBeGreaterThanOrEqual(spent + 20 - BudgetLeases.maxClaim(200));
    });

    it('counts a web session and the API keys of one workspace against the same workspace budget', async () => {
      const session = await signInByMail(h);
      const [workspace] = (await h.http.get('/v1/workspaces').set('Authorization', session.bearer)).body.data as Array<{ id: string }>;
      const before = await workspaceBudget(workspace!.id);
      const key = await h.http.post('/v1/api-keys').set('Authorization', session.bearer).send({ name: 'shared budget' });
      expect(key.status).toBe(201);
      const afterSession = await workspaceBudget(workspace!.id);
      expect(afterSession).toBe(before + 1);
      const byKey = await h.http.get('/v1/models').set('X-API-Key', key.body.secret as string);
      expect(byKey.status).toBe(200);
      expect(await workspaceBudget(workspace!.id)).toBe(afterSession + 1);
      expect(Number(byKey.headers['ratelimit-remaining'])).toBeLessThanOrEqual(200 - (afterSession + 1));
    });

    it('commits the statements of paid calls asynchronously on the call pool, and everything else synchronously', async () => {
      const [onCallPool] = (await h.callPool.query('show synchronous_commit')).rows as Array<{ synchronous_commit: string }>;
      expect(onCallPool?.synchronous_commit).toBe('off');
      const [onOrm] = await h.orm.em.fork().getConnection().execute<Array<{ synchronous_commit: string }>>('show synchronous_commit');
      expect(onOrm?.synchronous_commit).toBe('on');
    });
  });
});
