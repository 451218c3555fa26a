/** The Temporal worker process alone (production shape). Needs DATABASE_URL and TEMPORAL_ADDRESS. */
import { loadConfig } from '../config/env';
import { createLogger } from '../services/logger';
import { startService, stopOnSignals } from './lib/runtime';

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger(config.LOG_LEVEL, 'worker');
  if (!config.DATABASE_URL || !config.TEMPORAL_ADDRESS) throw new Error('The worker process needs DATABASE_URL and TEMPORAL_ADDRESS.');
  const service = await startService({
    config,
    logger,
    databaseUrl: config.DATABASE_URL,
    temporalAddress: config.TEMPORAL_ADDRESS,
    api: false,
    worker: true,
    runMigrations: false,
  });
  stopOnSignals(logger, service.stop);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
