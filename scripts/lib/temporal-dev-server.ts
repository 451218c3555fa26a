import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { freePort } from './ports';

export interface DevServer {
  address: string;
  uiUrl: string | null;
  stop(): Promise<void>;
}

/** The `temporal` CLI: the project's pinned copy in the tool folder, else one on PATH. */
export function findTemporalCli(toolsDir: string): string {
  const pinned = path.join(toolsDir, 'venv', 'bin', 'temporal');
  if (fs.existsSync(pinned)) return pinned;
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    const candidate = path.join(dir, 'temporal');
    if (dir && fs.existsSync(candidate)) return candidate;
  }
  throw new Error(`The Temporal CLI was not found in ${toolsDir} nor on PATH: run \`bash scripts/setup-tools.sh\` (npm install does).`);
}

export function findTestServer(toolsDir: string): string {
  const pinned = path.join(toolsDir, 'venv', 'bin', 'temporal-test-server');
  if (!fs.existsSync(pinned)) throw new Error(`temporal-test-server not found in ${toolsDir}: run \`bash scripts/setup-tools.sh\`.`);
  return pinned;
}

async function waitUntilServing(address: string, child: ChildProcess, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`temporal server exited with code ${child.exitCode}`);
    try {
      const connection = await Connection.connect({ address, connectTimeout: 1000 });
      try {
        await connection.workflowService.getSystemInfo({});
        await connection.workflowService.describeNamespace({ namespace: 'default' });
        return;
      } finally {
        await connection.close();
      }
    } catch (err) {
      lastError = err;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
  throw new Error(`temporal server did not answer on ${address} within ${timeoutMs} ms: ${String(lastError)}`);
}

/**
 * Starts `temporal server start-dev` as a child process: persistent in `dbFile` when given (npm start),
 * in memory otherwise (tests). Resolves once the frontend answers and the default namespace exists.
 */
export async function startTemporalDevServer(options: {
  toolsDir: string;
  port?: number;
  uiPort?: number | null;
  dbFile?: string;
  logFile?: string;
}): Promise<DevServer> {
  const cli = findTemporalCli(options.toolsDir);
  const port = options.port ?? (await freePort());
  const args = ['server', 'start-dev', '--ip', '127.0.0.1', '--port', String(port), '--log-level', 'warn', '--namespace', 'default'];
  // Task queue fairness, so that the fits' queue dispatches waiting fits account by account (their
  // fairness key, workflows/train-model.ts), as docker-compose's Temporal does (deploy/). One partition
  // per queue: fairness holds within a partition, and a local server has no load to spread.
  args.push('--dynamic-config-value', 'matching.enableFairness=true');
  args.push('--dynamic-config-value', 'matching.numTaskqueueReadPartitions=1', '--dynamic-config-value', 'matching.numTaskqueueWritePartitions=1');
  if (options.uiPort) args.push('--ui-port', String(options.uiPort));
  else args.push('--headless');
  if (options.dbFile) {
    fs.mkdirSync(path.dirname(options.dbFile), { recursive: true });
    args.push('--db-filename', options.dbFile);
  }
  const log = options.logFile ? fs.openSync(options.logFile, 'a') : 'ignore';
  const child = spawn(cli, args, { stdio: ['ignore', log, log], detached: false });
  const address = `127.0.0.1:${port}`;
  const stop = async (): Promise<void> => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    await new Promise<void>((resolve) => {
      const killer = setTimeout(() => child.kill('SIGKILL'), 5000);
      child.once('exit', () => {
        clearTimeout(killer);
        resolve();
      });
      child.kill('SIGTERM');
    });
  };
  try {
    await waitUntilServing(address, child, 60_000);
  } catch (err) {
    await stop();
    throw err;
  }
  return { address, uiUrl: options.uiPort ? `http://127.0.0.1:${options.uiPort}` : null, stop };
}
