/**
 * Operator CLI.
 *   npm run admin -- create-account --email E [--plan P] [--workspace NAME]
 * prints JSON {account_id, workspace_id, admin_key, api_key}; the secrets are shown once.
 */
import { parseArgs } from 'node:util';
import { loadConfig } from '../config/env';
import { PLAN_NAMES, type PlanName } from '../config/plans';
import { migrate, openOrm } from '../db/orm';
import { provisionAccount } from '../services/accounts';
import { AppError } from '../services/errors';
import { resolveDatabase } from './lib/embedded-postgres';

const USAGE = 'usage: npm run admin -- create-account --email EMAIL [--plan free|build|pro|growth|contract] [--workspace NAME]';

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
  throw new Error(USAGE);
}

main().catch((err: unknown) => {
  console.error(err instanceof AppError ? `${err.code}: ${err.detail}` : err instanceof Error ? err.message : err);
  process.exit(1);
});
