import { expectError, startHarness, type Harness } from '../support/harness';

describe('GET /v1/geoip behind no trusted proxy', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ config: { TRUSTED_PROXIES: '' } });
  });
  afterAll(async () => {
    await h.stop();
  });

  test('a public address is located to its country from the packaged database', async () => {
    const res = await h.http.get('/v1/geoip').query({ ip: '8.8.8.8' });
    expect({ status: res.status, body: res.body }).toEqual({ status: 200, body: expect.objectContaining({ ip: '8.8.8.8', country: 'US' }) });
    const v6 = await h.http.get('/v1/geoip').query({ ip: '2001:4860:4860::8888' });
    expect({ status: v6.status, country: v6.body.country }).toEqual({ status: 200, country: 'US' });
  });

  test('private, loopback, link-local and IPv4-mapped private addresses answer 422 PRIVATE_IP', async () => {
    for (const ip of ['10.1.2.3', '192.168.0.1', '172.16.5.4', '127.0.0.1', '169.254.169.254', '::1', 'fe80::1', 'fd00::1', '::ffff:10.0.0.1', '100.64.0.1']) {
      expectError(await h.http.get('/v1/geoip').query({ ip }), 422, 'PRIVATE_IP');
    }
  });

  test('the caller is located by its own address: here loopback, so 422; a forged X-Forwarded-For is ignored', async () => {
    expectError(await h.http.get('/v1/geoip'), 422, 'PRIVATE_IP');
    expectError(await h.http.get('/v1/geoip').set('X-Forwarded-For', '8.8.8.8'), 422, 'PRIVATE_IP');
  });

  test('something that is not an address is a 400', async () => {
    expectError(await h.http.get('/v1/geoip').query({ ip: 'localhost' }), 400, 'VALIDATION_ERROR');
  });

  test('inet_aton\'s legacy forms are not addresses (a sixth probe: 010.8.8.8 was located as 8.8.8.8, not 10.8.8.8, and 1.2.3 as 1.2.0.3)', async () => {
    for (const ip of ['010.8.8.8', '1.2.3', '0x8.8.8.8', '134744072', '::ffff:010.0.0.1']) {
      expectError(await h.http.get('/v1/geoip').query({ ip }), 400, 'VALIDATION_ERROR');
    }
    expect((await h.http.get('/v1/geoip').query({ ip: '8.8.8.8' })).body).toEqual(expect.objectContaining({ ip: '8.8.8.8', country: 'US' }));
    expect((await h.http.get('/v1/geoip').query({ ip: '::ffff:8.8.8.8' })).body).toEqual(expect.objectContaining({ ip: '8.8.8.8', country: 'US' }));
  });
});

describe('GET /v1/geoip behind a trusted proxy on loopback', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ config: { TRUSTED_PROXIES: 'loopback' } });
  });
  afterAll(async () => {
    await h.stop();
  });

  test('the client named by the trusted proxy is located; a private client behind it is a 422', async () => {
    const res = await h.http.get('/v1/geoip').set('X-Forwarded-For', '81.2.69.160');
    expect({ status: res.status, ip: res.body.ip, country: res.body.country }).toEqual({ status: 200, ip: '81.2.69.160', country: 'GB' });
    expectError(await h.http.get('/v1/geoip').set('X-Forwarded-For', '10.0.0.7'), 422, 'PRIVATE_IP');
  });

  test('hops the client added before the trusted proxy are not believed: the nearest untrusted hop counts', async () => {
    // The client (10.9.9.9, private) claims to come from 8.8.8.8; the proxy appended what it saw.
    expectError(await h.http.get('/v1/geoip').set('X-Forwarded-For', '8.8.8.8, 10.9.9.9'), 422, 'PRIVATE_IP');
  });
});
