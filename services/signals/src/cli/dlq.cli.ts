import { brokerNames, runDeadLetterCli } from '@signal/messaging';

/**
 * Dead letters of the live stream's feeder (bus events it could not append to the event log):
 * list, inspect, replay, drop.
 *   AMQP_URL=… [AMQP_PREFIX=…] pnpm --filter @signal/signals dlq list
 */
const names = brokerNames();
void runDeadLetterCli({
  service: 'signals',
  queues: { 'stream-events': names.streamQueue },
  argv: process.argv.slice(2),
  env: process.env,
  out: (text) => process.stdout.write(text),
}).then((code) => process.exit(code));
