/** @type {import('jest').Config} */
const transform = {
  '^.+\\.ts$': ['@swc/jest', { jsc: { target: 'es2022', parser: { syntax: 'typescript' } } }],
  // ESM-only dependencies, turned into CommonJS for jest's module loader (Node loads them natively).
  '/node_modules/request-filtering-agent/.+\\.js$': ['@swc/jest', { jsc: { target: 'es2022' }, module: { type: 'commonjs' } }],
};
// Everything in node_modules is used as is, except the ESM-only packages above.
const transformIgnorePatterns = ['/node_modules/(?!request-filtering-agent/)'];

module.exports = {
  projects: [
    {
      displayName: 'unit',
      testEnvironment: 'node',
      roots: ['<rootDir>/test/unit'],
      testMatch: ['**/*.test.ts'],
      transform,
      transformIgnorePatterns,
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
    },
  ],
  testTimeout: 120000,
  reporters: ['default', '<rootDir>/test/support/summary-reporter.js'],
};
