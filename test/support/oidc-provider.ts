import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { repoRoot } from './env';

export interface OpenIdProvider {
  issuer: string;
  stop(): Promise<void>;
}

/**
 * A real OpenID provider (oidc-provider, ESM, in a process of its own) with one registered client and
 * its development login and consent pages; resolves once it serves, with its issuer.
 */
export async function startOpenIdProvider(options: { port: number; clientId: string; clientSecret: string; redirectUri: string }): Promise<OpenIdProvider> {
  const child: ChildProcess = spawn(
    process.execPath,
    [path.join(repoRoot, 'test', 'support', 'oidc-provider-process.mjs'), String(options.port), options.clientId, options.clientSecret, options.redirectUri],
    { cwd: repoRoot, stdio: ['ignore', 'pipe', 'ignore'] },
  );
  const issuer = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString('utf8');
      const match = /ready (\S+)/.exec(out);
      if (match) resolve(match[1]!);
    });
    child.once('exit', (code) => reject(new Error(`the OpenID provider exited with ${code}`)));
  });
  return {
    issuer,
    async stop() {
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    },
  };
}
