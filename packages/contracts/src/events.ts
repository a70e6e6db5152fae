import { z } from 'zod';
import { BUS_EVENTS } from './enums';
import { prefixedIdSchema } from './ids';
import { signalDetailSchema } from './signals';

export const SIGNAL_EVENTS_EXCHANGE = 'signal.events';

export const eventIdSchema = prefixedIdSchema('evt');

/** The signal as it was when the event happened; `version` orders updates of one signal. */
export const signalSnapshotSchema = signalDetailSchema.extend({ version: z.number().int().positive() });
export type SignalSnapshot = z.infer<typeof signalSnapshotSchema>;

/**
 * Version of the event envelope this code writes. Versions only ever add fields (a reader one
 * version behind keeps what it knows and ignores the rest); a change that removes or re-means
 * a field is a new event name instead, so a new version never breaks a deployed reader.
 */
export const SIGNAL_EVENT_VERSION = 1;

/**
 * Where the event was made: the W3C trace context and request id of the write that made it,
 * stored with the outbox entry so the relay (which runs later, for many writes at once)
 * publishes each event under its own trace instead of whichever request woke the relay.
 */
export const eventContextSchema = z.object({
  traceparent: z
    .string()
    .regex(/^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/)
    .optional(),
  tracestate: z.string().max(512).optional(),
  request_id: z.string().max(128).optional(),
});
export type EventContext = z.infer<typeof eventContextSchema>;

/** One message on the `signal.events` topic exchange, as producers write it; routing key = `name`. */
export const signalEventSchema = z.strictObject({
  schema_version: z.literal(SIGNAL_EVENT_VERSION),
  id: eventIdSchema,
  name: z.enum(BUS_EVENTS),
  occurred_at: z.iso.datetime({ offset: true }),
  signal: signalSnapshotSchema,
  context: eventContextSchema.optional(),
});
export type SignalEvent = z.infer<typeof signalEventSchema>;

/**
 * The snapshot as consumers read it: the same fields, but every object ignores fields it does
 * not know (the API's schemas are strict; a reader must not be, or a producer one version
 * ahead would dead-letter every event at consumers deployed before it).
 */
const detail = signalDetailSchema.shape;
export const signalSnapshotReaderSchema = z.object({
  ...detail,
  token: z.object({ ...detail.token.shape, socials: detail.token.shape.socials.strip() }),
  metrics: detail.metrics.strip(),
  performance: detail.performance.strip(),
  version: z.number().int().positive(),
});

/**
 * A bus event as consumers read it (tolerant reader): any envelope version from 1 on (an event
 * without `schema_version` predates it and is version 1), unknown fields ignored at every
 * level, and any event name — a consumer skips names it does not know instead of dead-letting
 * them, since a newer producer may announce more than this reader handles.
 */
export const signalEventReaderSchema = z.object({
  schema_version: z.number().int().min(1).default(1),
  id: eventIdSchema,
  name: z.string().min(1).max(64),
  occurred_at: z.iso.datetime({ offset: true }),
  signal: signalSnapshotReaderSchema,
  context: eventContextSchema.optional().catch(undefined),
});
export type SignalEventRead = z.infer<typeof signalEventReaderSchema>;

/**
 * Internal job on the webhooks delivery queue: one attempt of one delivery. It carries what the
 * attempt needs (subscription, event, body), so an attempt reads nothing from the store; a job
 * without them (an older producer) makes the worker read the delivery. `due_at` (ms) is when
 * the attempt is due: until then it waits in the broker's delay cascade
 * (packages/messaging/src/delay-cascade.ts).
 */
export const webhookDeliveryJobSchema = z.object({
  delivery_id: prefixedIdSchema('dlv'),
  attempt: z.number().int().min(1).max(20),
  webhook_id: z.string().max(64).optional(),
  event: z.string().max(64).optional(),
  payload: z.string().max(1_000_000).optional(),
  due_at: z.number().int().nonnegative().optional(),
  /**
   * The subscription's last change (ms) as the API saw it when queuing this job (re-sends, test
   * events): a worker holding an older copy reads it again before deciding.
   */
  subscription_at: z.number().int().nonnegative().optional(),
  /**
   * This job's own id (a job put back to wait keeps it). Two jobs may carry one attempt (a
   * "retry now" beside the retry timer's): the first to claim the attempt makes it, the other
   * finds it claimed and does nothing; a job redelivered after a crash finds its own claim.
   */
  job_id: z.string().max(64).optional(),
  /** The attempt is the last whatever its number (a re-send of a failed delivery): no retry after it. */
  one_attempt: z.boolean().optional(),
  /**
   * The delivery is in the open-deliveries index already: its earlier attempt failed and was
   * marked there before this job was queued. A failure of this attempt writes no entry again
   * (an insert the store already holds costs FerretDB one transaction per document of its batch).
   */
  marked_open: z.boolean().optional(),
  /**
   * Times this job has been put back to wait for a place (its subscription or its account full):
   * each wait doubles (deferralDelayMs), so a stalled account's backlog does not go round the
   * broker every second. A worker that predates it ignores it and waits a second.
   */
  deferred: z.number().int().min(0).max(10_000).optional(),
});
export type WebhookDeliveryJob = z.infer<typeof webhookDeliveryJobSchema>;

/**
 * The fixed-delay queues of the previous retry layout (one TTL queue per delay). Waits now go
 * through the delay cascade (packages/messaging/src/delay-cascade.ts); nothing declares or uses
 * these queues: their names are kept only so that clean-up (`purge`, tests) removes any a broker
 * still holds from before.
 */
export const DELAY_BUCKETS_MS = [
  250, 1000, 5000, 10_000, 30_000, 60_000, 300_000, 900_000, 3_600_000,
] as const;

/** How early a job may fire (queue and clock jitter) before it is put back to wait the rest. */
export const DUE_TOLERANCE_MS = 20;

/** Where each message goes, how often it may be retried and how long one handling may take. */
export const MESSAGE_POLICIES = {
  'stats.signal-events': {
    schema: signalEventReaderSchema,
    maxAttempts: 5,
    retryDelayMs: 1000,
    // The consumer projects by the batch (up to 500, one batch at a time): an event may wait for
    // the batch ahead of its own, and a timeout shorter than that wait on a loaded store would
    // send events that are only queued into retries.
    handlerTimeoutMs: 60_000,
  },
  'webhooks.signal-events': {
    schema: signalEventReaderSchema,
    maxAttempts: 5,
    retryDelayMs: 1000,
    handlerTimeoutMs: 10_000,
  },
  /** The signals service's feeder: public events into the live stream's log (one Redis write each). */
  'signals.stream-events': {
    schema: signalEventReaderSchema,
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
