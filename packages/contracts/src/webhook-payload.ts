import type { WebhookEventName } from './enums';
import { isWebhookEventName } from './enums';
import type { SignalEventRead } from './events';
import type { WebhookPayload } from './webhooks';

/** A bus event that subscribers can receive (its name narrowed to a webhook event). */
export type WebhookEvent = SignalEventRead & { name: WebhookEventName };

export function isWebhookEvent(event: SignalEventRead): event is WebhookEvent {
  return isWebhookEventName(event.name);
}

/**
 * The body a subscriber receives for a bus event. One source for every way an event leaves the
 * system: the webhooks worker POSTs it and the signals service's live stream sends it as an
 * event's `data`, so a handler written for one takes the other unchanged.
 */
export function payloadFor(event: WebhookEvent): WebhookPayload {
  const s = event.signal;
  const data = { id: s.id, token: s.token, metrics: s.metrics, type: s.type, is_premium: s.is_premium };
  const timestamp = event.occurred_at;
  // signal.new carries the signal as it entered; the status changes carry its performance too.
  return event.name === 'signal.new'
    ? { event: event.name, timestamp, data }
    : { event: event.name, timestamp, data: { ...data, performance: s.performance } };
}
