/** The Temporal worker process alone (production shape): workflows, activities, Schedules. Needs DATABASE_URL and TEMPORAL_ADDRESS. */
import { runRole } from './lib/runtime';

runRole('worker');
