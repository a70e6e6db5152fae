import {
  WEBHOOK_TEST_EVENT,
  type Delivery,
  type DeliveryEventName,
  type SignalType,
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

/** The sample's market caps: its entry, and what it stands at and peaked at after each event. */
const ENTRY_MCAP = 100_000;
const SAMPLE_MARKET: Record<DeliveryEventName, { mcap_current: number; mcap_ath: number }> = {
  'webhook.test': { mcap_current: 150_000, mcap_ath: 180_000 },
  'signal.new': { mcap_current: 150_000, mcap_ath: 180_000 },
  'signal.winner': { mcap_current: 350_000, mcap_ath: 410_000 },
  'signal.dead': { mcap_current: 15_000, mcap_ath: 120_000 },
  'signal.rugged': { mcap_current: 1_000, mcap_ath: 105_000 },
};

/** What each status change's sample reads like beside its market caps. */
const SAMPLE_STATUS: Record<
  Exclude<WebhookEventName, 'signal.new'>,
  Pick<NonNullable<WebhookTestData['performance']>, 'status' | 'time_to_ath_hours'>
> = {
  'signal.winner': { status: 'winner', time_to_ath_hours: 6 },
  'signal.dead': { status: 'dead', time_to_ath_hours: 1 },
  'signal.rugged': { status: 'rugged', time_to_ath_hours: 0.5 },
};

/** ROI in percent from the entry cap, as the signals service derives it (150 means +150 %). */
const roiOf = (mcap: number) => Math.round((mcap / ENTRY_MCAP - 1) * 10_000) / 100;

/**
 * What a test event carries: a sample signal in the shape of `event`'s data (signal.new without
 * `performance`, the others with it, as the real events come), marked `test: true`, so a
 * receiver written to the real events' payload accepts it: its ROI follows from its market caps,
 * and its type is one the subscription asks for. Its id names no signal.
 */
function testEventData(
  sub: { _id: string; types?: readonly SignalType[] | null },
  event: DeliveryEventName,
): WebhookTestData {
  const market = SAMPLE_MARKET[event];
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
      mcap_entry: ENTRY_MCAP,
      ...market,
      volume_24h: 50_000,
      holders: 420,
      liquidity: 25_000,
    },
    type: sub.types?.[0] ?? 'new',
    is_premium: false,
    ...(event === 'signal.new' || event === WEBHOOK_TEST_EVENT
      ? {}
      : {
          performance: {
            roi: roiOf(market.mcap_current),
            ath_roi: roiOf(market.mcap_ath),
            ...SAMPLE_STATUS[event],
          },
        }),
    test: true,
    subscription_id: sub._id,
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
      data: testEventData(sub, event),
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
