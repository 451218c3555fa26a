import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { loadConfig } from '../../config/env';
import { AccountSchema } from '../../db/entities';
import { migrate, openOrm } from '../../db/orm';
import { freePort } from '../../scripts/lib/ports';
import { startService, type RunningService } from '../../scripts/lib/runtime';
import { startTemporalDevServer, type DevServer } from '../../scripts/lib/temporal-dev-server';
import { provisionAccount } from '../../services/accounts';
import { releaseLapsedReservations } from '../../services/credits';
import { EnginePool } from '../../services/engine-pool';
import { createModelForTraining } from '../../services/models';
import { fitAndStoreVersion } from '../../services/training';
import { churnRows, withoutTarget } from '../support/datasets';
import { repoRoot, toolsDir } from '../support/env';

interface EmbeddedDatabase {
  url: string;
  stop(): Promise<void>;
}

/** An embedded PostgreSQL in a process of its own (see embedded-postgres-process.ts), persistent in dataDir. */
async function startEmbeddedPostgres(dataDir: string, port: number): Promise<EmbeddedDatabase> {
  const child: ChildProcess = spawn(
    path.join(repoRoot, 'node_modules', '.bin', 'tsx'),
    [path.join(repoRoot, 'test', 'support', 'embedded-postgres-process.ts'), dataDir, String(port)],
    { cwd: repoRoot, stdio: ['ignore', 'pipe', 'ignore'] },
  );
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString('utf8');
      const match = /ready (\S+)/.exec(out);
      if (match) resolve(match[1]!);
    });
    child.once('exit', (code) => reject(new Error(`embedded PostgreSQL exited with ${code}`)));
  });
  return {
    url,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

const HOLD_SECONDS = 2;

/**
 * PostgreSQL and then Temporal restarted under a steady load of predictions: clear 503s while a store
 * is down, full recovery after, no 500, and every credit accounted for (each answered call charged
 * once, every unanswered one given back).
 */
describe('predictions under PostgreSQL and Temporal restarts', () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-restarts-'));
  // PostgreSQL runs as its own system user when the tests run as root: it must reach its folder.
  fs.chmodSync(dataDir, 0o755);
  let pgPort = 0;
  let database: EmbeddedDatabase | null = null;
  let temporal: DevServer | null = null;
  let temporalPort = 0;
  let service: RunningService | null = null;

  beforeAll(async () => {
    pgPort = await freePort();
    database = await startEmbeddedPostgres(dataDir, pgPort);
    temporalPort = await freePort();
    temporal = await startTemporalDevServer({ toolsDir, port: temporalPort });
  }, 120_000);

  afterAll(async () => {
    await service?.stop();
    await temporal?.stop();
    await database?.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }, 60_000);

  it('answers 503 (never 500) while a store is down, recovers, and loses or doubles no credit', async () => {
    const config = loadConfig({}, {
      DATABASE_URL: database!.url,
      TEMPORAL_ADDRESS: `127.0.0.1:${temporalPort}`,
      TEMPORAL_TASK_QUEUE: 'restarts',
      PORT: 0,
      HOST: '127.0.0.1',
      LOG_LEVEL: 'silent',
      ENGINE_THREADS: 1,
      CREDIT_HOLD_SECONDS: HOLD_SECONDS,
    });
    const logger = pino({ level: 'silent' });
    service = await startService({ config, logger, databaseUrl: database!.url, temporalAddress: config.TEMPORAL_ADDRESS!, api: true, worker: false, runMigrations: true });

    // A trained model, through the service's own training code (no worker runs in this test).
    const orm = await openOrm(database!.url, 2);
    const pool = new EnginePool(1);
    let accountId = '';
    let apiKey = '';
    let modelId = '';
    try {
      await migrate(orm);
      const account = await provisionAccount(orm.em.fork(), { email: 'restarts@example.test', plan: 'growth' });
      accountId = account.account.id;
      apiKey = account.apiKey;
      const model = await createModelForTraining(orm.em.fork(), {
        workspaceId: account.workspace.id,
        accountId,
        name: 'restarts',
        target: 'churned',
        task: 'binary',
        engineId: 'tabular-gbdt',
        explain: false,
        autoUpdate: false,
        rows: churnRows(150),
      });
      await fitAndStoreVersion(orm.em.fork(), pool, { modelId: model.id, number: 1, trigger: 'train', outcomesFolded: 0 });
      modelId = model.id;
    } finally {
      await pool.close();
    }
    const creditsOf = async () => {
      const a = await orm.em.fork().findOneOrFail(AccountSchema, { id: accountId }, { refresh: true });
      return a.allowanceRemaining + a.purchasedBalance;
    };
    const before = await creditsOf();
    await orm.close();

    const body = JSON.stringify({ rows: withoutTarget(churnRows(1, 9), 'churned') });
    const statuses: Array<{ status: number; code: string | null; at: number }> = [];
    let running = true;
    const loop = async () => {
      while (running) {
        const res = await fetch(`${service!.url}/v1/models/${modelId}/predict`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': apiKey }, body }).catch(() => null);
        if (!res) {
          statuses.push({ status: 0, code: null, at: Date.now() });
          continue;
        }
        const json = (await res.json().catch(() => ({}))) as { message?: string };
        statuses.push({ status: res.status, code: res.status >= 400 ? (json.message ?? null) : null, at: Date.now() });
        if (res.status !== 200) await new Promise((resolve) => setTimeout(resolve, 20));
      }
    };
    const loops = Array.from({ length: 4 }, () => loop());
    const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

    await sleep(1_500);
    await database!.stop();
    const pgDownAt = Date.now();
    await sleep(2_000);
    database = await startEmbeddedPostgres(dataDir, pgPort);
    const pgUpAt = Date.now();
    await sleep(4_000);
    await temporal!.stop();
    const temporalDownAt = Date.now();
    const health = await fetch(`${service.url}/health`);
    await sleep(2_000);
    temporal = await startTemporalDevServer({ toolsDir, port: temporalPort });
    await sleep(3_000);
    running = false;
    await Promise.all(loops);

    // No 500 and no dropped connection, ever; only clear 503s, and only while PostgreSQL was down.
    expect(statuses.filter((s) => s.status !== 200 && s.status !== 503)).toEqual([]);
    expect(statuses.filter((s) => s.status === 503).every((s) => s.code === 'SERVICE_UNAVAILABLE' || s.code === 'CALL_EXPIRED')).toBe(true);
    expect(statuses.some((s) => s.status === 503 && s.at >= pgDownAt)).toBe(true);
    // Temporal down: predictions go on (they do not need it) while /health says it is down.
    expect(health.status).toBe(503);
    expect(statuses.filter((s) => s.at > temporalDownAt && s.at < temporalDownAt + 2_000).every((s) => s.status === 200)).toBe(true);
    // Full recovery: the last calls all succeed.
    const lastSecond = statuses.filter((s) => s.at > Date.now() - 1_000);
    expect(lastSecond.length).toBeGreaterThan(0);
    expect(lastSecond.every((s) => s.status === 200)).toBe(true);
    expect(statuses.filter((s) => s.at > pgUpAt + 2_000).every((s) => s.status === 200)).toBe(true);

    // Every credit accounted for once the sweep has given back what unanswered calls held.
    const check = await openOrm(database!.url, 2);
    try {
      await sleep(HOLD_SECONDS * 1000 + 200);
      await releaseLapsedReservations(check.em.fork(), new Date());
      const answered = statuses.filter((s) => s.status === 200).length;
      const a = await check.em.fork().findOneOrFail(AccountSchema, { id: accountId });
      expect(before - (a.allowanceRemaining + a.purchasedBalance)).toBe(answered);
      const held = await check.em.fork().getConnection().execute<Array<{ n: number }>>(`select count(*)::int as n from credit_reservations where state = 'held'`);
      expect(held[0]?.n).toBe(0);
    } finally {
      await check.close();
    }
  }, 180_000);
});
