import os from 'node:os';

// The unit files run in worker processes while the integration and browser files run one at a time
// in jest's own process (test/support/overlapping-runner.js). Those serial files set the test run's
// length; the unit files only fill the cores they leave idle. So a unit worker yields the CPU to them:
// its priority is lowered once, before its first test file, and the engine threads and processes its
// tests start inherit it. Alone on the machine, a lower priority changes nothing.
try {
  if (os.getPriority() < 10) os.setPriority(10);
} catch {
  // a platform that refuses it runs the workers at the usual priority
}
