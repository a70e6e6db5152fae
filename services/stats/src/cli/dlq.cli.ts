import { brokerNames, runDeadLetterCli } from '@signal/messaging';

/**
 * Dead letters of the stats consumer: list, inspect, replay, drop.
 *   AMQP_URL=… [AMQP_PREFIX=…] pnpm --filter @signal/stats dlq list
 */
const names = brokerNames();
void runDeadLetterCli({
  service: 'stats',
  queues: { 'signal-events': names.statsQueue },
  argv: process.argv.slice(2),
  env: process.env,
  out: (text) => process.stdout.write(text),
}).then((code) => process.exit(code));
