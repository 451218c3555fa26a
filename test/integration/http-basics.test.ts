import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import zlib from 'node:zlib';
import getRawBody from 'raw-body';
import Koa from 'koa';
import { createHttpServer } from '../../api/server';
import { Client, Connection } from '@temporalio/client';
import pino from 'pino';
import request from 'supertest';
import { createApp } from '../../api/app';
import { loadConfig } from '../../config/env';
import { ensureConsoleBuilt } from '../../scripts/lib/console-build';
import { openCallPool } from '../../db/call-pool';
import { openOrm } from '../../db/orm';
import { EnginePool } from '../../services/engine-pool';
import { RequestLogWriter } from '../../services/request-log';
import { TemporalGateway } from '../../services/temporal/gateway';
import { TEST_ENV, requireEnv } from '../support/env';
import { checkedAgent, expectError, signInByMail, startHarness, trainedChurnModel, type Harness } from '../support/harness';

/**
 * What a raw connection receives after sending `sent` as is, until the server closes it, or until
 * `endAfterMs` when the server may keep it alive.
 */
function rawExchange(port: number, sent: string | Buffer, endAfterMs?: number): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => socket.write(sent));
    let received = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => (received += chunk));
    socket.on('close', () => resolve(received));
    socket.on('error', reject);
    if (endAfterMs !== undefined) setTimeout(() => socket.end(), endAfterMs);
  });
}

describe('HTTP conventions', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ config: { JSON_BODY_LIMIT_BYTES: 4096 } });
  });
  afterAll(() => h.stop());

  it('answers an unknown route with 404 NOT_FOUND in the envelope and an x-request-id', async () => {
    const res = await h.http.get('/v1/no-such-route');
    expectError(res, 404, 'NOT_FOUND');
  });

  it('answers headers larger than the server reads with 431 in the envelope and an x-request-id, not Node\'s bare status line', async () => {
    const { port } = h.server.address() as AddressInfo;
    const answer = await new Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }>((resolve, reject) => {
      const req = http.get({ host: '127.0.0.1', port, path: '/v1/models', headers: { 'X-Big': 'a'.repeat(20_000) } }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (body += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      });
      req.on('error', reject);
    });
    expect(answer.status).toBe(431);
    expect(answer.headers['x-request-id']).toMatch(/^req_/);
    expect(JSON.parse(answer.body)).toEqual({ status: 'error', message: 'HEADERS_TOO_LARGE', messageDetail: expect.stringContaining('headers') });
  });

  it('answers an HTTP/1.1 request without a Host header with 400 BAD_REQUEST in the envelope and an x-request-id, not Node\'s bare 400 (a seventeenth probe)', async () => {
    const { port } = h.server.address() as AddressInfo;
    const raw = await rawExchange(port, 'GET /health HTTP/1.1\r\nConnection: close\r\n\r\n');
    expect(raw).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
    expect(raw).toMatch(/\r\nx-request-id: req_[0-9A-Za-z]{22}\r\n/i);
    expect(JSON.parse(raw.slice(raw.indexOf('\r\n\r\n') + 4))).toEqual({ status: 'error', message: 'BAD_REQUEST', messageDetail: expect.stringContaining('Host') });
    // HTTP/1.0 needs none, and a request with one is served as before
    const old = await rawExchange(port, 'GET /v1/engines HTTP/1.0\r\n\r\n');
    expect(old).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
  });

  it('answers an Expect other than 100-continue with 417 and a CONNECT with 405, each in the envelope with an x-request-id (an eighteenth probe: Node answered a bare 417 with no body, and closed a CONNECT without a word)', async () => {
    const { port } = h.server.address() as AddressInfo;
    const exchange = (text: string) => rawExchange(port, text, 2000);
    const envelope = (raw: string) => JSON.parse(raw.slice(raw.indexOf('\r\n\r\n') + 4)) as unknown;
    const expectation = await exchange('POST /v1/auth/login HTTP/1.1\r\nHost: x\r\nExpect: 200-ok\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}');
    expect(expectation).toMatch(/^HTTP\/1\.1 417 Expectation Failed\r\n/);
    expect(expectation).toMatch(/\r\nx-request-id: req_[0-9A-Za-z]{22}\r\n/i);
    expect(envelope(expectation)).toEqual({ status: 'error', message: 'EXPECTATION_FAILED', messageDetail: expect.stringContaining('100-continue') });
    const connect = await exchange('CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n');
    expect(connect).toMatch(/^HTTP\/1\.1 405 Method Not Allowed\r\n/);
    expect(connect).toMatch(/\r\nx-request-id: req_[0-9A-Za-z]{22}\r\n/i);
    expect(envelope(connect)).toEqual({ status: 'error', message: 'METHOD_NOT_ALLOWED', messageDetail: expect.stringContaining('CONNECT') });
    // 100-continue is met as before: the body follows and the call is answered
    const continued = await exchange('POST /v1/auth/login HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}');
    expect(continued).toMatch(/^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 400 Bad Request\r\n/);
  });

  it('answers 415 to a body sent with a transfer coding besides chunked (gzip, chunked), as to a compressed Content-Encoding, and creates nothing (an eighteenth probe: 400 INVALID_JSON "not valid UTF-8")', async () => {
    const { adminKey, apiKey } = await h.provision();
    const { port } = h.server.address() as AddressInfo;
    const send = (path: string, key: string, contentType: string, transferEncoding: string, body: Buffer) =>
      rawExchange(
        port,
        Buffer.concat([
          Buffer.from(`POST ${path} HTTP/1.1\r\nHost: x\r\nX-API-Key: ${key}\r\nContent-Type: ${contentType}\r\nTransfer-Encoding: ${transferEncoding}\r\nConnection: close\r\n\r\n`),
          Buffer.from(`${body.length.toString(16)}\r\n`),
          body,
          Buffer.from('\r\n0\r\n\r\n'),
        ]),
      );
    const code = (raw: string) => ({ status: raw.split('\r\n')[0], message: (JSON.parse(raw.slice(raw.indexOf('\r\n\r\n') + 4)) as { message: string }).message });
    const named = await h.http.get('/v1/api-keys').set('X-API-Key', adminKey);
    for (const coding of ['gzip, chunked', 'deflate, chunked', 'x-custom, chunked']) {
      expect(code(await send('/v1/api-keys', adminKey, 'application/json', coding, zlib.gzipSync('{"name":"gz"}')))).toEqual({ status: 'HTTP/1.1 415 Unsupported Media Type', message: 'UNSUPPORTED_MEDIA_TYPE' });
    }
    const form = Buffer.from('--b\r\nContent-Disposition: form-data; name="target"\r\n\r\ny\r\n--b--\r\n');
    expect(code(await send('/v1/datasets/validate', apiKey, 'multipart/form-data; boundary=b', 'gzip, chunked', zlib.gzipSync(form)))).toEqual({ status: 'HTTP/1.1 415 Unsupported Media Type', message: 'UNSUPPORTED_MEDIA_TYPE' });
    expect((await h.http.get('/v1/api-keys').set('X-API-Key', adminKey)).body.pagination.total).toBe(named.body.pagination.total);
    // chunked alone, or with identity, is read as before
    expect(code(await send('/v1/api-keys', adminKey, 'application/json', 'identity, chunked', Buffer.from('{"name":"plain"}'))).status).toBe('HTTP/1.1 201 Created');
  });

  it('gives every response, success included, its own x-request-id', async () => {
    const [a, b] = await Promise.all([h.http.get('/v1/engines'), h.http.get('/v1/engines')]);
    expect(a.status).toBe(200);
    expect(a.headers['x-request-id']).toMatch(/^req_/);
    expect(a.headers['x-request-id']).not.toEqual(b.headers['x-request-id']);
  });

  it('marks every API answer Cache-Control: no-store: secrets shown once, tokens, and workspace data read with X-API-Key (a sixth probe found no Cache-Control at all)', async () => {
    const { adminKey, apiKey } = await h.provision();
    const session = await signInByMail(h);
    const answers = [
      await h.http.post('/v1/api-keys').set('X-API-Key', adminKey).send({ name: 'cached?' }),
      await h.http.get('/v1/models').set('X-API-Key', apiKey),
      await h.http.get('/v1/auth/me').set('Authorization', session.bearer),
      await h.http.post('/v1/auth/refresh').send({ refresh_token: session.refreshToken }),
      await h.http.get('/v1/models/mdl_unknown000').set('X-API-Key', apiKey),
      await h.http.get('/v1/engines'),
    ];
    expect(answers.map((r) => r.status)).toEqual([201, 200, 200, 200, 404, 200]);
    for (const answer of answers) expect(answer.headers['cache-control']).toBe('no-store');
  });

  it('sends X-Content-Type-Options: nosniff with every answer, errors and the pages included, and X-Frame-Options: DENY with /docs (an eleventh probe: only console files had them)', async () => {
    const { apiKey } = await h.provision();
    const answers = [
      await h.http.get('/v1/models').set('X-API-Key', apiKey),
      await h.http.get('/v1/models/mdl_unknown000').set('X-API-Key', apiKey),
      await h.http.get('/no/such/route'),
      await h.http.get('/openapi.json'),
      await h.http.get('/health'),
      await h.http.get('/metrics'),
      // pages, not operations of the contract
      await request(h.server).get('/docs'),
      await request(h.server).get('/docs/init.js'),
    ];
    expect(answers.map((r) => r.status)).toEqual([200, 404, 404, 200, 200, 200, 200, 200]);
    for (const answer of answers) expect(answer.headers['x-content-type-options']).toBe('nosniff');
    expect(answers[6]!.headers['x-frame-options']).toBe('DENY');
  });

  it('answers malformed JSON with 400 INVALID_JSON', async () => {
    const { adminKey } = await h.provision();
    const res = await h.http.post('/v1/api-keys').set('X-API-Key', adminKey).set('content-type', 'application/json').send('{"name": ');
    expectError(res, 400, 'INVALID_JSON');
  });

  it('answers a JSON body that is not UTF-8 with 400 INVALID_JSON and stores nothing (latin-1 "café" was stored as "caf\uFFFD", a sixth probe)', async () => {
    const { adminKey } = await h.provision();
    const listed = async () => (await h.http.get('/v1/api-keys').set('X-API-Key', adminKey)).body.data.map((k: { name: string }) => k.name) as string[];
    const before = await listed();
    for (const [contentType, bytes] of [
      ['application/json; charset=iso-8859-1', Buffer.from('{"name":"caf\xe9"}', 'latin1')],
      ['application/json', Buffer.from([...Buffer.from('{"name":"'), 0xed, 0xa0, 0x80, ...Buffer.from('"}')])],
    ] as const) {
      const res = await h.http.post('/v1/api-keys').set('X-API-Key', adminKey).set('content-type', contentType).serialize((b) => b).send(bytes);
      expectError(res, 400, 'INVALID_JSON');
      expect(res.body.messageDetail).toMatch(/UTF-8/);
    }
    expect(await listed()).toEqual(before);
    // UTF-8, with or without its byte order mark, is read as before
    const created = await h.http.post('/v1/api-keys').set('X-API-Key', adminKey).set('content-type', 'application/json').serialize((b) => b).send(Buffer.from('\ufeff{"name":"café"}', 'utf8'));
    expect(created.status).toBe(201);
    expect(created.body.name).toBe('café');
  });

  it('answers a schema violation with 400 VALIDATION_ERROR naming the field, and creates nothing', async () => {
    const { adminKey } = await h.provision();
    const before = await h.http.get('/v1/api-keys').set('X-API-Key', adminKey);
    const res = await h.http.post('/v1/api-keys').set('X-API-Key', adminKey).send({ name: '', colour: 'red' });
    expectError(res, 400, 'VALIDATION_ERROR');
    expect(res.body.errors.map((e: { path: string }) => e.path)).toEqual(expect.arrayContaining(['body.name']));
    const after = await h.http.get('/v1/api-keys').set('X-API-Key', adminKey);
    expect(after.body.pagination.total).toBe(before.body.pagination.total);
  });

  it('refuses a body on a route that takes none with 400 VALIDATION_ERROR and does nothing; no body, blanks or {} are served as before (an eighteenth probe: a refresh sent {"engine": …} refreshed on the current engine, a deletion or revocation with options ran with them ignored)', async () => {
    const { apiKey, adminKey, modelId } = await trainedChurnModel(h);
    const key = await h.http.post('/v1/api-keys').set('X-API-Key', adminKey).send({ name: 'kept' });
    expect(key.status).toBe(201);
    const refused = [
      await h.http.post(`/v1/models/${modelId}/refresh`).set('X-API-Key', apiKey).send({ engine: 'tabular-gbdt' }),
      await h.http.post(`/v1/models/${modelId}/archive`).set('X-API-Key', apiKey).send({ reason: 'unused' }),
      await h.http.delete(`/v1/models/${modelId}`).set('X-API-Key', apiKey).send({ permanent: false }),
      await h.http.delete(`/v1/api-keys/${key.body.id}`).set('X-API-Key', adminKey).send({ reason: 'rotation' }),
      await h.http.post(`/v1/models/${modelId}/archive`).set('X-API-Key', apiKey).set('content-type', 'text/plain').send('archive it'),
      await h.http.post(`/v1/models/${modelId}/archive`).set('X-API-Key', apiKey).set('content-type', 'application/json').send('null'),
      await h.http.post(`/v1/models/${modelId}/archive`).set('X-API-Key', apiKey).set('content-type', 'application/json').send('{"reason": '),
    ];
    for (const res of refused) {
      expectError(res, 400, 'VALIDATION_ERROR');
      expect(res.body.errors).toEqual([{ path: 'body', message: expect.stringContaining('no body') }]);
    }
    expect((await h.http.get(`/v1/models/${modelId}`).set('X-API-Key', apiKey)).body.status).toBe('serving');
    const keys = await h.http.get('/v1/api-keys').set('X-API-Key', adminKey);
    expect(keys.body.data.find((k: { id: string }) => k.id === key.body.id).status).toBe('active');
    // what clients send to such routes (the console sends {}) is served as before
    expect((await h.http.post(`/v1/models/${modelId}/archive`).set('X-API-Key', apiKey).send({})).status).toBe(204);
    expect((await h.http.post(`/v1/models/${modelId}/restore`).set('X-API-Key', apiKey)).status).toBe(200);
    expect((await h.http.post(`/v1/models/${modelId}/archive`).set('X-API-Key', apiKey).set('content-type', 'application/json').send(' \n')).status).toBe(204);
    expect((await h.http.delete(`/v1/api-keys/${key.body.id}`).set('X-API-Key', adminKey).set('content-type', 'application/json').send('{ }')).status).toBe(204);
  });

  it('refuses a JSON body of null with 400 VALIDATION_ERROR like any body that is not an object, and does nothing (an eighteenth probe: null was read as {}, so a rotation sent null rotated with the default grace)', async () => {
    const { adminKey } = await h.provision();
    const key = await h.http.post('/v1/api-keys').set('X-API-Key', adminKey).send({ name: 'rotate me?' });
    expect(key.status).toBe(201);
    for (const body of ['null', '[]', '0']) {
      const res = await h.http.post(`/v1/api-keys/${key.body.id}/rotate`).set('X-API-Key', adminKey).set('content-type', 'application/json').send(body);
      expectError(res, 400, 'VALIDATION_ERROR');
      expect(res.body.errors).toEqual([{ path: 'body', message: expect.stringMatching(/expected object/) }]);
    }
    const keys = await h.http.get('/v1/api-keys').set('X-API-Key', adminKey);
    expect(keys.body.data.filter((k: { name: string }) => k.name === 'rotate me?').map((k: { status: string }) => k.status)).toEqual(['active']);
  });

  it('answers a body over the size limit with 413 PAYLOAD_TOO_LARGE', async () => {
    const { adminKey } = await h.provision();
    const res = await h.http
      .post('/v1/api-keys')
      .set('X-API-Key', adminKey)
      .send({ name: 'x'.repeat(10_000) });
    expectError(res, 413, 'PAYLOAD_TOO_LARGE');
  });

  it('answers a wrong method on a known path with 405 METHOD_NOT_ALLOWED', async () => {
    const res = await h.http.put('/v1/engines');
    expectError(res, 405, 'METHOD_NOT_ALLOWED');
  });

  it('answers OPTIONS on an API path 204 with the methods it allows, no body and Cache-Control: no-store, and OPTIONS on no path 404 (a twenty-fourth probe: 200 text/plain that caches could keep)', async () => {
    const { apiKey } = await h.provision();
    const res = await request(h.server).options('/v1/models').set('X-API-Key', apiKey);
    expect(res.status).toBe(204);
    expect(res.headers['allow']!.split(/,\s*/).sort()).toEqual(['GET', 'HEAD', 'POST']);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.headers['content-type']).toBeUndefined();
    expect(res.text).toBe('');
    expectError(await request(h.server).options('/v1/no-such-route'), 404, 'NOT_FOUND');
  });

  it('sends people at the service root to the console, serves the console page under /console/index.html as under /console (a twenty-fourth probe: both were 404), and answers the pages other methods than GET and HEAD with their Allow', async () => {
    const root = await request(h.server).get('/');
    expect([root.status, root.headers['location']]).toEqual([302, '/console']);
    // the pages are read only: OPTIONS lists GET and HEAD, another method is 405 (a twenty-sixth probe: 404)
    for (const path of ['/', '/console', '/console/index.html', '/docs']) {
      const options = await request(h.server).options(path);
      expect([options.status, options.headers['allow']]).toEqual([204, 'GET, HEAD']);
      const posted = await request(h.server).post(path);
      expectError(posted, 405, 'METHOD_NOT_ALLOWED');
      expect(posted.headers['allow']).toBe('GET, HEAD');
    }
    await ensureConsoleBuilt(h.config.CONSOLE_DIR);
    const [page, byName] = [await request(h.server).get('/console'), await request(h.server).get('/console/index.html')];
    expect([page.status, byName.status]).toEqual([200, 200]);
    expect(page.headers['content-type']).toMatch(/^text\/html/);
    expect(byName.text).toBe(page.text);
    expect(byName.headers['content-type']).toBe(page.headers['content-type']);
  });

  it('lists the engines publicly with their per-row credit price', async () => {
    const res = await h.http.get('/v1/engines');
    expect(res.status).toBe(200);
    const tabular = res.body.data.find((e: { kind: string }) => e.kind === 'tabular');
    expect(tabular).toEqual(expect.objectContaining({ id: 'tabular-gbdt', credit_price_per_row: 1, tasks: ['binary', 'multiclass', 'regression'] }));
    expect(res.body.data.map((e: { kind: string }) => e.kind)).toEqual(expect.arrayContaining(['tabular', 'forecast']));
  });

  it('reports health 200 when PostgreSQL and Temporal both answer', async () => {
    const res = await h.http.get('/health');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      status: 'ok',
      dependencies: { postgres: expect.objectContaining({ status: 'up' }), temporal: expect.objectContaining({ status: 'up' }) },
    });
  });
});

describe('HTTP conventions for slow clients', () => {
  /** What a raw connection receives after sending `sent` and nothing more, until the server closes it. */
  async function answerTo(server: http.Server, sent: string): Promise<string> {
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    try {
      return await rawExchange(port, sent);
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  }

  it('answers a request whose headers or body do not arrive in time with 408 REQUEST_TIMEOUT in the envelope (it was 400 BAD_REQUEST "not valid HTTP", written even after the request had its answer: a thirteenth probe)', async () => {
    const app = new Koa();
    app.use(async (ctx) => {
      if (ctx.path === '/early') {
        // answered before its body is read, as a body over the limit or an unknown key is
        ctx.status = 413;
        ctx.body = { status: 'error', message: 'PAYLOAD_TOO_LARGE' };
        return;
      }
      ctx.body = await getRawBody(ctx.req);
    });
    const timeouts = { connectionsCheckingInterval: 50, headersTimeout: 200, requestTimeout: 400 };
    const slowHeaders = await answerTo(createHttpServer(app, timeouts), 'GET /v1/models HTTP/1.1\r\nHost: x\r\n');
    expect(slowHeaders).toMatch(/^HTTP\/1\.1 408 Request Timeout\r\n/);
    expect(slowHeaders).toMatch(/\r\nx-request-id: req_/);
    expect(JSON.parse(slowHeaders.slice(slowHeaders.indexOf('\r\n\r\n') + 4))).toEqual({ status: 'error', message: 'REQUEST_TIMEOUT', messageDetail: expect.any(String) });
    const slowBody = await answerTo(createHttpServer(app, timeouts), 'POST /v1/forecast HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"tar');
    expect(slowBody).toMatch(/^HTTP\/1\.1 408 Request Timeout\r\n/);
    // a request answered already whose body then stops gets no second answer (one to no request): closed
    const answered = await answerTo(createHttpServer(app, timeouts), 'POST /early HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{"tar');
    expect(answered).toMatch(/^HTTP\/1\.1 413 /);
    expect(answered.match(/HTTP\/1\.1 /g)).toHaveLength(1);
  });
});

describe('HTTP conventions when a dependency is down', () => {
  const config = () => loadConfig({}, { NODE_ENV: 'test', DATABASE_URL: requireEnv(TEST_ENV.databaseUrl) });
  const silent = pino({ level: 'silent' });

  it('reports 503 naming Temporal when Temporal does not answer, without the client\'s error (its address) in the public answer', async () => {
    const orm = await openOrm(requireEnv(TEST_ENV.databaseUrl), 2);
    const callPool = openCallPool(requireEnv(TEST_ENV.databaseUrl), 2);
    const deadTemporal = new TemporalGateway(new Client({ connection: Connection.lazy({ address: '127.0.0.1:1' }) }), 'none');
    const app = createApp({ config: config(), orm, callPool, temporal: deadTemporal, logger: silent, enginePool: new EnginePool(1, 0), requestLog: new RequestLogWriter(orm, silent) });
    const server = createHttpServer(app);
    try {
      const res = await (await checkedAgent(server)).get('/health');
      expectError(res, 503, 'DEPENDENCY_UNAVAILABLE');
      expect(res.body.messageDetail).toBe('Temporal does not answer.');
      expect(res.body.dependencies.postgres.status).toBe('up');
      expect(res.body.dependencies.temporal.status).toBe('down');
      // public: the client's error names the address it dialled; the answer says only what kind of failure
      expect(['unreachable', 'no answer within 2000 ms']).toContain(res.body.dependencies.temporal.error);
      expect(JSON.stringify(res.body)).not.toContain('127.0.0.1');
    } finally {
      await orm.close();
      await callPool.end();
    }
  });

  it('reports 503 naming PostgreSQL when the database does not answer, its cause as `unreachable` (never the driver\'s message), and hides internals behind a generic 500 elsewhere', async () => {
    const orm = await openOrm(requireEnv(TEST_ENV.databaseUrl), 2);
    const connection = await Connection.connect({ address: requireEnv(TEST_ENV.temporalAddress) });
    const lines: string[] = [];
    const logger = pino({ level: 'error' }, { write: (line: string) => lines.push(line) });
    const callPool = openCallPool(requireEnv(TEST_ENV.databaseUrl), 2);
    const app = createApp({
      config: config(),
      orm,
      callPool,
      temporal: new TemporalGateway(new Client({ connection }), 'none'),
      logger,
      enginePool: new EnginePool(1, 0),
      requestLog: new RequestLogWriter(orm, silent),
    });
    const server = createHttpServer(app);
    await orm.close(true);
    await callPool.end();
    try {
      const health = await (await checkedAgent(server)).get('/health');
      expectError(health, 503, 'DEPENDENCY_UNAVAILABLE');
      expect(health.body.messageDetail).toBe('PostgreSQL does not answer.');
      // public: the driver's message (a refused connection names the database's host and port) stays in the log
      expect(health.body.dependencies.postgres.error).toBe('unreachable');

      const res = await (await checkedAgent(server)).get('/v1/api-keys').set('X-API-Key', 'sk-svc-admin-0000000000000000000000000000abcd');
      expectError(res, 500, 'INTERNAL_ERROR');
      expect(JSON.stringify(res.body)).not.toMatch(/pool|knex|postgres|stack/i);
      expect(lines.join('')).toContain(res.headers['x-request-id']);
    } finally {
      await connection.close();
    }
  });
});
