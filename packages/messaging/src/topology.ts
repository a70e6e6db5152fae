import { DELAY_BUCKETS_MS, SIGNAL_EVENTS_EXCHANGE } from '@signal/contracts';
import { connect, type ConfirmChannel } from 'amqplib';
import type { QueueType } from './consumer';
import { deleteDelayCascade, type DelayLevelName } from './delay-cascade';

/** Every broker name gets the same prefix, so tests (and tenants of a shared broker) never collide. */
export function brokerNames(prefix = '') {
  return {
    signalEvents: `${prefix}${SIGNAL_EVENTS_EXCHANGE}`,
    statsQueue: `${prefix}stats.signal-events`,
    webhooksQueue: `${prefix}webhooks.signal-events`,
    /** The signals service's live-stream feeder (every replica consumes it: competing consumers). */
    streamQueue: `${prefix}signals.stream-events`,
    deliveriesQueue: `${prefix}webhooks.deliveries`,
    /** Attempts whose wait is over (out of the delay cascade): never queued behind first attempts. */
    deliveriesDueQueue: `${prefix}webhooks.deliveries.due`,
    /**
     * The previous retry layout's fixed-delay queues, no longer declared or used: named only so
     * that `purge` and test clean-up remove any a broker still holds.
     */
    deliveryDelayQueue: (delayMs: number) => `${prefix}webhooks.delay.${delayMs}ms`,
    /**
     * The webhook retries' delay cascade: an exchange and a queue per level (see delay-cascade),
     * of quorum queues (`AMQP_QUEUE_TYPE=quorum`, the default).
     */
    deliveryDelayLevel: (level: number) => `${prefix}webhooks.delay.quorum.L${level}`,
    /** The same cascade of classic queues (`AMQP_QUEUE_TYPE=classic`; before quorum levels, every broker's). */
    classicDelayLevel: (level: number) => `${prefix}webhooks.delay.L${level}`,
  };
}

/** The delay cascade's names for a queue type (a queue's type never changes, so each has its own). */
export function delayLevelNames(names: BrokerNames, queueType: QueueType): DelayLevelName {
  return queueType === 'quorum' ? names.deliveryDelayLevel : names.classicDelayLevel;
}
export type BrokerNames = ReturnType<typeof brokerNames>;

export async function declareEventExchange(channel: ConfirmChannel, exchange: string): Promise<void> {
  await channel.assertExchange(exchange, 'topic', { durable: true });
}

/** Removes everything a prefix owns, messages included (tests, `purge`). */
export async function deleteBrokerNames(
  channel: ConfirmChannel,
  names: BrokerNames,
  extraQueues: string[] = [],
): Promise<void> {
  const queues = [
    names.statsQueue,
    names.webhooksQueue,
    names.streamQueue,
    names.deliveriesQueue,
    names.deliveriesDueQueue,
    ...extraQueues,
  ];
  for (const q of queues) {
    for (const suffix of ['', '.retry', '.retry.quorum', '.dead'])
      await channel.deleteQueue(`${q}${suffix}`).catch(() => undefined);
  }
  for (const ms of DELAY_BUCKETS_MS)
    await channel.deleteQueue(names.deliveryDelayQueue(ms)).catch(() => undefined);
  await deleteDelayCascade(channel, names.deliveryDelayLevel);
  await deleteDelayCascade(channel, names.classicDelayLevel);
  await channel.deleteExchange(names.signalEvents).catch(() => undefined);
}

/**
 * Connects to the first of `amqpUrl`'s brokers and removes everything `prefix` owns: the purge
 * CLI's work, and the clean-up test-kit's `testBrokerPrefix` is given.
 */
export async function removeBrokerPrefix(
  amqpUrl: string,
  prefix: string,
  extraQueues: string[] = [],
): Promise<void> {
  const conn = await connect(amqpUrl.split(',')[0] ?? amqpUrl);
  try {
    const channel = await conn.createConfirmChannel();
    channel.on('error', () => undefined);
    await deleteBrokerNames(channel, brokerNames(prefix), extraQueues);
    await channel.close().catch(() => undefined);
  } finally {
    await conn.close();
  }
}
