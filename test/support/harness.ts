import type http from 'node:http';
import { createHttpServer } from '../../api/server';
import { Writable } from 'node:stream';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import type { Logger } from 'pino';
import { createLogger } from '../../services/logger';
import request from 'supertest';
import type TestAgent from 'supertest/lib/agent';
import { createApp } from '../../api/app';
import { loadConfig, type AppConfig } from '../../config/env';
import type { PlanName } from '../../config/plans';
import { churnRows } from './datasets';
import type { Pool } from 'pg';
import { openCallPool } from '../../db/call-pool';
import { openOrm, type Orm } from '../../db/orm';
import { provisionAccount, type ProvisionedAccount } from '../../services/accounts';
import { newId } from '../../services/ids';
import { EnginePool } from '../../services/engine-pool';
import { RequestLogWriter } from '../../services/request-log';
import { TemporalGateway } from '../../services/temporal/gateway';
import { createWorker, installRuntimeOnce } from '../../services/temporal/worker';
import { webhookSettings } from '../../services/webhooks/settings';
import { createStripeClient } from '../../services/stripe';
import { ContractChecker, contractCheckingAgent, type OpenApiDocument } from './contract';
import { TEST_ENV, requireEnv } from './env';
import { MailCatcher } from '../../services/mail-catcher';

/** Addresses of this domain are staff addresses in every harness. */
export const STAFF_DOMAIN = 'staff.example.test';

export interface Harness {
  config: AppConfig;
  orm: Orm;
  /** The API's call pool (db/call-pool.ts). */
  callPool: Pool;
  client: Client;
  taskQueue: string;
  /** Every answer received through it is checked against the OpenAPI document (test/support/contract.ts). */
  http: TestAgent;
  checker: ContractChecker;
  server: http.Server;
  /** Every log line the app and worker wrote during the test file. */
  logLines: string[];
  enginePool: EnginePool;
  requestLog: RequestLogWriter;
  /** A real SMTP server (smtp-server) receiving every mail the service sends. */
  mailbox: MailCatcher;
  provision(plan?: PlanName): Promise<ProvisionedAccount>;
  stop(): Promise<void>;
}

export interface HarnessOptions {
  config?: Partial<AppConfig>;
  fitHeartbeatTimeoutMs?: number;
  /** No worker in this process (a test runs its own, e.g. to kill it mid-fit). */
  withoutWorker?: boolean;
  /** Another Temporal (e.g. the time-skipping test server); default: the shared dev server. */
  temporal?: { client: Client; nativeConnection: NativeConnection };
  /** Serve the mailbox at /dev/mail, as `npm start` does with its mail catcher. */
  devMailbox?: boolean;
  /** Serve on this port (default: any free one), e.g. when PUBLIC_URL must name the server before it starts (OAuth redirect URIs). */
  port?: number;
}

function capturingLogger(lines: string[]): Logger {
  const sink = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      lines.push(chunk.toString('utf8'));
      callback();
    },
  });
  // The service's own logger (its redaction included), writing where the tests can read it.
  return createLogger('debug', 'test', sink);
}

/** The document the server itself publishes, so the check reads exactly what clients read. */
export async function contractChecker(server: http.Server): Promise<ContractChecker> {
  const res = await request(server).get('/openapi.json');
  if (res.status !== 200) throw new Error(`GET /openapi.json answered ${res.status}`);
  return new ContractChecker(res.body as OpenApiDocument);
}

/** A supertest agent on `server` whose answers are checked against the server's own document. */
export async function checkedAgent(server: http.Server): Promise<TestAgent> {
  return contractCheckingAgent(request(server), await contractChecker(server));
}

/**
 * The real service for a test file: a migrated PostgreSQL database, a Temporal worker on a task
 * queue of its own (so test files never steal each other's tasks), and the Koa app on a real port.
 */
export async function startHarness(options: HarnessOptions = {}): Promise<Harness> {
  installRuntimeOnce();
  const taskQueue = `test-${newId('request').slice(4, 16)}`;
  const mailbox = new MailCatcher();
  const smtpUrl = await mailbox.start();
  const config = loadConfig({}, {
    NODE_ENV: 'test',
    DATABASE_URL: requireEnv(TEST_ENV.databaseUrl),
    TEMPORAL_TASK_QUEUE: taskQueue,
    KEY_LAST_USED_RESOLUTION_SECONDS: 0,
    SMTP_URL: smtpUrl,
    STAFF_EMAIL_DOMAINS: STAFF_DOMAIN,
    // Test files sign in far more often than a person does; the budget tests set 1.
    SIGN_IN_BUDGET_SCALE: 100,
    ...options.config,
  });
  const logLines: string[] = [];
  const logger = capturingLogger(logLines);
  const orm = await openOrm(config.DATABASE_URL ?? '', 5);
  const callPool = openCallPool(config.DATABASE_URL ?? '', 5);
  const stack: Array<() => Promise<void>> = [() => mailbox.stop(), () => orm.close(), () => callPool.end()];

  let client: Client;
  let nativeConnection: NativeConnection;
  if (options.temporal) {
    ({ client, nativeConnection } = options.temporal);
  } else {
    const address = requireEnv(TEST_ENV.temporalAddress);
    const connection = await Connection.connect({ address });
    client = new Client({ connection, namespace: config.TEMPORAL_NAMESPACE });
    nativeConnection = await NativeConnection.connect({ address });
    stack.push(() => connection.close(), () => nativeConnection.close());
  }

  const enginePool = new EnginePool(2, 0);
  stack.push(() => enginePool.close());
  if (!options.withoutWorker) {
    const worker = await createWorker({
      orm,
      logger,
      enginePool,
      connection: nativeConnection,
      namespace: config.TEMPORAL_NAMESPACE,
      taskQueue,
      workflowBundlePath: requireEnv(TEST_ENV.workflowBundle),
      webhooks: webhookSettings(config),
      stripe: createStripeClient(config),
    });
    const running = worker.run();
    stack.push(async () => {
      worker.shutdown();
      await running;
    });
  }

  const requestLog = new RequestLogWriter(orm, logger, 50);
  const app = createApp({
    config,
    orm,
    callPool,
    temporal: new TemporalGateway(client, taskQueue, options.fitHeartbeatTimeoutMs ?? 30_000),
    logger,
    enginePool,
    requestLog,
    devMailbox: options.devMailbox ? mailbox : undefined,
  });
  const server = createHttpServer(app);
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, '127.0.0.1', resolve));
  stack.push(() => new Promise<void>((resolve) => server.close(() => resolve())), () => requestLog.close());
  const checker = await contractChecker(server);

  return {
    config,
    orm,
    callPool,
    client,
    taskQueue,
    http: contractCheckingAgent(request(server), checker),
    checker,
    server,
    logLines,
    enginePool,
    requestLog,
    mailbox,
    provision: (plan: PlanName = 'free') =>
      provisionAccount(orm.em.fork(), { email: `${newId('account').toLowerCase()}@example.test`, plan }),
    async stop() {
      while (stack.length > 0) await stack.pop()?.();
    },
  };
}

/** Envelope check shared by every error assertion. */
export function expectError(res: { status: number; body: unknown; headers: Record<string, string> }, status: number, code: string): void {
  expect({ status: res.status, message: (res.body as { message?: string }).message }).toEqual({ status, message: code });
  expect(res.body).toEqual(expect.objectContaining({ status: 'error', messageDetail: expect.any(String) }));
  expect(res.headers['x-request-id']).toMatch(/^req_[0-9A-Za-z]{22}$/);
}

/** A new account with a model trained over HTTP on 150 synthetic churn rows (target `churned`). */
export async function trainedChurnModel(h: Harness, plan: PlanName = 'build') {
  const account = await h.provision(plan);
  const res = await h.http.post('/v1/models').set('X-API-Key', account.apiKey).send({ target: 'churned', engine: 'tabular-gbdt', data: churnRows(150) });
  expect(res.status).toBe(201);
  return { ...account, modelId: res.body.id as string };
}

export interface WebSession {
  email: string;
  accountId: string;
  accessToken: string;
  refreshToken: string;
  /** `Authorization: Bearer <access token>`. */
  bearer: string;
}

/** The six-digit code of the newest sign-in mail to `email` received after mail `afterId`. */
export async function mailedCode(h: Harness, email: string, afterId: number): Promise<{ code: string; token: string | null; text: string }> {
  const mail = await h.mailbox.waitFor((m) => m.to.includes(email), { afterId });
  const code = /\b(\d{6})\b/.exec(mail.subject)?.[1] ?? /\b(\d{6})\b/.exec(mail.text)?.[1];
  if (!code) throw new Error(`no code in the mail to ${email}`);
  const token = /#token=([^\s&]+)/.exec(mail.text)?.[1];
  return { code, token: token ? decodeURIComponent(token) : null, text: mail.text };
}

/** Signs `email` in by the emailed code, as a person would (the account is created on first sign-in). */
export async function signInByMail(h: Harness, email = `${newId('account').toLowerCase()}@example.test`): Promise<WebSession> {
  // A minute "passes" since any earlier sign-in mail to this address (one mail per address per minute).
  await h.orm.em.fork().execute(`update sign_in_challenges set created_at = created_at - interval '2 minutes' where email = ? and closed_at is null`, [email]);
  const before = h.mailbox.lastId();
  const requested = await h.http.post('/v1/auth/magic-link/request').send({ email });
  expect(requested.status).toBe(200);
  const { code } = await mailedCode(h, email, before);
  const verified = await h.http.post('/v1/auth/magic-link/verify').send({ email, code });
  expect(verified.status).toBe(200);
  const body = verified.body as { access_token: string; refresh_token: string; account_id: string };
  return { email, accountId: body.account_id, accessToken: body.access_token, refreshToken: body.refresh_token, bearer: `Bearer ${body.access_token}` };
}
