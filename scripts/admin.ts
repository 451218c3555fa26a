/**
 * Operator CLI.
 *   npm run admin -- create-account --email E [--plan P] [--workspace NAME]
 * prints JSON {account_id, workspace_id, admin_key, api_key}; the secrets are shown once.
 *   npm run admin -- create-key --workspace WS [--kind admin|api] [--name NAME]
 * prints JSON {key_id, workspace_id, kind, key}: the way back in for a workspace whose last admin
 * key was rotated away (grace 0) and whose twin's secret never reached anyone.
 */
import { parseArgs } from 'node:util';
import { loadConfig } from '../config/env';
import { PLAN_NAMES, type PlanName } from '../config/plans';
import { WorkspaceSchema } from '../db/entities';
import { migrate, openOrm } from '../db/orm';
import { provisionAccount } from '../services/accounts';
import { createKey } from '../services/api-keys';
import { AppError } from '../services/errors';
import { resolveDatabase } from './lib/embedded-postgres';

const USAGE = [
  'usage: npm run admin -- create-account --email EMAIL [--plan free|build|pro|growth|contract] [--workspace NAME]',
  '       npm run admin -- create-key --workspace WORKSPACE_ID [--kind admin|api] [--name NAME]',
].join('\n');

async function withDatabase<T>(run: (orm: Awaited<ReturnType<typeof openOrm>>) => Promise<T>): Promise<T> {
  const config = loadConfig();
  const database = await resolveDatabase(config);
  const orm = await openOrm(database.url, 2);
  try {
    await migrate(orm);
    return await run(orm);
  } finally {
    await orm.close();
    await database.stop();
  }
}

async function createWorkspaceKey(args: string[]): Promise<void> {
  const { values } = parseArgs({ args, options: { workspace: { type: 'string' }, kind: { type: 'string' }, name: { type: 'string' } }, strict: true });
  if (!values.workspace) throw new Error(`--workspace is required\n${USAGE}`);
  const kind = values.kind ?? 'admin';
  if (kind !== 'admin' && kind !== 'api') throw new Error('--kind must be admin or api');
  await withDatabase(async (orm) => {
    const em = orm.em.fork();
    const workspace = await em.findOne(WorkspaceSchema, { id: values.workspace });
    if (!workspace) throw new Error(`no workspace ${values.workspace}`);
    const created = await createKey(em, workspace.id, { name: values.name ?? `operator ${kind} key`, kind, expiresAt: null });
    process.stdout.write(`${JSON.stringify({ key_id: created.key.id, workspace_id: workspace.id, kind, key: created.secret }, null, 2)}\n`);
  });
}

async function createAccount(args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: { email: { type: 'string' }, plan: { type: 'string' }, workspace: { type: 'string' } },
    strict: true,
  });
  if (!values.email) throw new Error(`--email is required\n${USAGE}`);
  const plan = (values.plan ?? 'free') as PlanName;
  if (!PLAN_NAMES.includes(plan)) throw new Error(`--plan must be one of ${PLAN_NAMES.join(', ')}`);

  const config = loadConfig();
  const database = await resolveDatabase(config);
  const orm = await openOrm(database.url, 2);
  try {
    await migrate(orm);
    const created = await provisionAccount(orm.em.fork(), { email: values.email, plan, workspaceName: values.workspace });
    process.stdout.write(
      `${JSON.stringify(
        { account_id: created.account.id, workspace_id: created.workspace.id, plan, admin_key: created.adminKey, api_key: created.apiKey },
        null,
        2,
      )}\n`,
    );
  } finally {
    await orm.close();
    await database.stop();
  }
}

async function main(): Promise<void> {
  const [command, ...rest] = process.argv.slice(2);
  if (command === 'create-account') return createAccount(rest);
  if (command === 'create-key') return createWorkspaceKey(rest);
  throw new Error(USAGE);
}

main().catch((err: unknown) => {
  console.error(err instanceof AppError ? `${err.code}: ${err.detail}` : err instanceof Error ? err.message : err);
  process.exit(1);
});
