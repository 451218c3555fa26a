/**
 * The fuzz step (run through scripts/fuzz.sh): the real service (API + worker) on a scratch database
 * and an in-memory Temporal dev server, one account with a usage key and an admin key, then
 * schemathesis over /openapi.json once per key. Tears everything down; exits 1 on any failure.
 *
 * Options: --max-examples N (per operation, default 20), --max-time S (per key, default 90),
 * --seed N (default 1: CI replays the same cases; pass another to explore); anything after `--` goes to
 * `schemathesis run` as is (e.g. `-- --include-path-regex '^/v1/models'`).
 */
import { spawn } from 'node:child_process';
import { MailCatcher } from '../services/mail-catcher';
import fs from 'node:fs';
import path from 'node:path';
import { loadConfig } from '../config/env';
import { openOrm } from '../db/orm';
import { provisionAccount } from '../services/accounts';
import { createLogger } from '../services/logger';
import { createScratchDatabase } from './lib/scratch-database';
import { startService } from './lib/runtime';
import { startTemporalDevServer } from './lib/temporal-dev-server';
import { startStripeStandIn } from './lib/stripe-standin';

const CHECKS = ['not_a_server_error', 'response_schema_conformance', 'status_code_conformance', 'content_type_conformance'];

function option(args: string[], name: string, fallback: string): string {
  const at = args.indexOf(`--${name}`);
  return at >= 0 && args[at + 1] ? (args[at + 1] as string) : fallback;
}

/** A small deterministic training set (binary target driven by x1 and colour). */
function trainingRows(n: number): Array<Record<string, string | number>> {
  return Array.from({ length: n }, (_, i) => {
    const x1 = (i * 37) % 100;
    const colour = i % 3 === 0 ? 'red' : 'blue';
    return { x1, x2: (i * 13) % 17, colour, churned: x1 + (colour === 'red' ? 30 : 0) > 60 ? 'yes' : 'no' };
  });
}

async function call(url: string, key: string, method: string, body?: unknown): Promise<{ id: string }> {
  const res = await fetch(url, {
    method,
    headers: { 'x-api-key': key, ...(body ? { 'content-type': 'application/json' } : {}) },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  if (!res.ok) throw new Error(`${method} ${url} answered ${res.status}: ${await res.text()}`);
  return (await res.json()) as { id: string };
}

/** Signs in as a person does (link and code by mail, read from the local SMTP server): the access token. */
async function signInByMail(base: string, email: string, mailbox: MailCatcher): Promise<string> {
  const before = mailbox.lastId();
  const post = (route: string, body: unknown) => fetch(`${base}${route}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const requested = await post('/v1/auth/magic-link/request', { email });
  if (!requested.ok) throw new Error(`magic-link request answered ${requested.status}: ${await requested.text()}`);
  const mail = await mailbox.waitFor((m) => m.to.includes(email), { afterId: before });
  const code = /\b(\d{6})\b/.exec(mail.subject)?.[1];
  const verified = await post('/v1/auth/magic-link/verify', { email, code });
  if (!verified.ok) throw new Error(`magic-link verify answered ${verified.status}: ${await verified.text()}`);
  return ((await verified.json()) as { access_token: string }).access_token;
}

/**
 * Real ids for the path parameters, so the fuzzer reaches the handlers instead of 404s: one model for
 * every model route but DELETE, which gets its own, and spare keys for revoke and rotate (so the
 * admin key does not revoke itself early in the run).
 */
async function writeFuzzConfig(base: string, account: { apiKey: string; adminKey: string }, file: string): Promise<void> {
  const model = async () => (await call(`${base}/v1/models`, account.apiKey, 'POST', { target: 'churned', engine: 'tabular-gbdt', data: trainingRows(120) })).id;
  const spareKey = async (name: string) => (await call(`${base}/v1/api-keys`, account.adminKey, 'POST', { name })).id;
  const served = await model();
  const deleted = await model();
  const revoked = await spareKey('fuzz-revoke');
  const rotated = await spareKey('fuzz-rotate');
  const toml = [
    `[parameters]`,
    `"path.id" = "${served}"`,
    `"path.keyId" = "${rotated}"`,
    ``,
    `[[operations]]`,
    // By name (`METHOD path`): include-path plus include-method would select every method of the path.
    `include-name = "DELETE /v1/models/{id}"`,
    `parameters = { "path.id" = "${deleted}" }`,
    ``,
    `[[operations]]`,
    `include-name = "DELETE /v1/api-keys/{keyId}"`,
    `parameters = { "path.keyId" = "${revoked}" }`,
    ``,
    // The fuzzer finds the address in GET /v1/auth/me and confirms the account's deletion with it,
    // after which every call is a 401: deletion is proven by the integration tests instead.
    `[[operations]]`,
    `include-name = "DELETE /v1/auth/me"`,
    `enabled = false`,
    ``,
  ].join('\n');
  fs.writeFileSync(file, toml);
}

function run(command: string, args: string[], env: NodeJS.ProcessEnv): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: 'inherit', env });
    child.once('error', reject);
    child.once('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0)));
  });
}

async function main(): Promise<number> {
  const all = process.argv.slice(2);
  const split = all.indexOf('--');
  const args = split >= 0 ? all.slice(0, split) : all;
  const passThrough = split >= 0 ? all.slice(split + 1) : [];
  const schemathesis = option(args, 'schemathesis', path.resolve('.bench/fuzz-venv/bin/schemathesis'));
  const maxExamples = option(args, 'max-examples', '20');
  const maxTime = option(args, 'max-time', '90');
  const sessionMaxTime = option(args, 'session-max-time', '60');
  const seed = option(args, 'seed', '1');

  // Billing talks to the local Stripe stand-in, as under `npm start`.
  const standIn = await startStripeStandIn();
  const config = loadConfig(process.env, {
    HOST: '127.0.0.1',
    PORT: 0,
    NODE_ENV: 'test',
    STRIPE_SECRET_KEY: 'sk_test_fuzz',
    STRIPE_WEBHOOK_SECRET: standIn.webhookSecret,
    STRIPE_API_URL: standIn.url,
  });
  const dataDir = path.join(config.DATA_DIR, 'fuzz');
  fs.mkdirSync(dataDir, { recursive: true });
  const logFile = path.join(dataDir, 'service.log');
  // The service's own log goes to a file: the fuzzer's report is what the console shows.
  const logger = createLogger(config.LOG_LEVEL, 'fuzz');
  const teardown: Array<() => Promise<void>> = [() => standIn.close()];
  const started = Date.now();
  try {
    const database = await createScratchDatabase('svc_fuzz', dataDir, config.DATABASE_URL);
    teardown.push(() => database.drop());
    const temporal = await startTemporalDevServer({ toolsDir: config.TOOLS_DIR, logFile: path.join(dataDir, 'temporal.log') });
    teardown.push(() => temporal.stop());
    const pino = (await import('pino')).default;
    const serviceLogger = pino({ level: 'info' }, pino.destination({ dest: logFile, sync: true }));
    // Sign-in steps mail a link or code: a real local SMTP server receives them (and keeps only a few).
    const mailbox = new MailCatcher({ keep: 20 });
    const smtpUrl = await mailbox.start();
    teardown.push(() => mailbox.stop());
    const service = await startService({
      config: { ...config, SMTP_URL: smtpUrl },
      logger: serviceLogger,
      databaseUrl: database.url,
      temporalAddress: temporal.address,
      api: true,
      worker: true,
      runMigrations: false,
    });
    teardown.push(() => service.stop());
    standIn.webhookUrl = `${service.url ?? ''}/v1/integrations/stripe/webhook`;
    const orm = await openOrm(database.url, 2);
    const account = await provisionAccount(orm.em.fork(), { email: 'fuzz@example.test', plan: 'growth' });
    await orm.close();
    logger.info({ url: service.url, log: logFile }, 'service ready for fuzzing');

    const session = await signInByMail(service.url ?? '', 'fuzz@example.test', mailbox);
    const failures: string[] = [];
    const phases = [
      ['usage key', `X-API-Key: ${account.apiKey}`, maxTime],
      ['admin key', `X-API-Key: ${account.adminKey}`, maxTime],
      // A web session reaches every route of its account, the account routes included.
      ['web session', `Authorization: Bearer ${session}`, sessionMaxTime],
    ] as const;
    const configFileOf = (label: string) => path.join(dataDir, `schemathesis-${label.replace(' ', '-')}.toml`);
    // Every phase's models and spare keys are made before any phase runs: a phase that fuzzes
    // POST /v1/api-keys can fill the workspace's 100 live keys, after which no spare key could be made.
    for (const [label] of phases) await writeFuzzConfig(service.url ?? '', account, configFileOf(label));
    for (const [label, header, seconds] of phases) {
      console.log(`\n== schemathesis with the ${label}`);
      const configFile = configFileOf(label);
      const code = await run(
        schemathesis,
        [
          '--config-file',
          configFile,
          'run',
          `${service.url}/openapi.json`,
          '--checks',
          CHECKS.join(','),
          '--header',
          header,
          '--max-examples',
          maxExamples,
          '--max-time',
          seconds,
          '--seed',
          seed,
          // Every case of an operation runs even after one failed, so one finding cannot hide another.
          '--continue-on-failure',
          '--workers',
          '2',
          '--request-timeout',
          '60',
          '--suppress-health-check',
          'too_slow,filter_too_much',
          '--report',
          'junit',
          '--report-dir',
          path.join(dataDir, 'report'),
          '--report-junit-path',
          path.join(dataDir, 'report', `${label.replace(' ', '-')}.xml`),
          ...passThrough,
        ],
        { ...process.env, NO_COLOR: '1' },
      );
      if (code !== 0) failures.push(`${label}: schemathesis exited ${code}`);
    }
    console.log(`\nfuzz: ${((Date.now() - started) / 1000).toFixed(0)} s; service log in ${logFile}`);
    if (failures.length > 0) {
      console.error(`fuzz: FAILED (${failures.join('; ')})`);
      return 1;
    }
    console.log('fuzz: no server error and no contract violation');
    return 0;
  } finally {
    for (const step of teardown.reverse()) {
      try {
        await step();
      } catch (err) {
        logger.warn({ err }, 'error during teardown');
      }
    }
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
