/**
 * Operator CLI.
 *   npm run admin -- create-account --email E [--plan P] [--workspace NAME]
 * prints JSON {account_id, workspace_id, admin_key, api_key}; the secrets are shown once.
 *   npm run admin -- create-key --workspace WS [--kind admin|api] [--name NAME]
 * prints JSON {key_id, workspace_id, kind, key}: the way back in for a workspace whose last admin
 * key was rotated away (grace 0) and whose twin's secret never reached anyone.
 *   npm run admin -- create-staff --email E
 * creates a staff account (an address of STAFF_EMAIL_DOMAINS), or sets a new password for one; the
 * password comes from STAFF_PASSWORD or is typed at a hidden prompt, never from an argument (which
 * would land in the shell history and the process list).
 */
import { parseArgs } from 'node:util';
import readline from 'node:readline';
import { Writable } from 'node:stream';
import { loadConfig } from '../config/env';
import { PLAN_NAMES, type PlanName } from '../config/plans';
import { WorkspaceSchema } from '../db/entities';
import { migrate, openOrm } from '../db/orm';
import { createStaffAccount, provisionAccount } from '../services/accounts';
import { staffDomainsOf } from '../services/auth/sign-in';
import { createKey } from '../services/api-keys';
import { AppError } from '../services/errors';
import { resolveDatabase } from './lib/embedded-postgres';

const USAGE = [
  'usage: npm run admin -- create-account --email EMAIL [--plan free|build|pro|growth|contract] [--workspace NAME]',
  '       npm run admin -- create-key --workspace WORKSPACE_ID [--kind admin|api] [--name NAME]',
  '       STAFF_PASSWORD=… npm run admin -- create-staff --email EMAIL   (without STAFF_PASSWORD: asked at a prompt)',
].join('\n');

/** Reads a line from the terminal without echoing it. */
async function promptHidden(question: string): Promise<string> {
  if (!process.stdin.isTTY) throw new Error('No terminal to type the password at: set STAFF_PASSWORD.');
  let muted = false;
  const output = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      if (!muted) process.stdout.write(chunk);
      callback();
    },
  });
  const rl = readline.createInterface({ input: process.stdin, output, terminal: true });
  const answer = new Promise<string>((resolve) => rl.question(question, resolve));
  muted = true;
  const password = await answer;
  rl.close();
  process.stdout.write('\n');
  return password;
}

async function createStaff(args: string[]): Promise<void> {
  const { values } = parseArgs({ args, options: { email: { type: 'string' } }, strict: true });
  if (!values.email) throw new Error(`--email is required\n${USAGE}`);
  const password = process.env.STAFF_PASSWORD ?? (await promptHidden('Password (at least 12 characters): '));
  const staffDomains = staffDomainsOf(loadConfig().STAFF_EMAIL_DOMAINS);
  await withDatabase(async (orm) => {
    const { account, created } = await createStaffAccount(orm.em.fork(), { email: values.email!, password, staffDomains });
    process.stdout.write(`${JSON.stringify({ account_id: account.id, email: account.email, staff: true, created }, null, 2)}\n`);
  });
}

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
  if (command === 'create-staff') return createStaff(rest);
  throw new Error(USAGE);
}

main().catch((err: unknown) => {
  console.error(err instanceof AppError ? `${err.code}: ${err.detail}` : err instanceof Error ? err.message : err);
  process.exit(1);
});
