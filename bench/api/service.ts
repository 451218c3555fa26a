import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import type { MikroORM } from '@mikro-orm/postgresql';
import { MAX_CONTRACT_ALLOWANCE } from '../../config/plans';
import { AccountSchema } from '../../db/entities';
import { openOrm } from '../../db/orm';
import { provisionAccount } from '../../services/accounts';
import { freePort } from '../../scripts/lib/ports';
import { createScratchDatabase } from '../../scripts/lib/scratch-database';
import { startTemporalDevServer } from '../../scripts/lib/temporal-dev-server';

const repoRoot = path.resolve(__dirname, '..', '..');

async function waitForHealth(url: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    try {
      const res = await fetch(`${url}/health`);
      if (res.ok) return;
    } catch {
      // not up yet
    }
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  throw new Error(`the service did not become healthy at ${url}`);
}

export interface BenchService {
  url: string;
  orm: MikroORM;
  account: Awaited<ReturnType<typeof provisionAccount>>;
  service: ChildProcess;
  databaseUrl: string;
}

/**
 * A Temporal dev server, a scratch database (on DATABASE_URL, else the machine's PostgreSQL, else an
 * embedded one) and the service (`scripts/dev.ts`, API and worker, a separate process as in
 * production), with a `contract` account; each started piece pushes its stop onto `cleanup`.
 * `profile`: the service writes V8 CPU profiles in that folder when it stops.
 */
export async function startBenchService(cleanup: Array<() => Promise<void>>, profile?: string): Promise<BenchService> {
  const scratchDir = path.join(repoRoot, '.data', 'bench');
  const database = await createScratchDatabase('svc_bench', scratchDir, process.env.DATABASE_URL);
  cleanup.push(() => database.drop());
  const temporal = await startTemporalDevServer({ toolsDir: path.join(repoRoot, '.tools') });
  cleanup.push(() => temporal.stop());
  const port = await freePort();
  // Node refuses --cpu-prof in NODE_OPTIONS: a profiled service is node itself with tsx as a loader.
  const devScript = path.join(repoRoot, 'scripts', 'dev.ts');
  const [command, args] = profile
    ? [process.execPath, ['--cpu-prof', `--cpu-prof-dir=${path.resolve(profile)}`, '--import', 'tsx', devScript]]
    : [path.join(repoRoot, 'node_modules', '.bin', 'tsx'), [devScript]];
  const service = spawn(command, args, {
    cwd: repoRoot,
    env: {
      ...process.env,
      DATABASE_URL: database.url,
      TEMPORAL_ADDRESS: temporal.address,
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
    },
    stdio: 'ignore',
    detached: true,
  });
  cleanup.push(async () => {
    try {
      process.kill(-service.pid!, 'SIGTERM');
    } catch {
      // already stopped
    }
    await new Promise((resolve) => setTimeout(resolve, 1500));
  });
  const url = `http://127.0.0.1:${port}`;
  await waitForHealth(url, 120_000);

  const orm = await openOrm(database.url, 2);
  cleanup.push(() => orm.close());
  // The contract plan: its rate budget (2,000 requests/s per key) stays above what this machine serves.
  const account = await provisionAccount(orm.em.fork(), { email: `bench-${Date.now()}@example.test`, plan: 'contract', contractAllowance: MAX_CONTRACT_ALLOWANCE });
  await orm.em.fork().nativeUpdate(AccountSchema, { id: account.account.id }, { allowanceRemaining: MAX_CONTRACT_ALLOWANCE });
  return { url, orm, account, service, databaseUrl: database.url };
}

/** Runs a benchmark's cleanup steps, the last pushed first; a failed step is reported and the rest still run. */
export async function runCleanup(cleanup: Array<() => Promise<void>>): Promise<void> {
  for (const step of cleanup.reverse()) {
    try {
      await step();
    } catch (err) {
      console.warn('cleanup failed', err);
    }
  }
}
