import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { allRoutes } from '../../api/app';
import { AccountSchema, ApiKeySchema, WorkspaceSchema } from '../../db/entities';
import { TEST_ENV, repoRoot, requireEnv } from '../support/env';
import { startHarness, type Harness } from '../support/harness';

const run = promisify(execFile);

describe('/openapi.json', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(() => h.stop());

  it('is an OpenAPI 3.1 document with every implemented route, its request and its error codes', async () => {
    const res = await h.http.get('/openapi.json');
    expect(res.status).toBe(200);
    expect(res.body.openapi).toBe('3.1.0');
    const routes = allRoutes({ config: h.config, orm: h.orm, temporal: {} as never, logger: {} as never, enginePool: h.enginePool, requestLog: h.requestLog });
    expect(routes.length).toBeGreaterThan(0);
    for (const route of routes) {
      const oaPath = route.path.replace(/:([A-Za-z_]+)/g, '{$1}');
      const operation = res.body.paths[oaPath]?.[route.method];
      expect({ route: `${route.method} ${route.path}`, documented: Boolean(operation) }).toEqual({ route: `${route.method} ${route.path}`, documented: true });
      for (const status of Object.keys(route.responses)) expect(operation.responses[status]).toBeDefined();
      for (const [status, code] of route.errors) expect(operation.responses[String(status)].description).toContain(code);
    }
    expect(res.body.paths['/openapi.json'].get).toBeDefined();

    const rotate = res.body.paths['/v1/api-keys/{keyId}/rotate'].post;
    expect(rotate.parameters.map((p: { name: string; in: string }) => `${p.in}:${p.name}`)).toEqual(['path:keyId']);
    expect(rotate.requestBody.content['application/json'].schema.$ref).toBe('#/components/schemas/RotateApiKey');
    expect(rotate.responses['409'].description).toContain('KEY_NOT_ACTIVE');
    expect(rotate.responses['403'].description).toContain('ADMIN_KEY_REQUIRED');
    const list = res.body.paths['/v1/api-keys'].get;
    expect(list.parameters.map((p: { name: string }) => p.name).sort()).toEqual(['limit', 'offset']);
    expect(res.body.components.schemas.RotateApiKey.properties.grace_days).toEqual(expect.objectContaining({ type: 'integer', default: 7, minimum: 0 }));
    expect(res.body.components.schemas.Error.required).toEqual(expect.arrayContaining(['status', 'message', 'messageDetail']));
  });
});

describe('operator CLI', () => {
  it('create-account prints the account, its workspace and a working admin and usage key, once', async () => {
    const email = `cli-${Date.now()}@Example.test`;
    const { stdout } = await run(
      path.join(repoRoot, 'node_modules', '.bin', 'tsx'),
      [path.join(repoRoot, 'scripts', 'admin.ts'), 'create-account', '--email', email, '--plan', 'build'],
      { env: { ...process.env, DATABASE_URL: requireEnv(TEST_ENV.databaseUrl) }, cwd: repoRoot },
    );
    const out = JSON.parse(stdout);
    expect(out).toEqual({
      account_id: expect.stringMatching(/^acc_/),
      workspace_id: expect.stringMatching(/^ws_/),
      plan: 'build',
      admin_key: expect.stringMatching(/^sk-svc-admin-/),
      api_key: expect.stringMatching(/^sk-svc-api-/),
    });

    const h = await startHarness();
    try {
      const em = h.orm.em.fork();
      const account = await em.findOneOrFail(AccountSchema, { id: out.account_id });
      expect(account).toEqual(expect.objectContaining({ email: email.toLowerCase(), plan: 'build' }));
      expect(await em.count(WorkspaceSchema, { account: out.account_id })).toBe(1);
      expect(await em.count(ApiKeySchema, { workspace: out.workspace_id })).toBe(2);
      const listed = await h.http.get('/v1/api-keys').set('X-API-Key', out.admin_key);
      expect(listed.status).toBe(200);
      expect(listed.body.data.map((k: { kind: string }) => k.kind).sort()).toEqual(['admin', 'api']);
      expect((await h.http.get('/v1/api-keys').set('X-API-Key', out.api_key)).status).toBe(403);
    } finally {
      await h.stop();
    }

    // The same address twice is refused, and nothing new is created.
    await expect(
      run(path.join(repoRoot, 'node_modules', '.bin', 'tsx'), [path.join(repoRoot, 'scripts', 'admin.ts'), 'create-account', '--email', email], {
        env: { ...process.env, DATABASE_URL: requireEnv(TEST_ENV.databaseUrl) },
        cwd: repoRoot,
      }),
    ).rejects.toMatchObject({ stderr: expect.stringContaining('ACCOUNT_EXISTS') });
  });
});
