import {
  isWebhookEvent,
  payloadFor,
  type SignalEventRead,
  type WebhookEvent,
  type WebhookEventName,
} from '@signal/contracts';
import { newId } from '@signal/service-kit';
import type { DeliveryDocument, SubscriptionDocument } from './records';
import type { ScheduleJob } from './delivery-jobs';
import { deliveryIdFor } from './delivery-state';
import type { DeliveryWriter, OpenDeliveries } from './ports';

/**
 * A subscription wants an event when it asked for the event's name and, unless its `types` is
 * null (every type), for the signal's type.
 */
export function wants(sub: SubscriptionDocument, event: WebhookEvent): boolean {
  return sub.events.includes(event.name) && (sub.types === null || sub.types.includes(event.signal.type));
}

export interface FanOutDeps {
  deliveries: DeliveryWriter;
  /** Deliveries kept as failed (a disabled subscription's) are open to recover. */
  open: OpenDeliveries;
  schedule: ScheduleJob;
  /** The lane for an account's next first attempt. */
  laneFor(accountId: string): number;
  subscriptionsFor(event: WebhookEventName): Promise<SubscriptionDocument[]>;
  /** Of these deliveries, the ones whose log is still empty (never attempted). */
  unattempted(deliveryIds: string[]): Promise<Set<string>>;
}

/**
 * Turns a bus event into deliveries: every subscription that wants it gets one delivery, all of
 * them in one write (shared with other events of the same moment), with ids derived from
 * (subscription, event) → each pending delivery's first attempt is queued in a lane of its
 * account. Disabled
 * subscriptions get their delivery kept as failed.
 *
 * A first delivery of the event queues the attempts while the write is under way (the job
 * carries all the attempt needs, so neither waits for the other, and the event is acknowledged
 * once both are done). An event seen before (`seenBefore`: redelivered, or retried after a
 * failure) first writes, then queues only the deliveries never attempted — the one read, on
 * that rare path — so a crash does not send everything twice.
 */
export async function fanOut(deps: FanOutDeps, event: SignalEventRead, seenBefore = false): Promise<number> {
  // A name this reader does not know (a newer producer's) is skipped, never dead-lettered.
  if (!isWebhookEvent(event)) return 0;
  const subscriptions = (await deps.subscriptionsFor(event.name)).filter((s) => wants(s, event));
  if (subscriptions.length === 0) return 0;
  const body = JSON.stringify(payloadFor(event));
  const now = new Date();
  const eventTime = Date.parse(event.occurred_at);
  const docs: DeliveryDocument[] = subscriptions.map((sub) => ({
    _id: deliveryIdFor(sub._id, event.id, eventTime),
    account_id: sub.account_id,
    webhook_id: sub._id,
    event_id: event.id,
    event: event.name,
    payload: body,
    status: sub.status === 'enabled' ? 'pending' : 'failed',
    created_at: now,
  }));
  const queue = (list: DeliveryDocument[]) =>
    Promise.all(
      list.map((d) =>
        deps.schedule(
          {
            delivery_id: d._id,
            attempt: 1,
            webhook_id: d.webhook_id,
            event: d.event,
            payload: d.payload,
            job_id: newId('job'),
          },
          undefined,
          deps.laneFor(d.account_id),
        ),
      ),
    );
  const markFailed = () =>
    Promise.all(
      docs
        .filter((d) => d.status === 'failed')
        .map((d) =>
          deps.open.mark({ _id: d._id, webhook_id: d.webhook_id, account_id: d.account_id, at: now }),
        ),
    );
  const pending = docs.filter((d) => d.status === 'pending');
  if (!seenBefore) {
    await Promise.all([deps.deliveries.insert(docs), queue(pending), markFailed()]);
    return pending.length;
  }
  const existing = await deps.deliveries.insert(docs);
  await markFailed();
  const again = existing.size > 0 ? await deps.unattempted([...existing]) : new Set<string>();
  const first = pending.filter((d) => !existing.has(d._id) || again.has(d._id));
  await queue(first);
  return first.length;
}
