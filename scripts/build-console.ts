/** Builds the console (console/ → CONSOLE_DIR) when its sources changed: `npx tsx scripts/build-console.ts [--force]`. */
import fs from 'node:fs';
import { loadConfig } from '../config/env';
import { ensureConsoleBuilt } from './lib/console-build';

const config = loadConfig();
if (process.argv.includes('--force')) fs.rmSync(config.CONSOLE_DIR, { recursive: true, force: true });
ensureConsoleBuilt(config.CONSOLE_DIR, (line) => console.log(line)).then(
  ({ built }) => console.log(built ? `console built in ${config.CONSOLE_DIR}` : `console in ${config.CONSOLE_DIR} is up to date`),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
