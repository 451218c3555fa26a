/**
 * `npm start`: the whole service in one process for development. Brings up what is missing first:
 * PostgreSQL (DATABASE_URL, else an embedded one under .data/) and Temporal (TEMPORAL_ADDRESS, else
 * `temporal server start-dev` with its UI), applies migrations, then runs the API and the worker.
 */
import path from 'node:path';
import { loadConfig } from '../config/env';
import { createLogger } from '../services/logger';
import { ensureConsoleBuilt } from './lib/console-build';
import { EMBEDDED_PG_PORT, startEmbeddedPostgres } from './lib/embedded-postgres';
import { startService, stopOnSignals } from './lib/runtime';
import { startTemporalDevServer } from './lib/temporal-dev-server';
import { MailCatcher, type CaughtMail } from '../services/mail-catcher';
import { startStripeStandIn } from './lib/stripe-standin';

const DEV_SMTP_PORT = 1025;

/** The development mail box prints each message in full: it is where a local user reads their sign-in link. */
function printMail(mail: CaughtMail): void {
  console.log([``, `── mail to ${mail.to.join(', ')} · ${mail.subject}`, mail.text.trim(), `──`, ``].join('\n'));
}

const DEV_TEMPORAL_PORT = 7233;
const DEV_STRIPE_STANDIN_PORT = 12111;

async function main(): Promise<void> {
  let config = loadConfig();
  const logger = createLogger(config.LOG_LEVEL);
  const cleanup: Array<() => Promise<void>> = [];
  const stopAll = async () => {
    for (const step of cleanup.reverse()) await step();
  };
  stopOnSignals(logger, stopAll);

  // The console is served from its build: rebuilt here when its sources changed (a few seconds, offline).
  const consoleBuild = await ensureConsoleBuilt(config.CONSOLE_DIR, (line) => logger.info(line));
  if (consoleBuild.built) logger.info({ dir: config.CONSOLE_DIR }, 'console built');

  let databaseUrl = config.DATABASE_URL;
  if (!databaseUrl) {
    logger.info({ dir: path.join(config.DATA_DIR, 'postgres') }, 'DATABASE_URL not set: starting an embedded PostgreSQL');
    const pg = await startEmbeddedPostgres(config.DATA_DIR, EMBEDDED_PG_PORT);
    cleanup.push(() => pg.stop());
    databaseUrl = pg.url;
  }

  let temporalAddress = config.TEMPORAL_ADDRESS;
  if (!temporalAddress) {
    logger.info('TEMPORAL_ADDRESS not set: starting `temporal server start-dev`');
    const server = await startTemporalDevServer({
      toolsDir: config.TOOLS_DIR,
      port: DEV_TEMPORAL_PORT,
      uiPort: config.TEMPORAL_UI_PORT,
      dbFile: path.join(config.DATA_DIR, 'temporal.sqlite'),
      logFile: path.join(config.DATA_DIR, 'temporal.log'),
    });
    cleanup.push(() => server.stop());
    temporalAddress = server.address;
    logger.info({ address: server.address, ui: server.uiUrl }, 'Temporal dev server running');
  }

  let smtpUrl = config.SMTP_URL;
  let devMailbox: MailCatcher | undefined;
  if (!smtpUrl) {
    devMailbox = new MailCatcher({ onMail: printMail });
    const mailbox = devMailbox;
    smtpUrl = await mailbox.start(DEV_SMTP_PORT).catch(() => mailbox.start(0));
    cleanup.push(() => mailbox.stop());
    logger.info({ smtp: smtpUrl }, 'SMTP_URL not set: a local mail catcher receives every mail (shown here and at /dev/mail)');
  }

  let stripeStandIn: string | null = null;
  if (!config.STRIPE_SECRET_KEY) {
    // The same SDK calls as with the real Stripe, pointed at a local stand-in that also sends the
    // signed events its checkout page makes; set STRIPE_SECRET_KEY and STRIPE_WEBHOOK_SECRET for Stripe.
    // Its usual port, else any: a second checkout's `npm start` (or a benchmark's service) runs beside the first.
    const standIn = await startStripeStandIn({ port: DEV_STRIPE_STANDIN_PORT }).catch(() => startStripeStandIn({ port: 0 }));
    standIn.webhookUrl = `http://127.0.0.1:${config.PORT}/v1/integrations/stripe/webhook`;
    cleanup.push(() => standIn.close());
    config = { ...config, STRIPE_SECRET_KEY: 'sk_test_local_standin', STRIPE_WEBHOOK_SECRET: standIn.webhookSecret, STRIPE_API_URL: standIn.url };
    stripeStandIn = standIn.url;
    logger.info({ url: standIn.url }, 'STRIPE_SECRET_KEY not set: using the local Stripe stand-in');
  }

  const service = await startService({
    config: { ...config, SMTP_URL: smtpUrl },
    logger,
    databaseUrl,
    temporalAddress,
    api: true,
    worker: true,
    runMigrations: true,
    devMailbox,
  });
  cleanup.push(() => service.stop());
  console.log(
    [
      '',
      `Prediction service running at ${service.url}  (OpenAPI: ${service.url}/openapi.json, health: ${service.url}/health)`,
      `Console: ${service.url}/console   API reference: ${service.url}/docs`,
      config.TEMPORAL_ADDRESS ? '' : `Temporal UI: http://127.0.0.1:${config.TEMPORAL_UI_PORT}`,
      devMailbox ? `Sign in: POST /v1/auth/login {"email": "you@example.com"}, then read the link and code here or at ${service.url}/dev/mail` : '',
      stripeStandIn ? `Stripe: local stand-in at ${stripeStandIn} (its checkout pages "pay" and send the signed events)` : '',
      'Or get a first pair of keys (admin + usage) with:',
      `  npm run admin -- create-account --email you@example.com [--plan build]`,
      'Stop with Ctrl-C.',
      '',
    ]
      .filter((line) => line !== '')
      .join('\n'),
  );
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
