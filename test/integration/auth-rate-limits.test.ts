import pino from 'pino';
import { createActivities } from '../../activities';
import { SIGN_IN_LIMITS } from '../../config/plans';
import { webhookSettings } from '../../services/webhooks/settings';
import { createStaffAccount } from '../../services/accounts';
import { newId } from '../../services/ids';
import { STAFF_DOMAIN, expectError, mailedCode, startHarness, type Harness } from '../support/harness';

let h: Harness;
beforeAll(async () => {
  // The production budgets (scale 1); loopback is a trusted proxy so that each test can be its own client.
  h = await startHarness({ config: { SIGN_IN_BUDGET_SCALE: 1, TRUSTED_PROXIES: 'loopback' } });
});
afterAll(async () => {
  await h.stop();
});

let clientCounter = 0;
const newClient = () => `203.0.113.${(clientCounter += 1)}`;
const address = (domain = 'example.test') => `${newId('account').toLowerCase()}@${domain}`;

test('per address and client: the sixth magic-link request for one address from one client within the hour is a 429 with Retry-After; another client\'s request for it is still taken (a tenth probe: anyone could spend the address\'s budget and lock its owner out), and the inbox gets one mail a minute', async () => {
  const email = address();
  const spender = newClient();
  const budget = SIGN_IN_LIMITS.magic_link_request.perAddress!;
  for (let i = 0; i < budget; i += 1) {
    expect((await h.http.post('/v1/auth/magic-link/request').set('X-Forwarded-For', spender).send({ email })).status).toBe(200);
  }
  const refused = await h.http.post('/v1/auth/magic-link/request').set('X-Forwarded-For', spender).send({ email });
  expectError(refused, 429, 'RATE_LIMITED');
  expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
  // the owner, from another client, is not refused, and the same spender can still ask for another address
  expect((await h.http.post('/v1/auth/magic-link/request').set('X-Forwarded-For', newClient()).send({ email })).status).toBe(200);
  expect((await h.http.post('/v1/auth/magic-link/request').set('X-Forwarded-For', spender).send({ email: address() })).status).toBe(200);
  // seven requests for the address within the minute sent it one mail
  await new Promise((resolve) => setTimeout(resolve, 300));
  expect(h.mailbox.to(email)).toHaveLength(1);
});

test('per address and client: the login step\'s address budget spent by one client leaves the address\'s login to others', async () => {
  const email = address();
  const spender = newClient();
  const budget = SIGN_IN_LIMITS.login.perAddress!;
  for (let i = 0; i < budget; i += 1) {
    expect((await h.http.post('/v1/auth/login').set('X-Forwarded-For', spender).send({ email })).status).toBe(200);
  }
  expectError(await h.http.post('/v1/auth/login').set('X-Forwarded-For', spender).send({ email }), 429, 'RATE_LIMITED');
  expect((await h.http.post('/v1/auth/login').set('X-Forwarded-For', newClient()).send({ email })).status).toBe(200);
});

test('per client: past its budget of password attempts one client gets 429 whatever the address, another client does not', async () => {
  const client = newClient();
  const budget = SIGN_IN_LIMITS.password.perClient;
  for (let i = 0; i < budget; i += 1) {
    const res = await h.http.post('/v1/auth/login/password').set('X-Forwarded-For', client).send({ email: address(STAFF_DOMAIN), password: 'wrong password' });
    expectError(res, 401, 'STAFF_LOGIN_INVALID');
  }
  expectError(await h.http.post('/v1/auth/login/password').set('X-Forwarded-For', client).send({ email: address(STAFF_DOMAIN), password: 'x' }), 429, 'RATE_LIMITED');
  expectError(await h.http.post('/v1/auth/login/password').set('X-Forwarded-For', newClient()).send({ email: address(STAFF_DOMAIN), password: 'x' }), 401, 'STAFF_LOGIN_INVALID');
});

test('per client: an IPv6 client is counted by its /64, so sending each password attempt from a new address of one /64 is refused past the budget; another /64 is another client (a sixteenth probe was never refused)', async () => {
  const prefix = `2001:db8:${(clientCounter += 1).toString(16)}:1`;
  const budget = SIGN_IN_LIMITS.password.perClient;
  for (let i = 0; i < budget; i += 1) {
    const res = await h.http.post('/v1/auth/login/password').set('X-Forwarded-For', `${prefix}::${(i + 1).toString(16)}`).send({ email: address(STAFF_DOMAIN), password: 'wrong password' });
    expectError(res, 401, 'STAFF_LOGIN_INVALID');
  }
  const refused = await h.http.post('/v1/auth/login/password').set('X-Forwarded-For', `${prefix}:ffff:ffff:ffff:fffe`).send({ email: address(STAFF_DOMAIN), password: 'x' });
  expectError(refused, 429, 'RATE_LIMITED');
  const neighbour = `2001:db8:${(clientCounter += 1).toString(16)}:2::1`;
  expectError(await h.http.post('/v1/auth/login/password').set('X-Forwarded-For', neighbour).send({ email: address(STAFF_DOMAIN), password: 'x' }), 401, 'STAFF_LOGIN_INVALID');
});

test('per address: code guesses for one address are limited across clients', async () => {
  const email = address();
  const budget = SIGN_IN_LIMITS.magic_link_verify.perAddress!;
  for (let i = 0; i < budget; i += 1) {
    const res = await h.http.post('/v1/auth/magic-link/verify').set('X-Forwarded-For', newClient()).send({ email, code: '000000' });
    expectError(res, 400, 'OTP_INVALID');
  }
  expectError(await h.http.post('/v1/auth/magic-link/verify').set('X-Forwarded-For', newClient()).send({ email, code: '000000' }), 429, 'RATE_LIMITED');
});

test('per address: wrong codes that spend an address\'s budget leave the link mailed to it usable (a tenth probe kept its owner at 429)', async () => {
  const email = address();
  const before = h.mailbox.lastId();
  expect((await h.http.post('/v1/auth/magic-link/request').set('X-Forwarded-For', newClient()).send({ email })).status).toBe(200);
  const { code, token } = await mailedCode(h, email, before);
  const wrong = code === '000000' ? '000001' : '000000';
  const budget = SIGN_IN_LIMITS.magic_link_verify.perAddress!;
  for (let i = 0; i < budget; i += 1) {
    const res = await h.http.post('/v1/auth/magic-link/verify').set('X-Forwarded-For', newClient()).send({ email, code: wrong });
    expect(res.status).toBe(400);
  }
  expectError(await h.http.post('/v1/auth/magic-link/verify').set('X-Forwarded-For', newClient()).send({ email, code }), 429, 'RATE_LIMITED');
  const linked = await h.http.post('/v1/auth/magic-link/verify').set('X-Forwarded-For', newClient()).send({ token, email });
  expect({ status: linked.status, created: linked.body.account_created }).toEqual({ status: 200, created: true });
});

test('per address and client: wrong passwords and wrong codes sent for a staff address by one client leave its staff free to sign in from theirs (they spent the address\'s budget for everyone, and a staff address has no link to fall back on)', async () => {
  const email = address(STAFF_DOMAIN);
  const password = 'a staff password long enough';
  await createStaffAccount(h.orm.em.fork(), { email, password, staffDomains: [STAFF_DOMAIN] });
  const spender = newClient();
  for (let i = 0; i < SIGN_IN_LIMITS.password.perAddress!; i += 1) {
    expectError(await h.http.post('/v1/auth/login/password').set('X-Forwarded-For', spender).send({ email, password: 'wrong password' }), 401, 'STAFF_LOGIN_INVALID');
  }
  expectError(await h.http.post('/v1/auth/login/password').set('X-Forwarded-For', spender).send({ email, password }), 429, 'RATE_LIMITED');
  for (let i = 0; i < SIGN_IN_LIMITS.code_verify.perAddress!; i += 1) {
    expectError(await h.http.post('/v1/auth/login/verify').set('X-Forwarded-For', spender).send({ email, code: '000000' }), 401, 'STAFF_LOGIN_INVALID');
  }
  expectError(await h.http.post('/v1/auth/login/verify').set('X-Forwarded-For', spender).send({ email, code: '000000' }), 429, 'RATE_LIMITED');
  const staffClient = newClient();
  const before = h.mailbox.lastId();
  expect((await h.http.post('/v1/auth/login/password').set('X-Forwarded-For', staffClient).send({ email, password })).status).toBe(202);
  const { code } = await mailedCode(h, email, before);
  const signedIn = await h.http.post('/v1/auth/login/verify').set('X-Forwarded-For', staffClient).send({ email, code });
  expect(signedIn.status).toBe(200);
});

test('the periodic sweep removes budget counters whose window ended an hour ago, and keeps the others (a seventeenth probe: each sign-in of a new address from a client left its row for good)', async () => {
  const email = address();
  const client = newClient();
  expect((await h.http.post('/v1/auth/login').set('X-Forwarded-For', client).send({ email })).status).toBe(200);
  const em = h.orm.em.fork();
  const rows = async () =>
    (await em.execute<Array<{ key: string }>>(`select key from rate_limits where key like ? or key like ? order by key`, [`%${email}%`, `%:client:${client}`])).map((r) => r.key);
  const counters = await rows();
  const stale = counters.find((key) => key.includes(email));
  const live = counters.filter((key) => key !== stale);
  // the address's counter and the client's
  expect({ stale: stale !== undefined, live: live.length }).toEqual({ stale: true, live: 1 });
  await em.execute(`update rate_limits set expire = ? where key = ?`, [Date.now() - 3_600_000 - 60_000, stale]);
  const activities = createActivities({ orm: h.orm, logger: pino({ level: 'silent' }), enginePool: h.enginePool, strandedAfterMs: 120_000, fitHeartbeatTimeoutMs: 30_000, webhooks: webhookSettings(h.config).delivery, stripe: null });
  const swept = await activities.sweepEndedKeys();
  expect(swept.rateLimitsPruned).toBeGreaterThanOrEqual(1);
  expect(await rows()).toEqual(live);
});
