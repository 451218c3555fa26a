/** @type {import('jest').Config} */
const transform = {
  '^.+\\.ts$': ['@swc/jest', { jsc: { target: 'es2022', parser: { syntax: 'typescript' } } }],
  // ESM-only dependencies: jest's module loader cannot require ES modules on Node 20, so swc turns them
  // into CommonJS for the tests (Node itself loads them natively in the service).
  '^.+/node_modules/.+\\.m?js$': ['@swc/jest', { jsc: { target: 'es2022', parser: { syntax: 'ecmascript' } }, module: { type: 'commonjs' } }],
};
const esmOnly = ['jose', 'openid-client', 'oauth4webapi', 'request-filtering-agent'];
const transformIgnorePatterns = [`/node_modules/(?!(${esmOnly.join('|')})/)`];

module.exports = {
  projects: [
    {
      displayName: 'unit',
      testEnvironment: 'node',
      roots: ['<rootDir>/test/unit'],
      testMatch: ['**/*.test.ts'],
      transform,
      transformIgnorePatterns,
      // The same runner as the other projects: one runner runs the unit files in workers while the
      // integration and browser files run one at a time (test/support/overlapping-runner.js).
      runner: '<rootDir>/test/support/overlapping-runner.js',
      setupFiles: ['<rootDir>/test/support/unit-priority.ts'],
    },
    {
      displayName: 'integration',
      testEnvironment: 'node',
      roots: ['<rootDir>/test/integration'],
      testMatch: ['**/*.test.ts'],
      transform,
      transformIgnorePatterns,
      globalSetup: '<rootDir>/test/support/global-setup.ts',
      globalTeardown: '<rootDir>/test/support/global-teardown.ts',
      runner: '<rootDir>/test/support/overlapping-runner.js',
    },
    {
      // The console in a real headless Chromium against the real stack. The same global setup as the
      // integration project (jest runs a shared setup file once), so one Temporal serves both.
      displayName: 'e2e',
      testEnvironment: 'node',
      roots: ['<rootDir>/test/e2e'],
      testMatch: ['**/*.test.ts'],
      transform,
      transformIgnorePatterns,
      globalSetup: '<rootDir>/test/support/global-setup.ts',
      globalTeardown: '<rootDir>/test/support/global-teardown.ts',
      runner: '<rootDir>/test/support/overlapping-runner.js',
    },
  ],
  testTimeout: 120000,
  reporters: ['default', '<rootDir>/test/support/summary-reporter.js'],
};
