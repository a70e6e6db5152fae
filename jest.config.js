/** Tests run TypeScript sources directly (swc), so `pnpm test` needs no build; the
 * process-level tests (test/process.test.ts in each service) spawn the built output. */
/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/packages', '<rootDir>/services', '<rootDir>/infra', '<rootDir>/test'],
  testMatch: ['**/?(*.)test.ts'],
  testPathIgnorePatterns: ['/node_modules/', '/dist/'],
  transform: { '^.+\\.ts$': ['@swc/jest', { jsc: { target: 'es2023', parser: { syntax: 'typescript' } }, module: { type: 'commonjs' } }] },
  moduleNameMapper: { '^@signal/(contracts|service-kit|messaging|test-kit|sdk|telemetry)$': '<rootDir>/packages/$1/src/index.ts' },
  globalSetup: '<rootDir>/test/global-setup.js',
  testTimeout: 60000,
  maxWorkers: 2,
  forceExit: false,
};
