import type { ChildProcess } from 'node:child_process';
import http from 'node:http';
import pino from 'pino';
import request from 'supertest';
import { createApp } from '../../api/app';
import { DrainState } from '../../api/drain';
import { createHttpServer } from '../../api/server';
import { isPortOpen, freePort } from '../../scripts/lib/ports';
import { ModelSchema, ModelVersionSchema } from '../../db/entities';
import { RequestLogWriter } from '../../services/request-log';
import { churnRows, withoutTarget } from '../support/datasets';
import { contractChecker, expectError, startHarness, type Harness } from '../support/harness';
import { killProcessGroup, spawnServiceProcess, startInProcessWorker } from '../support/processes';

/** Resolves with the child's exit code; collects its stdout lines (pino JSON) on the way. */
function exitOf(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => {
    if (child.exitCode !== null) resolve(child.exitCode);
    else child.once('exit', (code) => resolve(code));
  });
}

async function waitFor(condition: () => boolean | Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('graceful shutdown of the API process', () => {
  let h: Harness;
  let child: ChildProcess | null = null;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(async () => {
    killProcessGroup(child);
    await h.stop();
  });

  it('on SIGTERM refuses new connections, finishes the request in flight with 200, and exits 0', async () => {
    const { apiKey } = await h.provision('build');
    const created = await h.http.post('/v1/models').set('X-API-Key', apiKey).send({ target: 'churned', engine: 'tabular-gbdt', data: churnRows(150) });
    expect(created.status).toBe(201);

    const port = await freePort();
    const output: string[] = [];
    child = spawnServiceProcess(
      'api',
      h.taskQueue,
      { HOST: '127.0.0.1', PORT: String(port), LOG_LEVEL: 'info', ENGINE_THREADS: '1', SHUTDOWN_GRACE_SECONDS: '20' },
      ['ignore', 'pipe', 'inherit'],
    );
    child.stdout?.on('data', (chunk: Buffer) => output.push(chunk.toString('utf8')));
    const exited = exitOf(child);
    await waitFor(() => output.join('').includes('API listening'), 60_000, 'the API to listen');

    // The request is in flight for certain: its headers and half its body are sent, the rest is
    // sent only after the signal, so the server must keep the connection to answer it.
    const body = Buffer.from(JSON.stringify({ rows: withoutTarget(churnRows(1000, 5), 'churned') }));
    const answer = new Promise<{ status: number; headers: http.IncomingHttpHeaders; body: { predictions?: unknown[] } }>((resolve, reject) => {
      const req = http.request(
        {
          host: '127.0.0.1',
          port,
          method: 'POST',
          path: `/v1/models/${created.body.id as string}/predict`,
          headers: { 'content-type': 'application/json', 'content-length': body.length, 'x-api-key': apiKey },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) as { predictions?: unknown[] } }));
        },
      );
      req.on('error', reject);
      req.write(body.subarray(0, body.length / 2));
      setTimeout(() => {
        process.kill(child!.pid!, 'SIGTERM');
        // Once the listener is closed, a new connection is refused; only then the upload completes.
        waitFor(async () => !(await isPortOpen('127.0.0.1', port)), 10_000, 'new connections to be refused').then(
          () => req.end(body.subarray(body.length / 2)),
          reject,
        );
      }, 300);
    });

    const res = await answer;
    expect(res.status).toBe(200);
    expect(res.body.predictions).toHaveLength(1000);
    expect(res.headers.connection).toBe('close');
    expect(await isPortOpen('127.0.0.1', port)).toBe(false);
    expect(await exited).toBe(0);
    const log = output.join('');
    expect(log).toContain('HTTP requests drained');
    expect(log).not.toContain('grace ran out');
  });

  it('takes one Ctrl-C delivered twice (the group signal and a wrapper\'s copy) as one stop: finishes the request in flight, exits 0, no forced exit', async () => {
    const { apiKey } = await h.provision('build');
    const port = await freePort();
    const output: string[] = [];
    const twice = spawnServiceProcess('api', h.taskQueue, { HOST: '127.0.0.1', PORT: String(port), LOG_LEVEL: 'info', ENGINE_THREADS: '1' }, ['ignore', 'pipe', 'inherit']);
    try {
      twice.stdout?.on('data', (chunk: Buffer) => output.push(chunk.toString('utf8')));
      const exited = exitOf(twice);
      await waitFor(() => output.join('').includes('API listening'), 60_000, 'the API to listen');

      // A request held in flight keeps the process stopping while the copy arrives.
      const body = Buffer.from(JSON.stringify({ target: 'churned', data: churnRows(200) }));
      let finish: () => void = () => undefined;
      const answered = new Promise<number>((resolve, reject) => {
        const req = http.request(
          { host: '127.0.0.1', port, method: 'POST', path: '/v1/datasets/validate', headers: { 'content-type': 'application/json', 'content-length': body.length, 'x-api-key': apiKey } },
          (res) => {
            res.resume();
            res.on('end', () => resolve(res.statusCode ?? 0));
          },
        );
        req.on('error', reject);
        req.write(body.subarray(0, body.length / 2));
        finish = () => req.end(body.subarray(body.length / 2));
      });
      await new Promise((resolve) => setTimeout(resolve, 300));
      process.kill(twice.pid!, 'SIGINT');
      await waitFor(() => output.join('').includes('"msg":"stopping"'), 10_000, 'the stop to begin');
      process.kill(twice.pid!, 'SIGINT');
      await new Promise((resolve) => setTimeout(resolve, 200));
      finish();

      expect(await answered).toBe(200);
      expect(await exited).toBe(0);
      const log = output.join('');
      expect(log).toContain('HTTP requests drained');
      expect(log).toContain('"msg":"stopped"');
      expect(log).not.toContain('forced exit');
    } finally {
      killProcessGroup(twice);
    }
  });

  it('answers /health with 503 SHUTTING_DOWN and closes connections once draining has begun', async () => {
    const drain = new DrainState();
    const silent = pino({ level: 'silent' });
    const app = createApp({ config: h.config, orm: h.orm, callPool: h.callPool, temporal: new (await import('../../services/temporal/gateway')).TemporalGateway(h.client, h.taskQueue), logger: silent, enginePool: h.enginePool, requestLog: new RequestLogWriter(h.orm, silent), drain });
    const server = createHttpServer(app);
    const checker = await contractChecker(server);
    const get = async () => {
      const res = await request(server).get('/health');
      expect(checker.check({ method: 'GET', url: '/health', status: res.status, contentType: res.headers['content-type'], body: res.body, text: res.text })).toBeNull();
      return res;
    };
    expect((await get()).status).toBe(200);
    drain.begin();
    const draining = await get();
    expectError(draining, 503, 'SHUTTING_DOWN');
    expect(draining.headers.connection).toBe('close');
  });
});

describe('graceful shutdown of the worker process', () => {
  let h: Harness;
  let child: ChildProcess | null = null;
  beforeAll(async () => {
    h = await startHarness({ withoutWorker: true });
  });
  afterAll(async () => {
    killProcessGroup(child);
    await h.stop();
  });

  it('on SIGTERM lets the running fit activity complete, then exits 0 (the fit is not retried)', async () => {
    const metricsPort = await freePort();
    const warnings: string[] = [];
    child = spawnServiceProcess(
      'worker',
      h.taskQueue,
      {
        LOG_LEVEL: 'warn',
        ENGINE_THREADS: '1',
        SHUTDOWN_GRACE_SECONDS: '60',
        HOST: '127.0.0.1',
        WORKER_METRICS_PORT: String(metricsPort),
      },
      ['ignore', 'pipe', 'inherit'],
    );
    child.stdout?.on('data', (chunk: Buffer) => warnings.push(chunk.toString('utf8')));
    const exited = exitOf(child);

    const { apiKey } = await h.provision('build');
    const training = h.http.post('/v1/models').set('X-API-Key', apiKey).send({ target: 'churned', engine: 'tabular-gbdt', explain: true, data: churnRows(2500) });
    const response = training.then((res) => res);

    let modelId = '';
    await waitFor(
      async () => {
        const model = await h.orm.em.fork().findOne(ModelSchema, { status: 'training' }, { orderBy: { createdAt: 'desc' } });
        if (!model) return false;
        modelId = model.id;
        const description = await h.client.workflow.getHandle(`train/${model.id}`).describe().catch(() => null);
        return description?.raw.pendingActivities?.some((a) => a.activityType?.name === 'fitVersion' && a.lastStartedTime) ?? false;
      },
      90_000,
      'the child worker to start the fit',
    );
    expect(await h.orm.em.fork().count(ModelVersionSchema, { model: modelId })).toBe(0);
    // The worker-only process serves its own /metrics (WORKER_METRICS_PORT): its pool runs the fit.
    const scraped = await fetch(`http://127.0.0.1:${metricsPort}/metrics`);
    expect(scraped.status).toBe(200);
    expect(await scraped.text()).toMatch(/^engine_pool_threads [1-9]/m);
    process.kill(child.pid!, 'SIGTERM');
    expect(await exited).toBe(0);
    // Every step of the stop went as planned: nothing at warn or above.
    expect(warnings.join('')).toBe('');
    // The fit stored its version before the process exited: the activity finished, it was not cut.
    expect(await h.orm.em.fork().count(ModelVersionSchema, { model: modelId })).toBe(1);

    // The workflow's remaining steps need a worker: one in this process finishes them.
    const worker = await startInProcessWorker(h);
    try {
      const res = await response;
      expect(res.status).toBe(201);
      expect(res.body.id).toBe(modelId);
      const history = await h.client.workflow.getHandle(`train/${modelId}`).fetchHistory();
      const attempts = (history.events ?? []).filter((e) => e.activityTaskStartedEventAttributes).map((e) => Number(e.activityTaskStartedEventAttributes?.attempt));
      expect(attempts).toEqual([1]);
    } finally {
      await worker.stop();
    }
  });
});
