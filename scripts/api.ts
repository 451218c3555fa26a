/** The API process alone (production shape). Needs DATABASE_URL and TEMPORAL_ADDRESS; run `npm run migrate` first. */
import { runRole } from './lib/runtime';

runRole('api');
