import type { Delivery } from '@signal/contracts';
import { fail, succeed, type Failure, type Result } from '@signal/service-kit';
import type { ScheduleJob } from './delivery-jobs';
import type { AccountReadSlots } from './concurrency';
import { foldDelivery, type DeliveryState } from './delivery-state';
import type { IdempotencyKeys, WebhookStore } from './ports';
import type { DeliveryDocument, SubscriptionDocument } from './records';
import { urlProblem, type GuardPolicy } from './url-guard';
import { toDeliveryView } from './views';

/** What the subscriptions API's use cases are given. */
export interface SubscriptionDeps {
  repository: WebhookStore;
  idempotency: IdempotencyKeys;
  schedule: ScheduleJob;
  /**
   * The lane of an account's test events: its own (the API sees no worker's backlog). There a
   * test event is served as fan-out's first attempts are: for a subscription busy with its own
   * deliveries it waits in the worker for the next place. Sent to the first-attempt queue it was
   * put back to wait outside, behind all of the subscription's work (46 s at p50 in a burst).
   */
  testLaneOf(accountId: string): number;
  guard: GuardPolicy;
  secretOverlapMs: number;
  /** Subscriptions an account may hold when its token carries no plan limit. */
  maxPerAccount: number;
  /** Recover calls an account may make a minute. */
  recoverPerMinute: number;
  /** Delivery lists an account may have in progress at once (their cost follows the history). */
  listReads: AccountReadSlots;
}

/** The 400 of a URL the guard refuses, naming the field; undefined when the URL may be used. */
export function urlFailure(url: string, guard: GuardPolicy): Failure<'VALIDATION_ERROR'> | undefined {
  const problem = urlProblem(url, guard);
  return problem
    ? fail('VALIDATION_ERROR', problem, { details: [{ field: 'url', message: problem }] })
    : undefined;
}

export const webhookNotFound = (id: string): Failure<'NOT_FOUND'> =>
  fail('NOT_FOUND', `Webhook ${id} was not found.`);

/** The account's subscription `id`; another account's is not found, as one that does not exist. */
export async function ownedSubscription(
  deps: SubscriptionDeps,
  accountId: string,
  id: string,
): Promise<Result<SubscriptionDocument, 'NOT_FOUND'>> {
  const sub = await deps.repository.findSubscription(accountId, id);
  return sub ? succeed(sub) : webhookNotFound(id);
}

/** The account's delivery `deliveryId` of subscription `id`, with its state folded from its log. */
export async function ownedDelivery(
  deps: SubscriptionDeps,
  accountId: string,
  id: string,
  deliveryId: string,
): Promise<Result<{ doc: DeliveryDocument; state: DeliveryState }, 'NOT_FOUND'>> {
  const d = await deps.repository.findAccountDelivery(accountId, id, deliveryId);
  if (!d) return fail('NOT_FOUND', `Delivery ${deliveryId} was not found.`);
  return succeed({ doc: d, state: foldDelivery(d, await deps.repository.logOf([d._id])) });
}

/**
 * The delivery as it stands now: as a list shows it (an action's repeat answers with it), or with
 * every attempt (`withAttempts`: its detail). Not found once its subscription is deleted.
 */
export async function deliveryAsItStands(
  deps: SubscriptionDeps,
  accountId: string,
  id: string,
  deliveryId: string,
  withAttempts = false,
): Promise<Result<Delivery, 'NOT_FOUND'>> {
  const sub = await ownedSubscription(deps, accountId, id);
  if (!sub.ok) return sub;
  const found = await ownedDelivery(deps, accountId, id, deliveryId);
  if (!found.ok) return found;
  const { doc, state } = found.value;
  return succeed(toDeliveryView(doc, state, withAttempts ? doc.payload : undefined));
}

/**
 * The version of the subscription this request saw (its last change), stamped on the job it
 * queues: the worker holds subscriptions for up to a second, and without it a re-send or test
 * event right after enabling a subscription would be dropped against the worker's older,
 * disabled copy.
 */
export function subscriptionVersion(sub: SubscriptionDocument): number {
  return new Date(sub.updated_at).getTime();
}
