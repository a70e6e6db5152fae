// Runs the slowest test files first, so the run's workers never end with one long file still
// going while the others are idle. Jest orders by the durations it cached in earlier runs, but a
// fresh clone has none: the files known to be slow (measured on a two-core machine, slowest
// first) lead, then the rest in Jest's own order.
const path = require('node:path');

// @jest/test-sequencer is Jest's own dependency (not the repository's): resolved through jest.
const jestDir = path.dirname(require.resolve('jest/package.json'));
const core = require.resolve('@jest/core', { paths: [jestDir] });
const Sequencer = require(require.resolve('@jest/test-sequencer', { paths: [core] })).default;

const SLOW_FIRST = [
  'services/api-gateway/test/dashboard-debugging.browser.test.ts',
  'services/api-gateway/test/dashboard-journey.browser.test.ts',
  'test/fuzz.test.ts',
  'test/fuzz-examples.test.ts',
  'services/signals/test/timeline-model.test.ts',
  'packages/sdk-python/test/python-sdk.test.ts',
  'packages/sdk/test/tarball.test.ts',
  'test/processes.test.ts',
  'services/signals/test/signal-events.test.ts',
  'services/signals/test/simulator.test.ts',
  'packages/sdk/test/cli.test.ts',
  'test/readiness.test.ts',
  'test/observability.test.ts',
  'test/gateway-cluster.test.ts',
  'services/webhooks/test/worker-faults.test.ts',
  'services/api-gateway/test/abuse-controls.test.ts',
];
const root = path.join(__dirname, '..');
const rank = new Map(SLOW_FIRST.map((file, i) => [path.join(root, file), i]));

class SlowFirstSequencer extends Sequencer {
  async sort(tests) {
    const ordered = await super.sort(tests);
    const known = ordered.filter((t) => rank.has(t.path)).sort((a, b) => rank.get(a.path) - rank.get(b.path));
    return [...known, ...ordered.filter((t) => !rank.has(t.path))];
  }
}

module.exports = SlowFirstSequencer;
