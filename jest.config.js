/**
 * Three tiers, as jest projects (`pnpm test:unit`, `pnpm test:integration`, `pnpm test:system`;
 * `pnpm test` and `bash scripts/test.sh` run all of them):
 * - unit: pure rules: no infrastructure, no service process, no build. Every test next to its source
 *   (`src/**\/*.test.ts`) and the pure files listed in UNIT. In this tier the infrastructure URLs
 *   point at closed ports and `infraUrls()` refuses, so a unit test that reaches for Redis,
 *   RabbitMQ or the MongoDB-wire server fails at once instead of passing only on a machine that
 *   has them.
 * - integration: one service (in process, or its one built process) against the real
 *   infrastructure: the `test/` directory of each package and service.
 * - system: several processes together (the repository's `test/` directory, the browser tests):
 *   processes, cluster, fuzz, end to end, infrastructure instances.
 * Tests run TypeScript sources directly (swc), so the unit tier needs no build; the tests that
 * spawn a service or a CLI (integration and system) run its built output.
 */
const UNIT = [
  'packages/dashboard/test/bodies.test.ts',
  'packages/dashboard/test/health.test.ts',
  'packages/dashboard/test/polling.test.ts',
  'packages/dashboard/test/wait.test.ts',
  'packages/dashboard/test/relative.test.ts',
  'packages/dashboard/test/refusal-text.test.ts',
  'packages/dashboard/test/usage-caption.test.ts',
  'packages/contracts/test/bus-doc.test.ts',
  'packages/contracts/test/contracts.test.ts',
  'packages/contracts/test/event-versions.test.ts',
  'packages/contracts/test/iso-instant.test.ts',
  'packages/messaging/test/bus-names.test.ts',
  'packages/messaging/test/lanes.test.ts',
  'packages/service-kit/test/batcher.test.ts',
  'packages/service-kit/test/cli.test.ts',
  'packages/service-kit/test/config.test.ts',
  'packages/service-kit/test/grafana-dashboard.test.ts',
  'packages/service-kit/test/ids.test.ts',
  'packages/service-kit/test/load-shedder.test.ts',
  'packages/service-kit/test/mongo-watchdog.test.ts',
  'packages/service-kit/test/readiness.test.ts',
  'packages/service-kit/test/service-kit.test.ts',
  'packages/test-kit/test/rate-windows.test.ts',
  'test/compose.test.ts',
  'test/k8s-env.test.ts',
  'test/k8s-capacity.test.ts',
  'test/docs-paths.test.ts',
  'test/routes-mounted.test.ts',
];

const escape = (file) => `<rootDir>/${file}`.replace(/[.]/g, '\\.');

const common = {
  testEnvironment: 'node',
  testPathIgnorePatterns: ['/node_modules/', '/dist/'],
  transform: {
    '^.+\\.ts$': [
      '@swc/jest',
      { jsc: { target: 'es2023', parser: { syntax: 'typescript' } }, module: { type: 'commonjs' } },
    ],
  },
  moduleNameMapper: {
    '^@signal/(contracts|service-kit|messaging|test-kit|sdk|telemetry)$':
      '<rootDir>/packages/$1/src/index.ts',
    // ES-module sources name their relative imports by the built file (`./x.js`): the source is `./x.ts`.
    '^(\\.{1,2}/.*)\\.js$': '$1',
  },
};

/** @type {import('jest').Config} */
module.exports = {
  // A hang guard: a loaded machine takes many times as long as a quiet one.
  testTimeout: 180000,
  maxWorkers: 2,
  // The slowest files first: a fresh clone has no durations cached for Jest to order by.
  testSequencer: '<rootDir>/test/slow-first-sequencer.js',
  forceExit: false,
  projects: [
    {
      ...common,
      displayName: 'unit',
      rootDir: __dirname,
      roots: ['<rootDir>/packages', '<rootDir>/services', '<rootDir>/test'],
      testMatch: ['<rootDir>/{packages,services}/*/src/**/*.test.ts', ...UNIT.map((f) => `<rootDir>/${f}`)],
      setupFiles: ['<rootDir>/test/unit-setup.js'],
    },
    {
      ...common,
      displayName: 'integration',
      rootDir: __dirname,
      roots: ['<rootDir>/packages', '<rootDir>/services', '<rootDir>/infra'],
      testMatch: ['<rootDir>/{packages,services}/*/test/**/*.test.ts', '<rootDir>/infra/**/*.test.ts'],
      testPathIgnorePatterns: [
        ...common.testPathIgnorePatterns,
        '\\.browser\\.test\\.ts$',
        ...UNIT.map(escape),
      ],
      globalSetup: '<rootDir>/test/global-setup.js',
    },
    {
      ...common,
      displayName: 'system',
      rootDir: __dirname,
      roots: ['<rootDir>/packages', '<rootDir>/services', '<rootDir>/test'],
      testMatch: ['<rootDir>/test/**/*.test.ts', '<rootDir>/{packages,services}/**/*.browser.test.ts'],
      testPathIgnorePatterns: [
        ...common.testPathIgnorePatterns,
        '<rootDir>/test/cluster/',
        ...UNIT.map(escape),
      ],
      globalSetup: '<rootDir>/test/global-setup.js',
    },
    {
      // The stores on a Redis Cluster: `infra/local/cluster.sh up`, then
      // `pnpm exec jest --selectProjects cluster` (.run/cluster.env names the cluster).
      ...common,
      displayName: 'cluster',
      rootDir: __dirname,
      roots: ['<rootDir>/test/cluster'],
      testMatch: ['<rootDir>/test/cluster/**/*.test.ts'],
      globalSetup: '<rootDir>/test/cluster/setup.js',
    },
  ],
};
