import {
  WEBHOOK_TEST_EVENT,
  type Delivery,
  type DeliveryEventName,
  type WebhookEventName,
  type WebhookTestData,
} from '@signal/contracts';
import { fail, newId, succeed, type Result } from '@signal/service-kit';
import { foldDelivery } from './delivery-state';
import type { DeliveryDocument } from './records';
import { performOnce, type Performed } from './perform-once';
import {
  deliveryAsItStands,
  ownedSubscription,
  subscriptionVersion,
  type SubscriptionDeps,
} from './subscription-rules';
import { toDeliveryView } from './views';

/** What a sample signal's performance reads like after each event. */
const SAMPLE_PERFORMANCE: Record<Exclude<WebhookEventName, 'signal.new'>, WebhookTestData['performance']> = {
  'signal.winner': { roi: 250, ath_roi: 310, status: 'winner', time_to_ath_hours: 6 },
  'signal.dead': { roi: -85, ath_roi: 20, status: 'dead', time_to_ath_hours: 1 },
  'signal.rugged': { roi: -99, ath_roi: 5, status: 'rugged', time_to_ath_hours: 0.5 },
};

/**
 * What a test event carries: a sample signal in the shape of `event`'s data (signal.new without
 * `performance`, the others with it, as the real events come), marked `test: true`, so a
 * receiver written to the real events' payload accepts it. Its id names no signal.
 */
function testEventData(subscriptionId: string, event: DeliveryEventName): WebhookTestData {
  return {
    id: 'sig_00000000000000000000000000',
    token: {
      symbol: 'TEST',
      name: 'Test Token',
      contract: 'So1anaTestContract00000000000000000000pump',
      age_hours: 2,
      dex_paid: true,
      socials: { twitter: 'https://x.com/signal_test', telegram: null, website: null },
    },
    metrics: {
      mcap_entry: 100_000,
      mcap_current: 150_000,
      mcap_ath: 180_000,
      volume_24h: 50_000,
      holders: 420,
      liquidity: 25_000,
    },
    type: 'new',
    is_premium: false,
    ...(event === 'signal.new' || event === WEBHOOK_TEST_EVENT
      ? {}
      : { performance: SAMPLE_PERFORMANCE[event] }),
    test: true,
    subscription_id: subscriptionId,
    message: 'This is a test event from Signal Service.',
  };
}

/**
 * Queues one test delivery of `event` (default webhook.test), once per Idempotency-Key: a repeat
 * answers with the delivery the first request queued, as it stands now.
 */
export function sendTestEvent(
  deps: SubscriptionDeps,
  accountId: string,
  id: string,
  event: DeliveryEventName = WEBHOOK_TEST_EVENT,
  idempotencyKey?: string,
): Promise<Result<Performed<Delivery>, 'NOT_FOUND' | 'CONFLICT' | 'IDEMPOTENCY_CONFLICT'>> {
  return performOnce(deps.idempotency, accountId, idempotencyKey, {
    request: ['sendWebhookTest', id, event],
    perform: () => queueTestEvent(deps, accountId, id, event),
    keep: (delivery) => delivery.id,
    replay: (kept) => deliveryAsItStands(deps, accountId, id, kept),
  });
}

/** Queues one test delivery of `event` with a sample payload of its shape. */
async function queueTestEvent(
  deps: SubscriptionDeps,
  accountId: string,
  id: string,
  event: DeliveryEventName,
): Promise<Result<Delivery, 'NOT_FOUND' | 'CONFLICT'>> {
  const found = await ownedSubscription(deps, accountId, id);
  if (!found.ok) return found;
  const sub = found.value;
  // The worker fails a disabled subscription's deliveries without an attempt: a test queued now
  // would be returned as "pending" and then fail unsent. Saying so up front tells the caller
  // what to do.
  if (sub.status !== 'enabled') {
    const why = sub.disabled_reason ? ` ${sub.disabled_reason}` : '';
    return fail('CONFLICT', `This webhook is disabled.${why} Enable it before sending a test event.`);
  }
  const now = new Date();
  const delivery: DeliveryDocument = {
    _id: newId('dlv'),
    account_id: accountId,
    webhook_id: sub._id,
    event_id: newId('evt'),
    event,
    payload: JSON.stringify({
      event,
      timestamp: now.toISOString(),
      data: testEventData(sub._id, event),
    }),
    status: 'pending',
    created_at: now,
  };
  await deps.repository.insertDelivery(delivery);
  await deps.schedule(
    {
      delivery_id: delivery._id,
      attempt: 1,
      webhook_id: delivery.webhook_id,
      event: delivery.event,
      payload: delivery.payload,
      subscription_at: subscriptionVersion(sub),
      job_id: newId('job'),
    },
    undefined,
    deps.testLaneOf(accountId),
  );
  return succeed(toDeliveryView(delivery, foldDelivery(delivery, [])));
}
