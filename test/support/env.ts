import path from 'node:path';

/** Where the integration tests' shared infrastructure is published by global-setup (env vars cross jest workers). */
export const TEST_ENV = {
  databaseUrl: 'TEST_DATABASE_URL',
  temporalAddress: 'TEST_TEMPORAL_ADDRESS',
  workflowBundle: 'TEST_WORKFLOW_BUNDLE',
} as const;

export const repoRoot = path.resolve(__dirname, '..', '..');
export const toolsDir = path.join(repoRoot, '.tools');
export const testDataDir = path.join(repoRoot, '.data', 'test');

export function requireEnv(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: integration tests run through jest's global setup (npm test).`);
  return value;
}
