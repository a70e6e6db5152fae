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

/** Internal job on the webhooks delivery queue: one attempt of one delivery. */
export const webhookDeliveryJobSchema = z.object({
  delivery_id: z.string().regex(/^dlv_[0-9A-HJKMNP-TV-Z]{26}$/),
  attempt: z.number().int().min(1).max(20),
});
export type WebhookDeliveryJob = z.infer<typeof webhookDeliveryJobSchema>;

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
