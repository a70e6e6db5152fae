import {
  isWebhookEventName,
  type SignalEventRead,
  type WebhookEventName,
  type WebhookPayload,
} from '@signal/contracts';
import { newId } from '@signal/service-kit';
import type { SubscriptionDocument } from '../data/webhook.models';
import type { WebhookRepository } from '../data/webhook.repository';
import type { ScheduleJob } from './delivery-jobs';

/** A bus event that subscribers can receive (its name narrowed to a webhook event). */
export type WebhookEvent = SignalEventRead & { name: WebhookEventName };

export function isWebhookEvent(event: SignalEventRead): event is WebhookEvent {
  return isWebhookEventName(event.name);
}

export function payloadFor(event: WebhookEvent): WebhookPayload {
  const s = event.signal;
  return {
    event: event.name,
    timestamp: event.occurred_at,
    data: {
      id: s.id,
      token: s.token,
      metrics: s.metrics,
      type: s.type,
      is_premium: s.is_premium,
      ...(event.name === 'signal.new' ? {} : { performance: s.performance }),
    },
  };
}

/** The spec's rule 4: `types` (when set) restricts by signal type. */
export function wants(sub: SubscriptionDocument, event: WebhookEvent): boolean {
  return (
    sub.events.includes(event.name) &&
    (sub.types === null || sub.types.includes(event.signal.type))
  );
}

/**
 * Story: a bus event → every subscription that wants it gets one delivery (unique per
 * subscription and event, so a redelivered event adds nothing) → each pending delivery's
 * first attempt is queued. Disabled subscriptions get their delivery kept as failed.
 */
export async function fanOut(
  repository: WebhookRepository,
  schedule: ScheduleJob,
  event: SignalEventRead,
  subscriptionsFor: (event: WebhookEventName) => Promise<SubscriptionDocument[]> = (e) =>
    repository.subscriptionsFor(e),
): Promise<number> {
  // A name this reader does not know (a newer producer's) is skipped, never dead-lettered.
  if (!isWebhookEvent(event)) return 0;
  const subscriptions = (await subscriptionsFor(event.name)).filter((s) =>
    wants(s, event),
  );
  const body = JSON.stringify(payloadFor(event));
  const now = new Date();
  const deliveries = await repository.insertDeliveries(
    subscriptions.map((sub) => ({
      _id: newId('dlv'),
      account_id: sub.account_id,
      webhook_id: sub._id,
      event_id: event.id,
      event: event.name,
      payload: body,
      status: sub.status === 'enabled' ? 'pending' : 'failed',
      attempts_made: 0,
      next_attempt_at: sub.status === 'enabled' ? now : null,
      attempts: [],
      created_at: now,
      updated_at: now,
    })),
  );
  const first = deliveries.filter((d) => d.status === 'pending' && d.attempts_made === 0);
  await Promise.all(
    first.map((d) =>
      schedule({
        delivery_id: d._id,
        attempt: 1,
        webhook_id: d.webhook_id,
        event: d.event,
        payload: d.payload,
      }),
    ),
  );
  return first.length;
}
