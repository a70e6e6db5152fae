import type { ConfirmChannel, ConsumeMessage } from 'amqplib';
import type { Logger } from 'pino';
import {
  isMongoUnavailable,
  isRedisUnavailable,
  markActiveSpanFailed,
  metrics,
  registerQueueDepthSource,
  requestContext,
  type QueueDepth,
} from '@signal/service-kit';
import type { z } from 'zod';
import type { AmqpClient } from './amqp-client';

export type QueueType = 'quorum' | 'classic';

export interface RetryPolicy {
  maxAttempts: number;
  retryDelayMs: number;
  handlerTimeoutMs: number;
}

export interface MessageMeta {
  attempt: number;
  messageId?: string;
  requestId?: string;
  routingKey: string;
  /** The broker handed this message out before (a consumer died or a channel closed holding it). */
  redelivered: boolean;
}

export interface ConsumerOptions<S extends z.ZodType> {
  client: AmqpClient;
  logger: Logger;
  queue: string;
  schema: S;
  policy: RetryPolicy;
  prefetch: number;
  queueType?: QueueType;
  bindings?: { exchange: string; routingKeys: string[] };
  /**
   * Another queue whose retry and dead-letter queues take this one's failures, and how this
   * queue is declared (e.g. `spillingQueueArguments`): many queues of one kind (the webhook
   * worker's lanes) share one pair of side queues rather than each keeping its own.
   */
  sharesSideQueuesOf?: { queue: string; arguments: Record<string, unknown> };
  handler: (message: z.infer<S>, meta: MessageMeta) => Promise<void>;
}

export const ATTEMPT_HEADER = 'x-attempt';

/**
 * Runs `ask` on a channel of its own, closed afterwards: asking about a missing queue closes the
 * channel it is asked on, which must never be a consumer's.
 */
export async function withProbeChannel<T>(
  client: AmqpClient,
  ask: (probe: ConfirmChannel) => Promise<T>,
): Promise<T> {
  const probe = await client.createChannel();
  probe.on('error', () => undefined);
  try {
    return await ask(probe);
  } finally {
    await probe.close().catch(() => undefined);
  }
}

/**
 * The queue a failed message waits in before it comes back. On quorum queues it is a quorum
 * queue too: a classic queue lives on one node, and while that node is down no client can
 * declare it, so every reconnect's setup failed and a client never published again after losing
 * a node of a cluster. It takes a name of its own (a queue's type never changes, and a release
 * before this one still declares the classic `.retry`, which drains into the same queue).
 */
export function retryQueueName(queue: string, queueType: QueueType = 'quorum'): string {
  return queueType === 'quorum' ? `${queue}.retry.quorum` : `${queue}.retry`;
}

/**
 * Arguments of a queue whose messages expire after `ttlMs` into a dead-letter target. Quorum:
 * dead-lettered at least once (RabbitMQ's default for quorum queues drops a message whose
 * dead-lettering fails, e.g. while the target's leader moves to another node), which needs
 * `reject-publish` overflow; no length limit is set, so nothing is refused for it.
 */
export function expiringQueueArguments(
  queueType: QueueType,
  ttlMs: number,
  deadLetter: { exchange: string; routingKey?: string },
): Record<string, unknown> {
  return {
    'x-message-ttl': ttlMs,
    'x-dead-letter-exchange': deadLetter.exchange,
    ...(deadLetter.routingKey !== undefined ? { 'x-dead-letter-routing-key': deadLetter.routingKey } : {}),
    ...(queueType === 'quorum'
      ? {
          'x-queue-type': 'quorum',
          'x-dead-letter-strategy': 'at-least-once',
          'x-overflow': 'reject-publish',
        }
      : {}),
  };
}

/** Queue + its retry queue (TTL, dead-letters back) + its dead-letter queue. */
export async function declareConsumerQueues(
  channel: ConfirmChannel,
  queue: string,
  retryDelayMs: number,
  queueType: QueueType = 'quorum',
): Promise<void> {
  await channel.assertQueue(queue, { durable: true, arguments: { 'x-queue-type': queueType } });
  await channel.assertQueue(retryQueueName(queue, queueType), {
    durable: true,
    arguments: expiringQueueArguments(queueType, retryDelayMs, { exchange: '', routingKey: queue }),
  });
  await channel.assertQueue(`${queue}.dead`, { durable: true, arguments: { 'x-queue-type': queueType } });
}

/**
 * A queue whose messages not taken within `spillMs` move to `into` (dead-lettered at least
 * once on quorum queues). A queue that loses its consumers (a rollback to a release that does
 * not read it, fewer of them configured) so hands its messages to one that every release reads
 * rather than keeping them; RabbitMQ expires a message only at the head, which is where the
 * oldest of a queue with one TTL is.
 */
export function spillingQueueArguments(
  queueType: QueueType,
  spillMs: number,
  into: string,
): Record<string, unknown> {
  return {
    ...expiringQueueArguments(queueType, spillMs, { exchange: '', routingKey: into }),
    ...(queueType === 'classic' ? { 'x-queue-type': 'classic' } : {}),
  };
}

/** The routing key a message was first published with (kept across retry and dead queues). */
export const ROUTING_KEY_HEADER = 'x-routing-key';

function sendConfirmed(
  channel: ConfirmChannel,
  queue: string,
  msg: ConsumeMessage,
  headers: Record<string, unknown>,
): Promise<void> {
  const original = msg.properties.headers?.[ROUTING_KEY_HEADER] ?? msg.fields.routingKey;
  return new Promise((resolve, reject) => {
    channel.sendToQueue(
      queue,
      msg.content,
      {
        ...msg.properties,
        headers: { ...msg.properties.headers, [ROUTING_KEY_HEADER]: original, ...headers },
        persistent: true,
      },
      (err) => (err ? reject(err instanceof Error ? err : new Error(String(err))) : resolve()),
    );
  });
}

/**
 * Manual-ack consumer: ack only after the handler committed its work. A failing message goes
 * to its retry queue (`retryQueueName`: comes back after the delay) up to `maxAttempts`, then to `<queue>.dead`;
 * a failure because MongoDB or Redis is unreachable is retried without counting; a message
 * that does not match its schema is poison and goes to `.dead` at once.
 */
export class Consumer<S extends z.ZodType> {
  private channel?: ConfirmChannel;
  private consumerTag?: string;
  private stopped = false;
  private readonly inFlight = new Set<Promise<void>>();
  private unregisterDepths?: () => void;

  constructor(private readonly options: ConsumerOptions<S>) {}

  /** Messages taken from the queue and not yet acknowledged (at most the prefetch). */
  get inFlightCount(): number {
    return this.inFlight.size;
  }

  async start(): Promise<void> {
    await this.options.client.addSetup(async () => {
      if (this.stopped) return;
      await this.subscribe();
    });
  }

  private async subscribe(): Promise<void> {
    const { client, queue, prefetch, policy, bindings, queueType, sharesSideQueuesOf } = this.options;
    const channel = await client.createChannel();
    channel.on('error', () => undefined);
    if (sharesSideQueuesOf === undefined)
      await declareConsumerQueues(channel, queue, policy.retryDelayMs, queueType);
    else {
      await declareConsumerQueues(channel, sharesSideQueuesOf.queue, policy.retryDelayMs, queueType);
      await channel.assertQueue(queue, { durable: true, arguments: sharesSideQueuesOf.arguments });
    }
    if (bindings) {
      await channel.assertExchange(bindings.exchange, 'topic', { durable: true });
      for (const key of bindings.routingKeys) await channel.bindQueue(queue, bindings.exchange, key);
    }
    await channel.prefetch(prefetch);
    this.channel = channel;
    this.unregisterDepths?.();
    this.unregisterDepths = registerQueueDepthSource(() =>
      withProbeChannel(client, async (probe) => {
        const depths: QueueDepth[] = [];
        // Shared side queues are reported by their own queue's consumer.
        const side =
          sharesSideQueuesOf === undefined
            ? ([
                ['retry', retryQueueName(queue, this.options.queueType)],
                ['dead', `${queue}.dead`],
              ] as const)
            : [];
        for (const [kind, name] of [['ready', queue] as const, ...side])
          depths.push({ queue, kind, messages: (await probe.checkQueue(name)).messageCount });
        return depths;
      }),
    );
    const { consumerTag } = await channel.consume(queue, (msg) => {
      if (!msg) return;
      const work = this.handle(channel, msg).finally(() => this.inFlight.delete(work));
      this.inFlight.add(work);
    });
    this.consumerTag = consumerTag;
  }

  private async handle(channel: ConfirmChannel, msg: ConsumeMessage): Promise<void> {
    const headers = msg.properties.headers ?? {};
    const attempt = Number(headers[ATTEMPT_HEADER] ?? 1);
    const requestId = headers['x-request-id'];
    const meta: MessageMeta = {
      attempt,
      messageId: typeof msg.properties.messageId === 'string' ? msg.properties.messageId : undefined,
      requestId: typeof requestId === 'string' ? requestId : undefined,
      routingKey:
        typeof headers[ROUTING_KEY_HEADER] === 'string' ? headers[ROUTING_KEY_HEADER] : msg.fields.routingKey,
      redelivered: msg.fields.redelivered,
    };
    // The handler runs under the producer's request id (the amqplib instrumentation, when
    // tracing is on, already put it in the message's trace), so its logs and whatever it
    // writes or publishes belong to the request that caused them.
    const run = () => this.process(channel, msg, meta);
    await (meta.requestId ? requestContext.run({ requestId: meta.requestId }, run) : run());
  }

  private async process(channel: ConfirmChannel, msg: ConsumeMessage, meta: MessageMeta): Promise<void> {
    const { logger, queue, schema, policy, handler } = this.options;
    const sideOf = this.options.sharesSideQueuesOf?.queue ?? queue;
    const attempt = meta.attempt;
    const handled = (outcome: 'ack' | 'retry' | 'dead' | 'poison') =>
      metrics.messagesHandled().inc({ queue, outcome });
    const endTimer = metrics.messageHandling().startTimer({ queue });
    try {
      let parsed: z.infer<S>;
      try {
        parsed = schema.parse(JSON.parse(msg.content.toString('utf8')));
      } catch (err) {
        logger.error(
          { queue, messageId: meta.messageId, err: (err as Error).message },
          'poison message → dead-letter',
        );
        await sendConfirmed(channel, `${sideOf}.dead`, msg, { 'x-error': 'invalid message' });
        channel.ack(msg);
        handled('poison');
        return;
      }
      let timer: NodeJS.Timeout | undefined;
      try {
        await Promise.race([
          handler(parsed, meta),
          new Promise<never>((_, reject) => {
            timer = setTimeout(
              () => reject(new Error(`handler timed out after ${policy.handlerTimeoutMs} ms`)),
              policy.handlerTimeoutMs,
            );
          }),
        ]);
      } finally {
        clearTimeout(timer);
      }
      channel.ack(msg);
      handled('ack');
    } catch (err) {
      const reason = err instanceof Error ? err.message : String(err);
      markActiveSpanFailed(reason);
      // A store that is down is no fault of the message: it waits in the retry queue for as long
      // as the outage lasts and keeps its attempts for real failures. (Counted, a 10 s MongoDB or
      // Redis cut dead-lettered events, and the stats projection lost those signals.)
      const storeDown = isMongoUnavailable(err) || isRedisUnavailable(err);
      try {
        if (storeDown) {
          logger.warn(
            { queue, messageId: meta.messageId, attempt, err: reason },
            'store unavailable; will retry',
          );
          await sendConfirmed(channel, retryQueueName(sideOf, this.options.queueType), msg, {
            [ATTEMPT_HEADER]: attempt,
          });
          handled('retry');
        } else if (attempt >= policy.maxAttempts) {
          logger.error(
            { queue, messageId: meta.messageId, attempt, err: reason },
            'message failed for good → dead-letter',
          );
          await sendConfirmed(channel, `${sideOf}.dead`, msg, { 'x-error': reason.slice(0, 200) });
          handled('dead');
        } else {
          logger.warn(
            { queue, messageId: meta.messageId, attempt, err: reason },
            'message failed; will retry',
          );
          await sendConfirmed(channel, retryQueueName(sideOf, this.options.queueType), msg, {
            [ATTEMPT_HEADER]: attempt + 1,
          });
          handled('retry');
        }
        channel.ack(msg);
      } catch {
        // The channel is gone; the broker redelivers the unacked message after reconnect.
      }
    } finally {
      endTimer();
    }
  }

  /** Stops taking messages and waits for the ones being handled. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.unregisterDepths?.();
    const channel = this.channel;
    if (channel && this.consumerTag) await channel.cancel(this.consumerTag).catch(() => undefined);
    await Promise.allSettled([...this.inFlight]);
    if (channel) await channel.close().catch(() => undefined);
    this.channel = undefined;
  }
}
