import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { createStaffAccount } from '../../services/accounts';
import { TEST_ENV, requireEnv } from '../support/env';
import { newId } from '../../services/ids';
import { STAFF_DOMAIN, expectError, mailedCode, signInByMail, startHarness, type Harness } from '../support/harness';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h.stop();
});

const newAddress = () => `${newId('account').toLowerCase()}@example.test`;
const staffAddress = () => `${newId('account').toLowerCase()}@${STAFF_DOMAIN}`;
const STAFF_PASSWORD = 'correct horse battery staple';

async function accountRows(email: string) {
  return h.orm.em.fork().execute<Array<{ id: string; plan: string; workspaces: string }>>(
    `select a.id, a.plan, (select count(*) from workspaces w where w.account_id = a.id) as workspaces from accounts a where a.email = ?`,
    [email],
  );
}

async function backdateChallenge(email: string, seconds: number) {
  await h.orm.em.fork().execute(`update sign_in_challenges set created_at = created_at - make_interval(secs => ?) where email = ? and closed_at is null`, [seconds, email]);
}

describe('login: next step by domain only', () => {
  test('a staff domain answers password and any other address magic_link, whether or not an account exists', async () => {
    const known = await signInByMail(h);
    const answers = await Promise.all([known.email, newAddress()].map((email) => h.http.post('/v1/auth/login').send({ email })));
    for (const res of answers) expect({ status: res.status, body: res.body }).toEqual({ status: 200, body: { next_step: 'magic_link' } });
    const staff = await h.http.post('/v1/auth/login').send({ email: staffAddress() });
    expect({ status: staff.status, body: staff.body }).toEqual({ status: 200, body: { next_step: 'password' } });
  });

  test('a malformed address is a 400 VALIDATION_ERROR', async () => {
    expectError(await h.http.post('/v1/auth/login').send({ email: 'not-an-address' }), 400, 'VALIDATION_ERROR');
  });
});

describe('sign-in methods offered', () => {
  test('the staff password is listed only where staff domains are configured (a sixth probe found it listed on a deployment without any)', async () => {
    expect((await h.http.get('/v1/auth/providers')).body.methods).toEqual(['magic_link', 'password']);
    const plain = await startHarness({ config: { STAFF_EMAIL_DOMAINS: '' } });
    try {
      expect((await plain.http.get('/v1/auth/providers')).body).toEqual({ methods: ['magic_link'], providers: [] });
    } finally {
      await plain.stop();
    }
  });
});

describe('magic link and code', () => {
  test('known and unknown addresses get the same status and body, and each gets its mail', async () => {
    const known = await signInByMail(h);
    await backdateChallenge(known.email, 120);
    const unknown = newAddress();
    const before = h.mailbox.lastId();
    const [a, b] = await Promise.all([known.email, unknown].map((email) => h.http.post('/v1/auth/magic-link/request').send({ email })));
    expect(a!.status).toBe(200);
    expect({ status: b!.status, body: b!.body }).toEqual({ status: a!.status, body: a!.body });
    await mailedCode(h, known.email, before);
    await mailedCode(h, unknown, before);
    expect(await accountRows(unknown)).toEqual([]);
  });

  test('an address of 248 characters (within the 254 of RFC 5321) signs in like any other: login, request and verify', async () => {
    const local = `${newId('account').toLowerCase()}.`.padEnd(60, 'a');
    const email = `${local}@${'b'.repeat(60)}.${'c'.repeat(60)}.${'d'.repeat(60)}.test`;
    expect(email.length).toBe(248);
    const login = await h.http.post('/v1/auth/login').send({ email });
    expect({ status: login.status, body: login.body }).toEqual({ status: 200, body: { next_step: 'magic_link' } });
    const session = await signInByMail(h, email);
    expect(await accountRows(email)).toEqual([{ id: session.accountId, plan: 'free', workspaces: '1' }]);
  });

  test('an address mail cannot reach (more than 254 characters, or more than 64 before the @) is a 400 and sends nothing (a ninth probe: 300 characters before the @ answered 503 SERVICE_UNAVAILABLE)', async () => {
    const before = h.mailbox.lastId();
    const addresses = [`${'a'.repeat(300)}@example.test`, `${'a'.repeat(65)}@example.test`, `a@${'b'.repeat(60)}.${'c'.repeat(60)}.${'d'.repeat(60)}.${'e'.repeat(60)}.${'t'.repeat(9)}`];
    expect(addresses.map((a) => a.length)).toEqual([313, 78, 255]);
    for (const email of addresses) {
      for (const path of ['/v1/auth/login', '/v1/auth/magic-link/request']) expectError(await h.http.post(path).send({ email }), 400, 'VALIDATION_ERROR');
    }
    expect(h.mailbox.lastId()).toBe(before);
    const longest = `${'a'.repeat(64)}@example.test`;
    expect((await h.http.post('/v1/auth/login').send({ email: longest })).status).toBe(200);
  });

  test('an address within the limits that the mail server refuses for good (5xx to the recipient) is a 400 that sends nothing and leaves the address free to sign in later, not a 503 to retry (the fuzzer\'s 254-character address with a label of 63 digits)', async () => {
    const email = `0@${'0'.repeat(63)}.${'a'.repeat(63)}.${'a'.repeat(63)}.${'a'.repeat(60)}`;
    expect(email.length).toBe(254);
    const before = h.mailbox.lastId();
    for (const path of ['/v1/auth/login', '/v1/auth/magic-link/request']) {
      const res = await h.http.post(path).send({ email });
      expectError(res, 400, 'VALIDATION_ERROR');
      expect(res.body.messageDetail).toContain('cannot receive mail');
    }
    expect(h.mailbox.lastId()).toBe(before);
    // the refused attempts hold no once-a-minute slot: no challenge of the address is left open
    const open = await h.orm.em.fork().getConnection().execute<Array<{ n: number }>>(`select count(*)::int as n from sign_in_challenges where email = ? and closed_at is null`, [email]);
    expect(open[0]!.n).toBe(0);
  });

  test('the code creates the account on first verification (free plan, one workspace) and the answer never carries the code or link', async () => {
    const email = newAddress();
    const before = h.mailbox.lastId();
    const requested = await h.http.post('/v1/auth/magic-link/request').send({ email });
    const { code, token } = await mailedCode(h, email, before);
    expect(JSON.stringify(requested.body)).not.toContain(code);
    expect(JSON.stringify(requested.body)).not.toContain(token!);
    const verified = await h.http.post('/v1/auth/magic-link/verify').send({ email, code });
    expect(verified.status).toBe(200);
    expect(verified.body).toEqual(expect.objectContaining({ token_type: 'Bearer', account_created: true, access_token: expect.any(String), refresh_token: expect.stringMatching(/^rt_/) }));
    expect(await accountRows(email)).toEqual([{ id: verified.body.account_id, plan: 'free', workspaces: '1' }]);
    const logs = h.logLines.join('\n');
    expect(logs).not.toContain(token!);
    expect(logs).not.toContain(`"${code}"`);
  });

  test('a link works once, and using it voids the code of the same mail', async () => {
    const email = newAddress();
    const before = h.mailbox.lastId();
    await h.http.post('/v1/auth/magic-link/request').send({ email });
    const { code, token } = await mailedCode(h, email, before);
    expect((await h.http.post('/v1/auth/magic-link/verify').send({ token })).status).toBe(200);
    expectError(await h.http.post('/v1/auth/magic-link/verify').send({ token }), 400, 'MAGIC_LINK_INVALID');
    expectError(await h.http.post('/v1/auth/magic-link/verify').send({ email, code }), 400, 'OTP_INVALID');
  });

  test('the link names its address, and a token sent with another address signs nothing in and stays unspent', async () => {
    const email = newAddress();
    const before = h.mailbox.lastId();
    await h.http.post('/v1/auth/magic-link/request').send({ email });
    const { token, text } = await mailedCode(h, email, before);
    expect(text).toContain(`#token=${encodeURIComponent(token!)}&email=${encodeURIComponent(email)}`);
    expectError(await h.http.post('/v1/auth/magic-link/verify').send({ token, email: newAddress() }), 400, 'MAGIC_LINK_INVALID');
    expect(await accountRows(email)).toEqual([]);
    const verified = await h.http.post('/v1/auth/magic-link/verify').send({ token, email });
    expect(verified.status).toBe(200);
    expect(await accountRows(email)).toEqual([{ id: verified.body.account_id, plan: 'free', workspaces: '1' }]);
    expectError(await h.http.post('/v1/auth/magic-link/verify').send({ token, code: '123456' }), 400, 'VALIDATION_ERROR');
  });

  test('a code works once; a second sign-in of the same address is not a new account', async () => {
    const first = await signInByMail(h);
    await backdateChallenge(first.email, 120);
    const before = h.mailbox.lastId();
    await h.http.post('/v1/auth/magic-link/request').send({ email: first.email });
    const { code } = await mailedCode(h, first.email, before);
    const again = await h.http.post('/v1/auth/magic-link/verify').send({ email: first.email, code });
    expect({ status: again.status, account: again.body.account_id, created: again.body.account_created }).toEqual({ status: 200, account: first.accountId, created: false });
    expectError(await h.http.post('/v1/auth/magic-link/verify').send({ email: first.email, code }), 400, 'OTP_INVALID');
  });

  test('five wrong codes void the code: the fifth answers OTP_TOO_MANY_ATTEMPTS and the right code no longer works', async () => {
    const email = newAddress();
    const before = h.mailbox.lastId();
    await h.http.post('/v1/auth/magic-link/request').send({ email });
    const { code } = await mailedCode(h, email, before);
    const wrong = code === '000000' ? '000001' : '000000';
    for (let i = 1; i <= 4; i += 1) expectError(await h.http.post('/v1/auth/magic-link/verify').send({ email, code: wrong }), 400, 'OTP_INVALID');
    expectError(await h.http.post('/v1/auth/magic-link/verify').send({ email, code: wrong }), 400, 'OTP_TOO_MANY_ATTEMPTS');
    expectError(await h.http.post('/v1/auth/magic-link/verify').send({ email, code }), 400, 'OTP_INVALID');
    expect(await accountRows(email)).toEqual([]);
  });

  test('five wrong codes void the code but not the link mailed with it: anyone can guess codes for any address (a tenth probe voided every link so)', async () => {
    const email = newAddress();
    const before = h.mailbox.lastId();
    await h.http.post('/v1/auth/magic-link/request').send({ email });
    const { code, token } = await mailedCode(h, email, before);
    const wrong = code === '000000' ? '000001' : '000000';
    for (let i = 1; i <= 4; i += 1) expectError(await h.http.post('/v1/auth/magic-link/verify').send({ email, code: wrong }), 400, 'OTP_INVALID');
    expectError(await h.http.post('/v1/auth/magic-link/verify').send({ email, code: wrong }), 400, 'OTP_TOO_MANY_ATTEMPTS');
    // the voided code is never compared again, right or wrong
    expectError(await h.http.post('/v1/auth/magic-link/verify').send({ email, code }), 400, 'OTP_INVALID');
    const linked = await h.http.post('/v1/auth/magic-link/verify').send({ token, email });
    expect({ status: linked.status, created: linked.body.account_created }).toEqual({ status: 200, created: true });
    expectError(await h.http.post('/v1/auth/magic-link/verify').send({ token, email }), 400, 'MAGIC_LINK_INVALID');
  });

  test('an expired link and code are refused', async () => {
    const email = newAddress();
    const before = h.mailbox.lastId();
    await h.http.post('/v1/auth/magic-link/request').send({ email });
    const { code, token } = await mailedCode(h, email, before);
    await h.orm.em.fork().execute(`update sign_in_challenges set expires_at = now() - interval '1 second' where email = ?`, [email]);
    expectError(await h.http.post('/v1/auth/magic-link/verify').send({ email, code }), 400, 'OTP_INVALID');
    expectError(await h.http.post('/v1/auth/magic-link/verify').send({ token }), 400, 'MAGIC_LINK_INVALID');
  });

  test('at most one mail per address per minute; a later request voids the earlier link and code', async () => {
    const email = newAddress();
    const before = h.mailbox.lastId();
    const answers = [];
    for (let i = 0; i < 3; i += 1) answers.push((await h.http.post('/v1/auth/magic-link/request').send({ email })).status);
    expect(answers).toEqual([200, 200, 200]);
    const first = await mailedCode(h, email, before);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(h.mailbox.to(email)).toHaveLength(1);

    await backdateChallenge(email, 61);
    const afterFirst = h.mailbox.lastId();
    expect((await h.http.post('/v1/auth/magic-link/request').send({ email })).status).toBe(200);
    const second = await mailedCode(h, email, afterFirst);
    expectError(await h.http.post('/v1/auth/magic-link/verify').send({ token: first.token }), 400, 'MAGIC_LINK_INVALID');
    expect((await h.http.post('/v1/auth/magic-link/verify').send({ email, code: second.code })).status).toBe(200);
  });

  test('a staff address never signs in by link: 403 STAFF_LOGIN_REQUIRED on request and on verify, and no mail', async () => {
    const email = staffAddress();
    const before = h.mailbox.lastId();
    expectError(await h.http.post('/v1/auth/magic-link/request').send({ email }), 403, 'STAFF_LOGIN_REQUIRED');
    expectError(await h.http.post('/v1/auth/magic-link/verify').send({ email, code: '123456' }), 403, 'STAFF_LOGIN_REQUIRED');
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(h.mailbox.lastId()).toBe(before);
  });

  test('a verify body with neither a token nor an email and code is a 400 VALIDATION_ERROR', async () => {
    expectError(await h.http.post('/v1/auth/magic-link/verify').send({ email: newAddress() }), 400, 'VALIDATION_ERROR');
    expectError(await h.http.post('/v1/auth/magic-link/verify').send({}), 400, 'VALIDATION_ERROR');
  });
});

describe('staff sign-in', () => {
  async function staff() {
    const email = staffAddress();
    await createStaffAccount(h.orm.em.fork(), { email, password: STAFF_PASSWORD, staffDomains: [STAFF_DOMAIN] });
    return email;
  }

  test('password then emailed six-digit code signs in', async () => {
    const email = await staff();
    const before = h.mailbox.lastId();
    const step = await h.http.post('/v1/auth/login/password').send({ email, password: STAFF_PASSWORD });
    expect({ status: step.status, next: step.body.next_step }).toEqual({ status: 202, next: 'code' });
    const { code } = await mailedCode(h, email, before);
    expect(code).toMatch(/^\d{6}$/);
    const verified = await h.http.post('/v1/auth/login/verify').send({ email, code });
    expect(verified.status).toBe(200);
    const me = await h.http.get('/v1/auth/me').set('Authorization', `Bearer ${verified.body.access_token}`);
    expect({ status: me.status, staff: me.body.is_staff, email: me.body.email }).toEqual({ status: 200, staff: true, email });
  });

  test('an unknown staff address and a wrong password answer the same 401, and no code is sent', async () => {
    const email = await staff();
    const before = h.mailbox.lastId();
    const wrong = await h.http.post('/v1/auth/login/password').send({ email, password: 'not the password' });
    const unknown = await h.http.post('/v1/auth/login/password').send({ email: staffAddress(), password: STAFF_PASSWORD });
    const notStaff = await h.http.post('/v1/auth/login/password').send({ email: newAddress(), password: STAFF_PASSWORD });
    for (const res of [wrong, unknown, notStaff]) expectError(res, 401, 'STAFF_LOGIN_INVALID');
    expect(unknown.body).toEqual(wrong.body);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(h.mailbox.lastId()).toBe(before);
  });

  test('wrong codes answer OTP_INVALID, the fifth OTP_TOO_MANY_ATTEMPTS, then the code is void until the password step again', async () => {
    const email = await staff();
    const before = h.mailbox.lastId();
    await h.http.post('/v1/auth/login/password').send({ email, password: STAFF_PASSWORD });
    const { code } = await mailedCode(h, email, before);
    const wrong = code === '999999' ? '999998' : '999999';
    for (let i = 1; i <= 4; i += 1) expectError(await h.http.post('/v1/auth/login/verify').send({ email, code: wrong }), 400, 'OTP_INVALID');
    expectError(await h.http.post('/v1/auth/login/verify').send({ email, code: wrong }), 400, 'OTP_TOO_MANY_ATTEMPTS');
    expectError(await h.http.post('/v1/auth/login/verify').send({ email, code }), 401, 'STAFF_LOGIN_INVALID');
  });

  test('a new password set by the operator ends the sessions and the mailed code the old one opened; the new password signs in (a sixteenth probe: they outlived the reset)', async () => {
    const email = await staff();
    let before = h.mailbox.lastId();
    await h.http.post('/v1/auth/login/password').send({ email, password: STAFF_PASSWORD });
    const signedIn = await h.http.post('/v1/auth/login/verify').send({ email, code: (await mailedCode(h, email, before)).code });
    expect(signedIn.status).toBe(200);
    // a second code mailed on the old password, not yet used
    await h.orm.em.fork().execute(`update sign_in_challenges set created_at = created_at - interval '2 minutes' where email = ?`, [email]);
    before = h.mailbox.lastId();
    expect((await h.http.post('/v1/auth/login/password').send({ email, password: STAFF_PASSWORD })).status).toBe(202);
    const pending = (await mailedCode(h, email, before)).code;

    const newPassword = 'another long staff password';
    expect((await createStaffAccount(h.orm.em.fork(), { email, password: newPassword, staffDomains: [STAFF_DOMAIN] })).created).toBe(false);
    expectError(await h.http.get('/v1/auth/me').set('Authorization', `Bearer ${signedIn.body.access_token}`), 401, 'TOKEN_INVALID');
    expectError(await h.http.post('/v1/auth/refresh').send({ refresh_token: signedIn.body.refresh_token }), 401, 'TOKEN_INVALID');
    expectError(await h.http.post('/v1/auth/login/verify').send({ email, code: pending }), 401, 'STAFF_LOGIN_INVALID');
    expectError(await h.http.post('/v1/auth/login/password').send({ email, password: STAFF_PASSWORD }), 401, 'STAFF_LOGIN_INVALID');

    await h.orm.em.fork().execute(`update sign_in_challenges set created_at = created_at - interval '2 minutes' where email = ?`, [email]);
    before = h.mailbox.lastId();
    expect((await h.http.post('/v1/auth/login/password').send({ email, password: newPassword })).status).toBe(202);
    expect((await h.http.post('/v1/auth/login/verify').send({ email, code: (await mailedCode(h, email, before)).code })).status).toBe(200);
  });

  test('a code for an address that never passed the password step is a 401 STAFF_LOGIN_INVALID', async () => {
    expectError(await h.http.post('/v1/auth/login/verify').send({ email: staffAddress(), code: '123456' }), 401, 'STAFF_LOGIN_INVALID');
  });
});

describe('operator CLI: create-staff', () => {
  const repoRoot = path.resolve(__dirname, '..', '..');
  const admin = (args: string[], env: Record<string, string>) =>
    promisify(execFile)(path.join(repoRoot, 'node_modules', '.bin', 'tsx'), [path.join(repoRoot, 'scripts', 'admin.ts'), ...args], {
      env: { ...process.env, DATABASE_URL: requireEnv(TEST_ENV.databaseUrl), STAFF_EMAIL_DOMAINS: STAFF_DOMAIN, ...env },
      cwd: repoRoot,
    });

  test('creates a staff account from STAFF_PASSWORD that then signs in with that password and the emailed code', async () => {
    const email = staffAddress();
    const { stdout } = await admin(['create-staff', '--email', email], { STAFF_PASSWORD });
    expect(JSON.parse(stdout)).toEqual({ account_id: expect.stringMatching(/^acc_/), email, staff: true, created: true });
    const stored = await h.orm.em.fork().execute<Array<{ password_hash: string }>>(`select password_hash from accounts where email = ?`, [email]);
    expect(stored[0]!.password_hash).toMatch(/^scrypt\$/);
    expect(stored[0]!.password_hash).not.toContain(STAFF_PASSWORD);
    const before = h.mailbox.lastId();
    expect((await h.http.post('/v1/auth/login/password').send({ email, password: STAFF_PASSWORD })).status).toBe(202);
    const { code } = await mailedCode(h, email, before);
    expect((await h.http.post('/v1/auth/login/verify').send({ email, code })).status).toBe(200);
  });

  test('refuses a password given as an argument and an address outside the staff domains', async () => {
    await expect(admin(['create-staff', '--email', staffAddress(), '--password', STAFF_PASSWORD], { STAFF_PASSWORD })).rejects.toMatchObject({ code: 1 });
    await expect(admin(['create-staff', '--email', newAddress()], { STAFF_PASSWORD })).rejects.toMatchObject({ stderr: expect.stringContaining('STAFF_EMAIL_DOMAINS') });
  });
});
