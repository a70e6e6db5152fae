import type { ConfirmChannel } from 'amqplib';
import { registerQueueDepthSource } from '@signal/service-kit';
import type { AmqpClient } from './amqp-client';
import { expiringQueueArguments, withProbeChannel, type QueueType } from './consumer';

/**
 * Delays kept inside the broker, with no process touching a message on the way: a binary
 * cascade of fixed-TTL queues (the way NServiceBus's delayed delivery works). Level i holds a
 * message 2^i × 250 ms. A message carries its wait in its routing key, one bit per level, most
 * significant first; each level's exchange sends it into that level's queue when its bit is 1
 * and on to the next level's exchange when it is 0, and each level's queue dead-letters into the
 * next level's exchange when the message expires (same routing key); level 0 ends in the target
 * queue. Every queue has one TTL for all its messages, so none waits behind a longer one (the
 * broker expires only at the head), a wait passes each level at most once, and the consumer
 * sees the message once, when it is due — never early, at most one unit (250 ms) late.
 *
 * No consumer handles a message while it waits, so however many retries are pending, the waiting
 * ones take no turns from the attempts that are due.
 */
export const DELAY_UNIT_MS = 250;
export const DELAY_LEVELS = 14;
/** The longest wait one pass through the cascade holds (68 min); a longer one goes round again. */
export const MAX_CASCADE_DELAY_MS = (2 ** DELAY_LEVELS - 1) * DELAY_UNIT_MS;

/** Names of one cascade: an exchange and a queue per level (RabbitMQ keeps the two apart). */
export type DelayLevelName = (level: number) => string;

/** The wait in units, rounded up (never early), and capped at one pass. */
export function delayUnits(delayMs: number): number {
  return Math.min(2 ** DELAY_LEVELS - 1, Math.max(0, Math.ceil(delayMs / DELAY_UNIT_MS)));
}

/** The routing key of a wait: one word per level, the highest level first (`0.0.…1.0.1`). */
export function delayRoutingKey(units: number): string {
  const words: string[] = [];
  for (let level = DELAY_LEVELS - 1; level >= 0; level--)
    words.push(String(Math.floor(units / 2 ** level) % 2));
  return words.join('.');
}

/** The level a wait enters at: its highest set bit (lower levels are reached by routing). */
export function entryLevel(units: number): number {
  return Math.floor(Math.log2(units));
}

/** The binding of a level's exchange that matches a key whose bit for that level is `bit`. */
export function levelPattern(level: number, bit: 0 | 1): string {
  const before = DELAY_LEVELS - 1 - level;
  return `${'*.'.repeat(before)}${bit}${level > 0 ? '.#' : ''}`;
}

/**
 * Declares the cascade in front of `targetQueue` (idempotent). Its queues are of `queueType`:
 * quorum on a cluster, where a classic level would live on one node and stop every client's setup
 * while that node is down. A queue's type never changes, so each type has its own names
 * (`delayLevelNames`).
 */
export async function declareDelayCascade(
  channel: ConfirmChannel,
  name: DelayLevelName,
  targetQueue: string,
  queueType: QueueType = 'quorum',
): Promise<void> {
  for (let level = 0; level < DELAY_LEVELS; level++) {
    await channel.assertExchange(name(level), 'topic', { durable: true });
    await channel.assertQueue(name(level), {
      durable: true,
      arguments: expiringQueueArguments(
        queueType,
        DELAY_UNIT_MS * 2 ** level,
        level === 0 ? { exchange: '', routingKey: targetQueue } : { exchange: name(level - 1) },
      ),
    });
    await channel.bindQueue(name(level), name(level), levelPattern(level, 1));
    if (level === 0) await channel.bindQueue(targetQueue, name(0), levelPattern(0, 0));
    else await channel.bindExchange(name(level - 1), name(level), levelPattern(level, 0));
  }
}

/**
 * Reports the messages waiting in a cascade, all levels together, at each scrape
 * (`queue_messages{kind="delayed"}`, labelled with the cascade's name: its level 0's without
 * `.L0`). No other depth shows them: after a burst to receivers that hang, 44,000 retries and
 * put-backs waited in the cascade while every queue's depth read 0.
 */
export function reportDelayCascadeDepth(client: AmqpClient, name: DelayLevelName): () => void {
  const queue = name(0).replace(/\.L0$/, '');
  return registerQueueDepthSource(() =>
    withProbeChannel(client, async (probe) => {
      let messages = 0;
      for (let level = 0; level < DELAY_LEVELS; level++)
        messages += (await probe.checkQueue(name(level))).messageCount;
      return [{ queue, kind: 'delayed' as const, messages }];
    }),
  );
}

/** Removes a cascade (tests, benches). */
export async function deleteDelayCascade(channel: ConfirmChannel, name: DelayLevelName): Promise<void> {
  for (let level = 0; level < DELAY_LEVELS; level++) {
    await channel.deleteQueue(name(level)).catch(() => undefined);
    await channel.deleteExchange(name(level)).catch(() => undefined);
  }
}
