import type { Delivery, RecoverWebhookResult } from '@signal/contracts';
import { fail, succeed, type Result } from '@signal/service-kit';
import { logEntryId, requeueSeq, withStates, type DeliveryState } from './delivery-state';
import type { DeliveryDocument, DeliveryLogEntry, SubscriptionDocument } from './records';
import {
  ownedDelivery,
  ownedSubscription,
  subscriptionVersion,
  type SubscriptionDeps,
} from './subscription-rules';
import { toDeliveryView } from './views';

/**
 * Queues one more attempt of a failed delivery: same webhook-id, same body. The re-send is an
 * entry of the log at the next attempt's place, so two concurrent re-sends (or recoveries)
 * queue one attempt: false when another took that place first.
 */
async function requeue(
  deps: SubscriptionDeps,
  sub: SubscriptionDocument,
  doc: DeliveryDocument,
  state: DeliveryState,
  now: Date,
): Promise<boolean> {
  const attempt = state.last_attempt + 1;
  const seq = requeueSeq(attempt);
  const entry: DeliveryLogEntry = {
    _id: logEntryId(doc._id, seq),
    delivery_id: doc._id,
    webhook_id: doc.webhook_id,
    seq,
    kind: 'requeued',
    attempt,
    status: 'pending',
    next_attempt_at: now,
    at: now,
    started_at: null,
    duration_ms: null,
    status_code: null,
    error: null,
  };
  if (!(await deps.repository.appendLogEntry(entry))) return false;
  await deps.schedule({
    delivery_id: doc._id,
    attempt,
    webhook_id: doc.webhook_id,
    event: doc.event,
    payload: doc.payload,
    subscription_at: subscriptionVersion(sub),
  });
  return true;
}

/** Re-sends a failed delivery (one more attempt). */
export async function retryDelivery(
  deps: SubscriptionDeps,
  accountId: string,
  id: string,
  deliveryId: string,
): Promise<Result<Delivery, 'NOT_FOUND' | 'CONFLICT'>> {
  const sub = await ownedSubscription(deps, accountId, id);
  if (!sub.ok) return sub;
  const found = await ownedDelivery(deps, accountId, id, deliveryId);
  if (!found.ok) return found;
  const { doc, state } = found.value;
  if (state.status !== 'failed')
    return fail('CONFLICT', `Only failed deliveries can be re-sent; this one is ${state.status}.`);
  if (sub.value.status !== 'enabled')
    return fail('CONFLICT', 'Enable the webhook before re-sending its deliveries.');
  const now = new Date();
  if (!(await requeue(deps, sub.value, doc, state, now)))
    return fail('CONFLICT', 'This delivery is being re-sent already.');
  return succeed(toDeliveryView(doc, { ...state, status: 'pending', next_attempt_at: now, updated_at: now }));
}

/** Re-sends queued at once by a recovery (each a log append and a publish). */
const RECOVER_CONCURRENCY = 16;

/**
 * Re-sends every delivery of the webhook created at or after `since` that is failed now (one
 * more attempt each, as a re-send) and returns how many were queued. Idempotent: a repeat
 * finds them pending (or succeeded) and queues none of them again; concurrent recoveries queue
 * each delivery once (the re-send's place in its log is taken once).
 */
export async function recoverDeliveries(
  deps: SubscriptionDeps,
  accountId: string,
  id: string,
  since: Date,
): Promise<Result<RecoverWebhookResult, 'NOT_FOUND' | 'CONFLICT'>> {
  const found = await ownedSubscription(deps, accountId, id);
  if (!found.ok) return found;
  const sub = found.value;
  if (sub.status !== 'enabled')
    return fail('CONFLICT', 'Enable the webhook before recovering its failed deliveries.');
  const [docs, entries] = await Promise.all([
    deps.repository.deliveriesSince(id, since),
    deps.repository.logOfSubscription(id),
  ]);
  const failed = withStates(docs, entries).filter((r) => r.state.status === 'failed');
  const now = new Date();
  let queued = 0;
  // Bodies are read only for the deliveries sent again, a few at a time (the headers above
  // may be many).
  for (let i = 0; i < failed.length; i += RECOVER_CONCURRENCY) {
    const done = await Promise.all(
      failed.slice(i, i + RECOVER_CONCURRENCY).map(async (r) => {
        const doc = await deps.repository.findDelivery(r.doc._id);
        return doc ? requeue(deps, sub, doc, r.state, now) : false;
      }),
    );
    queued += done.filter(Boolean).length;
  }
  return succeed({ since: since.toISOString(), queued });
}
