import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

const repoRoot = path.resolve(__dirname, '..', '..');
export const consoleRoot = path.join(repoRoot, 'console');
/** Written into the build once it is complete: the hash of the sources it was built from. */
const STAMP = '.source-hash';

/** Files whose change calls for a new build: the console's sources and the locked dependencies. */
function sourceFiles(): string[] {
  const files: string[] = [];
  const walk = (dir: string): void => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      if (entry.name === 'dist' || entry.name.startsWith('.')) continue;
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (entry.isFile()) files.push(full);
    }
  };
  walk(consoleRoot);
  return [...files.sort(), path.join(repoRoot, 'package-lock.json')];
}

export function sourceHash(): string {
  const hash = crypto.createHash('sha256');
  for (const file of sourceFiles()) {
    hash.update(path.relative(repoRoot, file)).update('\0');
    if (fs.existsSync(file)) hash.update(fs.readFileSync(file));
    hash.update('\0');
  }
  return hash.digest('hex');
}

function isFresh(outDir: string, hash: string): boolean {
  const stamp = path.join(outDir, STAMP);
  return fs.existsSync(stamp) && fs.readFileSync(stamp, 'utf8') === hash && fs.existsSync(path.join(outDir, 'index.html'));
}

function runVite(outDir: string): Promise<void> {
  // A child process: Vite is ESM-only and bundles its own config file, which neither tsx's CommonJS
  // nor jest's module loader should have to host.
  const viteBin = path.join(repoRoot, 'node_modules', 'vite', 'bin', 'vite.js');
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [viteBin, 'build', '--config', path.join(consoleRoot, 'vite.config.mts'), '--outDir', outDir, '--emptyOutDir', '--logLevel', 'warn'], {
      cwd: consoleRoot,
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    child.once('error', reject);
    child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`vite build exited with ${code}`))));
  });
}

/** Waits for a lock directory (atomic mkdir), so that concurrent callers build once. */
async function withLock<T>(lockDir: string, run: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + 5 * 60_000;
  for (;;) {
    try {
      fs.mkdirSync(lockDir);
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      // A lock older than the longest build is left by a killed process.
      const stat = fs.statSync(lockDir, { throwIfNoEntry: false });
      if (stat && Date.now() - stat.mtimeMs > 5 * 60_000) fs.rmSync(lockDir, { recursive: true, force: true });
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${lockDir}`);
      await new Promise((r) => setTimeout(r, 250));
    }
  }
  try {
    return await run();
  } finally {
    fs.rmSync(lockDir, { recursive: true, force: true });
  }
}

/**
 * Builds the console into `outDir` unless the build there was made from the same sources. Used by
 * `npm start` (no extra step for a developer) and by the browser tests. Vite runs offline.
 */
export async function ensureConsoleBuilt(outDir: string, log: (line: string) => void = () => undefined): Promise<{ built: boolean }> {
  const hash = sourceHash();
  if (isFresh(outDir, hash)) return { built: false };
  fs.mkdirSync(path.dirname(outDir), { recursive: true });
  return withLock(`${outDir}.lock`, async () => {
    if (isFresh(outDir, hash)) return { built: false };
    log(`building the console into ${outDir}`);
    await runVite(outDir);
    fs.writeFileSync(path.join(outDir, STAMP), hash);
    return { built: true };
  });
}
