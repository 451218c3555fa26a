import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { AccountSchema, ApiKeySchema, PredictionSchema } from '../../db/entities';
import { churnRows, withoutTarget } from '../support/datasets';
import { signInByMail, startHarness, trainedChurnModel, type Harness } from '../support/harness';

/**
 * A call is authenticated when its headers arrive; its body may follow much later (Node waits up to
 * its requestTimeout, 300 s). A credential ended meanwhile (a signed-out session, a revoked key) must
 * not act once the body is in: a seventeenth probe held a body back, signed out (or revoked the key),
 * then sent it, and the call ran as if nothing had ended.
 */
let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h.stop();
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A POST whose headers go now and whose body goes when `send` is called; `answer` is its response. */
function heldBody(path: string, headers: Record<string, string>, body: unknown) {
  const bytes = Buffer.from(JSON.stringify(body));
  const { port } = h.server.address() as AddressInfo;
  const req = http.request({
    host: '127.0.0.1',
    port,
    method: 'POST',
    path,
    headers: { ...headers, 'content-type': 'application/json', 'content-length': String(bytes.length) },
  });
  const answer = new Promise<{ status: number; body: { message?: string } }>((resolve, reject) => {
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString('utf8') || 'null') as { message?: string } }));
    });
    req.on('error', reject);
  });
  req.flushHeaders();
  return { answer, send: () => req.end(bytes) };
}

describe('a body that arrives after its credential ended', () => {
  test('a session signed out while the body of its call was held back answers 401 TOKEN_INVALID and creates no key', async () => {
    const session = await signInByMail(h);
    const call = heldBody('/v1/api-keys', { authorization: session.bearer }, { name: 'late admin', kind: 'admin' });
    await sleep(300); // the headers are in and authenticated
    expect((await h.http.post('/v1/auth/logout').send({ refresh_token: session.refreshToken })).status).toBe(204);
    await sleep(1200);
    call.send();
    const res = await call.answer;
    expect({ status: res.status, message: res.body.message }).toEqual({ status: 401, message: 'TOKEN_INVALID' });
    const workspaces = await h.orm.em.fork().execute<Array<{ id: string }>>(`select id from workspaces where account_id = ?`, [session.accountId]);
    expect(await h.orm.em.fork().count(ApiKeySchema, { workspace: { $in: workspaces.map((w) => w.id) } })).toBe(0);
  });

  test('an API key revoked while the body of its prediction was held back answers 401 API_KEY_INVALID, charges nothing and stores nothing', async () => {
    const { adminKey, modelId, account } = await trainedChurnModel(h);
    const created = await h.http.post('/v1/api-keys').set('X-API-Key', adminKey).send({ name: 'soon revoked' });
    expect(created.status).toBe(201);
    const before = await h.orm.em.fork().findOneOrFail(AccountSchema, { id: account.id });
    const call = heldBody(`/v1/models/${modelId}/predict`, { 'x-api-key': created.body.secret as string }, { rows: withoutTarget(churnRows(3), 'churned') });
    await sleep(300);
    expect((await h.http.delete(`/v1/api-keys/${created.body.id as string}`).set('X-API-Key', adminKey)).status).toBe(204);
    await sleep(1200);
    call.send();
    const res = await call.answer;
    expect({ status: res.status, message: res.body.message }).toEqual({ status: 401, message: 'API_KEY_INVALID' });
    const after = await h.orm.em.fork().findOneOrFail(AccountSchema, { id: account.id });
    expect(after.allowanceRemaining + after.purchasedBalance).toBe(before.allowanceRemaining + before.purchasedBalance);
    expect(await h.orm.em.fork().count(PredictionSchema, { modelId })).toBe(0);
  });

  test('a body that arrives after a short wait with its credential still valid is served', async () => {
    const { apiKey, modelId } = await trainedChurnModel(h);
    const call = heldBody(`/v1/models/${modelId}/predict`, { 'x-api-key': apiKey }, { rows: withoutTarget(churnRows(2), 'churned') });
    await sleep(1500);
    call.send();
    expect((await call.answer).status).toBe(200);
  });
});
