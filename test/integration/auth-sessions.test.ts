import crypto from 'node:crypto';
import * as jose from 'jose';
import { AccessTokens } from '../../services/auth/access-tokens';
import { expectError, signInByMail, startHarness, type Harness } from '../support/harness';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h.stop();
});

const refresh = (token: string) => h.http.post('/v1/auth/refresh').send({ refresh_token: token });
const me = (accessToken: string) => h.http.get('/v1/auth/me').set('Authorization', `Bearer ${accessToken}`);

describe('access tokens', () => {
  test('a valid access token reaches the account routes; its claims name the account and the session', async () => {
    const session = await signInByMail(h);
    const res = await me(session.accessToken);
    expect({ status: res.status, id: res.body.id, email: res.body.email }).toEqual({ status: 200, id: session.accountId, email: session.email });
    const header = jose.decodeProtectedHeader(session.accessToken);
    const claims = jose.decodeJwt(session.accessToken);
    expect(header).toEqual(expect.objectContaining({ alg: 'EdDSA', kid: expect.any(String) }));
    expect(claims).toEqual(expect.objectContaining({ sub: session.accountId, sid: expect.stringMatching(/^ses_/), iss: h.config.JWT_ISSUER, aud: h.config.JWT_AUDIENCE }));
    expect((claims.exp ?? 0) - (claims.iat ?? 0)).toBe(h.config.ACCESS_TOKEN_TTL_SECONDS);
  });

  test('an expired, a forged, a foreign-audience and a garbage token all answer 401 TOKEN_INVALID on account, admin and usage routes', async () => {
    const session = await signInByMail(h);
    const claims = jose.decodeJwt(session.accessToken);
    const kid = jose.decodeProtectedHeader(session.accessToken).kid!;
    const tokens = AccessTokens.fromConfig(h.config);
    const expired = (await tokens.sign({ accountId: session.accountId, sessionId: String(claims.sid) }, new Date(Date.now() - 3_600_000))).token;
    const { privateKey } = crypto.generateKeyPairSync('ed25519');
    const forged = await new jose.SignJWT({ sid: claims.sid })
      .setProtectedHeader({ alg: 'EdDSA', kid, typ: 'at+jwt' })
      .setSubject(session.accountId)
      .setIssuer(h.config.JWT_ISSUER)
      .setAudience(h.config.JWT_AUDIENCE)
      .setIssuedAt()
      .setExpirationTime('10m')
      .sign(privateKey);
    // Signed with the service's own key, for another audience.
    const foreign = (await AccessTokens.fromConfig({ ...h.config, JWT_AUDIENCE: 'another-service' }).sign({ accountId: session.accountId, sessionId: String(claims.sid) })).token;
    const unsigned = `${session.accessToken.split('.').slice(0, 2).join('.')}.`;
    for (const token of [expired, forged, foreign, unsigned, 'not-a-jwt']) {
      for (const path of ['/v1/auth/me', '/v1/api-keys', '/v1/models']) {
        expectError(await h.http.get(path).set('Authorization', `Bearer ${token}`), 401, 'TOKEN_INVALID');
      }
    }
  });
});

describe('refresh-token rotation', () => {
  test('a renewal gives a new pair and the used refresh token no longer renews', async () => {
    const session = await signInByMail(h);
    const renewed = await refresh(session.refreshToken);
    expect(renewed.status).toBe(200);
    expect(renewed.body.refresh_token).not.toBe(session.refreshToken);
    expect((await me(renewed.body.access_token)).status).toBe(200);
  });

  test('presenting a used refresh token answers 401 and revokes every session of the account (all families)', async () => {
    const first = await signInByMail(h);
    const second = await signInByMail(h, first.email);
    const renewed = await refresh(first.refreshToken);
    expect(renewed.status).toBe(200);

    expectError(await refresh(first.refreshToken), 401, 'TOKEN_INVALID');
    // The thief's replay ends the rotated pair and the account's other sign-in too.
    expectError(await refresh(renewed.body.refresh_token), 401, 'TOKEN_INVALID');
    expectError(await me(renewed.body.access_token), 401, 'TOKEN_INVALID');
    expectError(await me(second.accessToken), 401, 'TOKEN_INVALID');
    expectError(await refresh(second.refreshToken), 401, 'TOKEN_INVALID');
    const open = await h.orm.em.fork().execute<Array<{ n: string }>>(`select count(*) as n from sessions where account_id = ? and revoked_at is null`, [first.accountId]);
    expect(open[0]!.n).toBe('0');
  });

  test('a used refresh token presented again once its session has ended is a 401 that signs nothing out: the sessions opened since stay (a sixteenth probe: one stale token signed the account out everywhere, again and again)', async () => {
    const first = await signInByMail(h);
    expect((await refresh(first.refreshToken)).status).toBe(200);
    // the replay that ends every session of the account
    expectError(await refresh(first.refreshToken), 401, 'TOKEN_INVALID');
    const later = await signInByMail(h, first.email);
    expect((await me(later.accessToken)).status).toBe(200);
    for (let i = 0; i < 2; i += 1) expectError(await refresh(first.refreshToken), 401, 'TOKEN_INVALID');
    expect((await me(later.accessToken)).status).toBe(200);
    const renewed = await refresh(later.refreshToken);
    expect(renewed.status).toBe(200);
    // a used token of a session signed out is no sign of theft either
    expect((await h.http.post('/v1/auth/logout').send({ refresh_token: renewed.body.refresh_token })).status).toBe(204);
    const third = await signInByMail(h, first.email);
    expectError(await refresh(later.refreshToken), 401, 'TOKEN_INVALID');
    expect((await me(third.accessToken)).status).toBe(200);
  });

  test('two concurrent renewals with one token make exactly one new pair', async () => {
    const session = await signInByMail(h);
    const answers = await Promise.all([refresh(session.refreshToken), refresh(session.refreshToken)]);
    expect(answers.map((r) => r.status).sort()).toEqual([200, 401]);
    const made = await h.orm.em.fork().execute<Array<{ n: string }>>(`select count(*) as n from refresh_tokens where account_id = ?`, [session.accountId]);
    expect(made[0]!.n).toBe('2');
  });

  test('an unknown or expired refresh token answers 401 TOKEN_INVALID', async () => {
    expectError(await refresh('rt_unknown'), 401, 'TOKEN_INVALID');
    const session = await signInByMail(h);
    await h.orm.em.fork().execute(`update refresh_tokens set expires_at = now() - interval '1 second' where account_id = ?`, [session.accountId]);
    expectError(await refresh(session.refreshToken), 401, 'TOKEN_INVALID');
  });

  test('logout ends the session at once: its access token and refresh token stop working; a second logout is a 204', async () => {
    const session = await signInByMail(h);
    expect((await h.http.post('/v1/auth/logout').send({ refresh_token: session.refreshToken })).status).toBe(204);
    expectError(await me(session.accessToken), 401, 'TOKEN_INVALID');
    expectError(await refresh(session.refreshToken), 401, 'TOKEN_INVALID');
    expect((await h.http.post('/v1/auth/logout').send({ refresh_token: session.refreshToken })).status).toBe(204);
  });

  test('logout with everywhere ends every session of the account at once (the other sign-ins\' access and refresh tokens stop working) and no other account\'s (a nineteenth probe: nothing ended the other sessions)', async () => {
    const here = await signInByMail(h);
    const elsewhere = await signInByMail(h, here.email);
    const renewedElsewhere = await refresh(elsewhere.refreshToken);
    expect(renewedElsewhere.status).toBe(200);
    const someoneElse = await signInByMail(h);
    expect((await h.http.post('/v1/auth/logout').send({ refresh_token: here.refreshToken, everywhere: true })).status).toBe(204);
    for (const access of [here.accessToken, renewedElsewhere.body.access_token as string]) expectError(await me(access), 401, 'TOKEN_INVALID');
    for (const token of [here.refreshToken, renewedElsewhere.body.refresh_token as string]) expectError(await refresh(token), 401, 'TOKEN_INVALID');
    expect((await me(someoneElse.accessToken)).status).toBe(200);
    const open = await h.orm.em.fork().execute<Array<{ n: string }>>(`select count(*) as n from sessions where account_id = ? and revoked_at is null`, [here.accountId]);
    expect(open[0]!.n).toBe('0');
    // idempotent
    expect((await h.http.post('/v1/auth/logout').send({ refresh_token: here.refreshToken, everywhere: true })).status).toBe(204);
  });

  test('logout everywhere with the token of a session already ended signs nothing out: a stale token cannot end the sessions opened since', async () => {
    const first = await signInByMail(h);
    expect((await h.http.post('/v1/auth/logout').send({ refresh_token: first.refreshToken })).status).toBe(204);
    const later = await signInByMail(h, first.email);
    expect((await h.http.post('/v1/auth/logout').send({ refresh_token: first.refreshToken, everywhere: true })).status).toBe(204);
    expect((await me(later.accessToken)).status).toBe(200);
    expect((await refresh(later.refreshToken)).status).toBe(200);
  });

  test('logout refuses an everywhere that is not a boolean and ends nothing', async () => {
    const session = await signInByMail(h);
    expectError(await h.http.post('/v1/auth/logout').send({ refresh_token: session.refreshToken, everywhere: 'true' }), 400, 'VALIDATION_ERROR');
    expect((await me(session.accessToken)).status).toBe(200);
  });
});
