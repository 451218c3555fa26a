import { Client, Connection } from '@temporalio/client';
import pino from 'pino';
import request from 'supertest';
import { createApp } from '../../api/app';
import { createHttpServer } from '../../api/server';
import { loadConfig } from '../../config/env';
import { openCallPool } from '../../db/call-pool';
import { openOrm } from '../../db/orm';
import { EnginePool } from '../../services/engine-pool';
import { RequestLogWriter } from '../../services/request-log';
import { TemporalGateway } from '../../services/temporal/gateway';
import { churnRows } from '../support/datasets';
import { TEST_ENV, requireEnv } from '../support/env';
import { expectError, startHarness, type Harness } from '../support/harness';

type LogLine = Record<string, unknown> & { msg?: string };
const parse = (lines: string[]): LogLine[] => lines.flatMap((chunk) => chunk.split('\n')).filter((l) => l.trim() !== '').map((l) => JSON.parse(l) as LogLine);

describe('structured logs', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(() => h.stop());

  it('an unexpected error is logged with the request id the client received', async () => {
    const orm = await openOrm(requireEnv(TEST_ENV.databaseUrl), 2);
    const connection = await Connection.connect({ address: requireEnv(TEST_ENV.temporalAddress) });
    const lines: string[] = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => lines.push(line) });
    const silent = pino({ level: 'silent' });
    const callPool = openCallPool(requireEnv(TEST_ENV.databaseUrl), 2);
    const app = createApp({
      config: loadConfig({}, { NODE_ENV: 'test', DATABASE_URL: requireEnv(TEST_ENV.databaseUrl) }),
      orm,
      callPool,
      temporal: new TemporalGateway(new Client({ connection }), 'none'),
      logger,
      enginePool: new EnginePool(1, 0),
      requestLog: new RequestLogWriter(orm, silent),
    });
    await orm.close(true);
    await callPool.end();
    try {
      const res = await request(createHttpServer(app)).get('/v1/api-keys').set('X-API-Key', 'sk-svc-admin-0000000000000000000000000000abcd');
      expectError(res, 500, 'INTERNAL_ERROR');
      const errorLine = parse(lines).find((l) => l.msg === 'unexpected error');
      expect(errorLine).toEqual(expect.objectContaining({ level: 50, requestId: res.headers['x-request-id'], method: 'GET', path: '/v1/api-keys' }));
    } finally {
      await connection.close();
    }
  });

  it('a call answered with a 503 logs one error line with its request id and the underlying cause', async () => {
    const { apiKey } = await h.provision('build');
    const knex = h.orm.em.fork().getKnex();
    await h.requestLog.flush();
    await knex.raw('alter table request_log rename to request_log_hidden');
    let requestId: string;
    try {
      const res = await h.http.get('/v1/requests').set('X-API-Key', apiKey);
      expectError(res, 503, 'REQUEST_LOG_UNAVAILABLE');
      requestId = res.headers['x-request-id'] as string;
    } finally {
      await knex.raw('alter table request_log_hidden rename to request_log');
    }
    const line = parse(h.logLines).find((l) => l.msg === 'answered REQUEST_LOG_UNAVAILABLE');
    expect(line).toEqual(expect.objectContaining({ level: 50, requestId }));
    // The cause (PostgreSQL's error about the missing table) is on the line, never in the answer.
    expect(JSON.stringify(line)).toContain('request_log');
  });

  it('activity log lines carry the workflow id, workflow type and activity type', async () => {
    const { apiKey } = await h.provision('build');
    const res = await h.http.post('/v1/models').set('X-API-Key', apiKey).send({ target: 'churned', engine: 'tabular-gbdt', data: churnRows(80) });
    expect(res.status).toBe(201);
    const fit = parse(h.logLines).find((l) => l.msg === 'activity completed' && l.activityType === 'fitVersion' && l.workflowId === `train/${res.body.id as string}`);
    expect(fit).toEqual(expect.objectContaining({ workflowType: 'trainModel', attempt: 1, durationMs: expect.any(Number) }));
  });
});
