import { BUS_DELIVERY_LANES, DELAY_BUCKETS_MS, SIGNAL_EVENTS_EXCHANGE } from '@signal/contracts';
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
    /**
     * The lanes of first attempts from fan-out: an account's go to one lane (by a hash of its
     * id), so a backlog of one account's waits in its lane, not before every account's.
     */
    deliveryLane: (lane: number) => `${prefix}webhooks.deliveries.lane.${lane}`,
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

/** The most lanes a worker may be configured with (and what `purge` removes). */
export const MAX_DELIVERY_LANES = BUS_DELIVERY_LANES.max;

/** FNV-1a (32 bits) of a string's UTF-16 code units, from `basis`. */
function fnv1a(text: string, basis = 0x811c9dc5): number {
  let hash = basis;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash;
}

/**
 * The two lanes an account's first attempts may take: its own (FNV-1a of its id, modulo the
 * lanes) and a second, different one (FNV-1a of its id again, from the first hash, over the
 * other lanes). Every worker and every release computes the same pair, so an account's first
 * attempts wait in at most two places whichever worker fans them out; two accounts share both
 * lanes one time in C(lanes, 2) (1 in 120 of 16 lanes). With one lane, both are lane 0.
 */
export function lanesOf(accountId: string, lanes: number): [number, number] {
  const first = fnv1a(accountId);
  const own = first % lanes;
  if (lanes === 1) return [own, own];
  return [own, (own + 1 + (fnv1a(accountId, first) % (lanes - 1))) % lanes];
}

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
  // Lanes have no side queues of their own (their failures go to the first-attempt queue's).
  for (let lane = 0; lane < MAX_DELIVERY_LANES; lane++)
    await channel.deleteQueue(names.deliveryLane(lane)).catch(() => undefined);
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
