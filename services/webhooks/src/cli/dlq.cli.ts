import { brokerNames, runDeadLetterCli } from '@signal/messaging';

/**
 * Dead letters of the webhooks worker's consumers (the fan-out of bus events, first attempts,
 * and attempts whose wait is over): list, inspect, replay, drop.
 *   AMQP_URL=… [AMQP_PREFIX=…] pnpm --filter @signal/webhooks dlq list [--queue deliveries]
 */
const names = brokerNames();
void runDeadLetterCli({
  service: 'webhooks',
  queues: {
    'signal-events': names.webhooksQueue,
    deliveries: names.deliveriesQueue,
    'due-deliveries': names.deliveriesDueQueue,
  },
  argv: process.argv.slice(2),
  env: process.env,
  out: (text) => process.stdout.write(text),
}).then((code) => process.exit(code));
