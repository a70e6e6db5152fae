import {
  RECOVER_PAGE_SIZE,
  recoverWebhookResultSchema,
  type Delivery,
  type RecoverWebhookResult,
} from '@signal/contracts';
import { fail, newId, succeed, type Result } from '@signal/service-kit';
import { foldDelivery, logEntryId, requeueSeq, type DeliveryState } from './delivery-state';
import { performOnce, type Performed } from './perform-once';
import type { DeliveryDocument, DeliveryLogEntry, SubscriptionDocument } from './records';
import {
  deliveryAsItStands,
  ownedDelivery,
  ownedSubscription,
  subscriptionVersion,
  type SubscriptionDeps,
} from './subscription-rules';
import { toDeliveryView } from './views';

/** What asking for an attempt now did. */
type AttemptNow = 'queued' | 'queued_already' | 'succeeded';

/**
 * Attempt a delivery now: the one behaviour behind "retry now" and recover. Same webhook-id,
 * same body.
 * - A failed delivery gets one more attempt; if it fails, the delivery is failed again (no retries).
 * - A pending one (waiting for its retry timer, or its first attempt) has its waiting attempt
 *   made now; the timer's job later finds that attempt claimed and does nothing, and a failure
 *   now goes on with the retries as before.
 * The request is an entry of the log at the attempt's place, so concurrent requests (and
 * recoveries) queue one job: `queued_already` when another took that place first.
 */
async function attemptNow(
  deps: SubscriptionDeps,
  sub: SubscriptionDocument,
  doc: DeliveryDocument,
  state: DeliveryState,
  now: Date,
): Promise<AttemptNow> {
  if (state.status === 'succeeded') return 'succeeded';
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
  if (!(await deps.repository.appendLogEntry(entry))) return 'queued_already';
  await deps.schedule({
    delivery_id: doc._id,
    attempt,
    webhook_id: doc.webhook_id,
    event: doc.event,
    payload: doc.payload,
    subscription_at: subscriptionVersion(sub),
    job_id: newId('job'),
    ...(state.status === 'failed' ? { one_attempt: true } : {}),
  });
  return 'queued';
}

/**
 * Attempts one delivery now, once per Idempotency-Key: a repeat answers with the delivery as it
 * stands now instead of asking for one more attempt.
 */
export function retryDelivery(
  deps: SubscriptionDeps,
  accountId: string,
  id: string,
  deliveryId: string,
  idempotencyKey?: string,
): Promise<Result<Performed<Delivery>, 'NOT_FOUND' | 'CONFLICT' | 'IDEMPOTENCY_CONFLICT'>> {
  return performOnce(deps.idempotency, accountId, idempotencyKey, {
    request: ['retryWebhookDelivery', id, deliveryId],
    perform: () => attemptDeliveryNow(deps, accountId, id, deliveryId),
    keep: (delivery) => delivery.id,
    replay: () => deliveryAsItStands(deps, accountId, id, deliveryId),
  });
}

/** Attempts one delivery now: a failed one once more, a pending one without waiting for its timer. */
async function attemptDeliveryNow(
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
  if (state.status === 'succeeded') return fail('CONFLICT', 'This delivery succeeded already.');
  if (sub.value.status !== 'enabled')
    return fail('CONFLICT', 'Enable the webhook before re-sending its deliveries.');
  const now = new Date();
  const done = await attemptNow(deps, sub.value, doc, state, now);
  if (done === 'queued_already') {
    const current = await ownedDelivery(deps, accountId, id, deliveryId);
    if (!current.ok) return current;
    return succeed(toDeliveryView(current.value.doc, current.value.state));
  }
  return succeed(toDeliveryView(doc, { ...state, status: 'pending', next_attempt_at: now, updated_at: now }));
}

/**
 * Did the delivery's latest attempt come from a request (retry now, recover), not its own
 * retries? Recover then leaves it alone: a failed one has had its one more attempt, a pending one
 * its waiting attempt brought forward, and only its own timer brings the next.
 */
function spentByRequest(log: readonly DeliveryLogEntry[], state: DeliveryState): boolean {
  const latest = state.last_attempt;
  // An attempt dropped (the webhook was off when it came) was never sent: it spent nothing.
  return (
    log.some((e) => e.kind === 'requeued' && e.attempt === latest) &&
    log.some((e) => e.kind === 'attempt' && e.attempt === latest)
  );
}

/** Deliveries of a page looked at at once (each a few equality reads, a log append and a publish). */
const RECOVER_CONCURRENCY = 16;
const RECOVER_WINDOW_MS = 60_000;
/** How far apart the clocks of two processes may be (one writes a delivery's time, one its open entry's). */
const CLOCK_SKEW_MS = 5_000;

/**
 * Attempts now every failed or pending delivery of the webhook created at or after `since`, one
 * page per call: it reads the subscription's open deliveries (those that failed an attempt and
 * have not succeeded since) through an index, at most `limit` of them after `cursor`, so a call
 * costs the same at any history size; `next_cursor` continues. Idempotent: a repeat finds the
 * deliveries queued already, or with their latest attempt made at a request (a failed one's one
 * more, a pending one's brought forward), and queues none again, so repeated calls cannot make the
 * worker POST again and again to a failing URL nor spend a pending delivery's retries in seconds
 * (retry now on one delivery still can, within the account's rate limit). Limited per account per
 * minute. With an Idempotency-Key, a repeat answers as the first call did and is not counted.
 */
export function recoverDeliveries(
  deps: SubscriptionDeps,
  accountId: string,
  id: string,
  input: RecoverInput,
  idempotencyKey?: string,
): Promise<
  Result<
    Performed<RecoverWebhookResult>,
    'NOT_FOUND' | 'CONFLICT' | 'RATE_LIMIT_EXCEEDED' | 'IDEMPOTENCY_CONFLICT' | 'VALIDATION_ERROR'
  >
> {
  const future = sinceInTheFuture(input.since, Date.now());
  if (future !== undefined)
    return Promise.resolve(
      fail('VALIDATION_ERROR', future, { details: [{ field: 'since', message: future }] }),
    );
  return performOnce(deps.idempotency, accountId, idempotencyKey, {
    request: ['recoverWebhook', id, input.since.toISOString(), input.cursor ?? null, input.limit ?? null],
    perform: () => recoverPage(deps, accountId, id, input),
    keep: (result) => JSON.stringify(result),
    // A repeat answers as the first did (how many it queued), not with what is left to queue;
    // once the subscription is deleted, as any call on it does.
    replay: async (kept) => {
      const sub = await ownedSubscription(deps, accountId, id);
      if (!sub.ok) return sub;
      const first = recoverWebhookResultSchema.safeParse(JSON.parse(kept));
      return first.success
        ? succeed(first.data)
        : fail('CONFLICT', 'The first answer with this Idempotency-Key cannot be repeated; use a new one.');
    },
  });
}

/**
 * How far past the server's clock `since` may be and still be a client clock running ahead: a
 * later one finds nothing, which answered 202 with `queued: 0` hides a mistaken time (a local
 * time sent as UTC, seconds read as milliseconds) as "nothing to recover".
 */
const SINCE_AHEAD_MS = 5 * 60_000;

/** Why `since` cannot be meant, when it is later than `nowMs` by more than a clock's drift. */
export function sinceInTheFuture(since: Date, nowMs: number): string | undefined {
  if (since.getTime() - nowMs <= SINCE_AHEAD_MS) return undefined;
  return (
    `since (${since.toISOString()}) is later than the server's time (${new Date(nowMs).toISOString()}): ` +
    'recover queues deliveries created from since on, so it would find none. Send a past time, in UTC or with its offset.'
  );
}

interface RecoverInput {
  since: Date;
  cursor?: string;
  limit?: number;
}

/** One page of `recoverDeliveries`. */
async function recoverPage(
  deps: SubscriptionDeps,
  accountId: string,
  id: string,
  input: RecoverInput,
): Promise<Result<RecoverWebhookResult, 'NOT_FOUND' | 'CONFLICT' | 'RATE_LIMIT_EXCEEDED'>> {
  const found = await ownedSubscription(deps, accountId, id);
  if (!found.ok) return found;
  const sub = found.value;
  if (sub.status !== 'enabled')
    return fail('CONFLICT', 'Enable the webhook before recovering its failed deliveries.');
  const nowMs = Date.now();
  const windowStart = nowMs - (nowMs % RECOVER_WINDOW_MS);
  const calls = await deps.repository.countRecoverCall(accountId, windowStart, RECOVER_WINDOW_MS);
  if (calls > deps.recoverPerMinute) {
    const retryAfter = Math.max(1, Math.ceil((windowStart + RECOVER_WINDOW_MS - nowMs) / 1000));
    return fail(
      'RATE_LIMIT_EXCEEDED',
      `Recover may be called ${deps.recoverPerMinute} times a minute per account. Retry after ${retryAfter} s.`,
      { retryAfter },
    );
  }
  const limit = input.limit ?? RECOVER_PAGE_SIZE;
  // A delivery is opened by an attempt (or kept failed) after it is created, so one created at or
  // after `since` was opened at or after it, give or take the clocks of the processes that wrote
  // the two times: the page skips what cannot match, and what may (created before, opened after)
  // is told apart by the delivery's own time below.
  const openedSince = new Date(input.since.getTime() - CLOCK_SKEW_MS);
  const page = await deps.repository.pageOpenDeliveries(id, openedSince, input.cursor, limit);
  const now = new Date();
  let queued = 0;
  for (let i = 0; i < page.length; i += RECOVER_CONCURRENCY) {
    const done = await Promise.all(
      page.slice(i, i + RECOVER_CONCURRENCY).map(async (open) => {
        const doc = await deps.repository.findDelivery(open._id);
        if (!doc || new Date(doc.created_at) < input.since) return false;
        const log = await deps.repository.logOf([doc._id]);
        const state = foldDelivery(doc, log);
        if (spentByRequest(log, state)) return false;
        return (await attemptNow(deps, sub, doc, state, now)) === 'queued';
      }),
    );
    queued += done.filter(Boolean).length;
  }
  return succeed({
    since: input.since.toISOString(),
    queued,
    next_cursor: page.length === limit ? page.at(-1)!._id : null,
  });
}
