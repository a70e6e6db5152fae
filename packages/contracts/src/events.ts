import { z } from 'zod';
import { BUS_EVENTS } from './enums';
import { signalDetailSchema } from './signals';

export const SIGNAL_EVENTS_EXCHANGE = 'signal.events';

export const eventIdSchema = z.string().regex(/^evt_[0-9A-HJKMNP-TV-Z]{26}$/);

/** The signal as it was when the event happened; `version` orders updates of one signal. */
export const signalSnapshotSchema = signalDetailSchema.extend({ version: z.number().int().positive() });
export type SignalSnapshot = z.infer<typeof signalSnapshotSchema>;

/** One message on the `signal.events` topic exchange; routing key = `name`. */
export const signalEventSchema = z.object({
  id: eventIdSchema,
  name: z.enum(BUS_EVENTS),
  occurred_at: z.iso.datetime({ offset: true }),
  signal: signalSnapshotSchema,
});
export type SignalEvent = z.infer<typeof signalEventSchema>;

/**
 * Internal job on the webhooks delivery queue: one attempt of one delivery. It carries what the
 * attempt needs (subscription, event, body), so an attempt reads nothing from the store; a job
 * without them (an older producer) makes the worker read the delivery. `due_at` (ms) is when
 * the attempt is due: a wait hops through fixed delay buckets until then.
 */
export const webhookDeliveryJobSchema = z.object({
  delivery_id: z.string().regex(/^dlv_[0-9A-HJKMNP-TV-Z]{26}$/),
  attempt: z.number().int().min(1).max(20),
  webhook_id: z.string().max(64).optional(),
  event: z.string().max(64).optional(),
  payload: z.string().max(1_000_000).optional(),
  due_at: z.number().int().nonnegative().optional(),
});
export type WebhookDeliveryJob = z.infer<typeof webhookDeliveryJobSchema>;

/**
 * Fixed delays of the webhook retry queues, largest last. A wait of any length hops through
 * them largest-first (Convoy declares one TTL queue per delay the same way): each queue's TTL
 * is the same for every message in it, so a message never waits behind a longer one, which a
 * per-message TTL in a shared queue would do (RabbitMQ expires only at the head).
 */
export const DELAY_BUCKETS_MS = [
  250, 1000, 5000, 10_000, 30_000, 60_000, 300_000, 900_000, 3_600_000,
] as const;

/** How early a job may fire (queue and clock jitter); anything earlier waits another hop. */
export const DUE_TOLERANCE_MS = 20;

/**
 * The bucket for the next hop of a wait with `remainingMs` to go, or 0 when it is due now: the
 * largest bucket that fits, or the smallest when even that one overshoots, so an attempt never
 * fires early and at most one smallest bucket (250 ms) late.
 */
export function nextDelayHop(remainingMs: number): number {
  if (remainingMs <= DUE_TOLERANCE_MS) return 0;
  let hop: number = DELAY_BUCKETS_MS[0];
  for (const b of DELAY_BUCKETS_MS) if (b <= remainingMs) hop = b;
  return hop;
}

/** Where each message goes, how often it may be retried and how long one handling may take. */
export const MESSAGE_POLICIES = {
  'stats.signal-events': {
    schema: signalEventSchema,
    maxAttempts: 5,
    retryDelayMs: 1000,
    handlerTimeoutMs: 10_000,
  },
  'webhooks.signal-events': {
    schema: signalEventSchema,
    maxAttempts: 5,
    retryDelayMs: 1000,
    handlerTimeoutMs: 10_000,
  },
  'webhooks.deliveries': {
    schema: webhookDeliveryJobSchema,
    maxAttempts: 5,
    retryDelayMs: 1000,
    handlerTimeoutMs: 15_000,
  },
} as const;
export type QueueName = keyof typeof MESSAGE_POLICIES;
