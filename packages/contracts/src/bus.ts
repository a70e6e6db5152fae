import { BUS_EVENTS, WEBHOOK_EVENTS } from './enums';
import { MESSAGE_POLICIES, SIGNAL_EVENTS_EXCHANGE } from './events';

/**
 * Who talks to whom on the broker: every exchange and queue, what is bound to it, which
 * deployable writes to it and which reads it. The AsyncAPI document (asyncapi.ts) and the bus
 * table in docs/bus.md are read from here; packages/contracts/test/bus-doc.test.ts holds it to the
 * names `brokerNames()` gives.
 */

/** A deployable: the webhooks service runs as two (its API and its worker). */
export type Deployable = 'gateway' | 'signals' | 'stats' | 'webhooks-api' | 'webhooks-worker';

/** The kinds of message on the bus: a signal event (routing key = its name) or a delivery job. */
export type BusMessageKind = 'signalEvent' | 'deliveryJob';

export interface BusQueue {
  /** The queue's name without the deployment's `AMQP_PREFIX`. */
  address: keyof typeof MESSAGE_POLICIES | 'webhooks.deliveries.due';
  description: string;
  consumer: Deployable;
  /** Routing keys bound from `signal.events`; none: producers send to the queue by name. */
  bindings?: readonly string[];
  /** Which message policy (schema, attempts, timeout) the consumer applies. */
  policy: keyof typeof MESSAGE_POLICIES;
  /** Deployables that send to the queue directly (default exchange, routing key = queue name). */
  directProducers?: readonly Deployable[];
}

export const BUS_EXCHANGE = {
  address: SIGNAL_EVENTS_EXCHANGE,
  type: 'topic',
  description:
    "Every change of a signal, published by the signals service's outbox relay once the write is " +
    'stored (at least once: a crash between the confirm and the outbox clean-up sends it again; ' +
    'consumers dedupe by `id`). Routing key = the event name.',
  producer: 'signals' as Deployable,
  events: BUS_EVENTS,
} as const;

export const BUS_QUEUES: readonly BusQueue[] = [
  {
    address: 'stats.signal-events',
    description: 'The statistics projection: every signal event, applied in batches.',
    consumer: 'stats',
    bindings: ['signal.*'],
    policy: 'stats.signal-events',
  },
  {
    address: 'webhooks.signal-events',
    description:
      "Fan-out to subscriptions: one delivery per matching subscription, each a job in a lane of its account ('webhooks.deliveries.lane.{lane}').",
    consumer: 'webhooks-worker',
    bindings: WEBHOOK_EVENTS,
    policy: 'webhooks.signal-events',
  },
  {
    address: 'signals.stream-events',
    description:
      "The live stream's feeder: public events into the stream's log (every signals replica competes).",
    consumer: 'signals',
    bindings: WEBHOOK_EVENTS,
    policy: 'signals.stream-events',
  },
  {
    address: 'webhooks.deliveries',
    description:
      'First attempts of deliveries that no lane holds (older releases’ fan-out and test events, jobs spilled from a lane) and attempts with no wait left.',
    consumer: 'webhooks-worker',
    policy: 'webhooks.deliveries',
    directProducers: ['webhooks-api', 'webhooks-worker'],
  },
  {
    address: 'webhooks.deliveries.due',
    description: 'Retries whose wait is over, out of the delay cascade: never queued behind first attempts.',
    consumer: 'webhooks-worker',
    policy: 'webhooks.deliveries',
  },
];

/**
 * The lanes of first attempts: fan-out sends an account's to its own lane (FNV-1a of the account
 * id modulo the lanes a worker is configured with) or its second (FNV-1a again, from the first
 * hash, over the other lanes), the API an account's test events to its own lane, and the worker
 * reads every lane. A job not taken within `spillMs` dead-letters into `into`, which every
 * release reads; a lane's failed handlings go to `into`'s retry and dead-letter queues.
 */
export const BUS_DELIVERY_LANES = {
  address: 'webhooks.deliveries.lane.{lane}',
  max: 32,
  spillMs: 60_000,
  into: 'webhooks.deliveries',
  producers: ['webhooks-worker', 'webhooks-api'] as readonly Deployable[],
  consumer: 'webhooks-worker' as Deployable,
} as const;

/**
 * The webhook retries' delay cascade (packages/messaging/src/delay-cascade.ts): an exchange and a
 * queue per level; a job enters at the level of its wait's highest bit, the routing key carries
 * the wait in binary, and level 0 dead-letters into `webhooks.deliveries.due`. Its queues are
 * quorum queues; with `AMQP_QUEUE_TYPE=classic` the cascade is `webhooks.delay.L{level}` instead.
 */
export const BUS_DELAY_CASCADE = {
  address: 'webhooks.delay.quorum.L{level}',
  levels: 14,
  unitMs: 250,
  target: 'webhooks.deliveries.due',
  producers: ['webhooks-api', 'webhooks-worker'] as readonly Deployable[],
} as const;

/**
 * AMQP headers and properties a message carries. `x-request-id` names the request that caused
 * it; the W3C trace context travels in the event's own `context` (the relay publishes later,
 * for many writes at once, so the publishing process's trace is not the write's).
 */
export const BUS_HEADERS = {
  'x-request-id': 'the request id of the write that caused the message (optional)',
  'x-attempt': 'the attempt a consumer retry is at (set on retry, absent on the first attempt)',
  'x-routing-key': 'the routing key the message was first published with (kept across retry and dead queues)',
} as const;
