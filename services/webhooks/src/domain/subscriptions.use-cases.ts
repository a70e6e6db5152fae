import { createHash } from 'node:crypto';
import {
  SHORT_LIST_DEFAULT_LIMIT,
  WEBHOOK_TEST_EVENT,
  pageMeta,
  type CreateWebhookInput,
  type Delivery,
  type PageMeta,
  type UpdateWebhookInput,
  type ShortListQuery,
  type WebhookSubscription,
  type WebhookTestData,
  type DeliveryEventName,
  type RecoverWebhookResult,
  type WebhookEventName,
} from '@signal/contracts';
import { AppError, newId } from '@signal/service-kit';
import type {
  DeliveryDocument,
  DeliveryHeader,
  DeliveryLogEntry,
  DeliveryStatus,
  SubscriptionDocument,
} from './records';
import type { ScheduleJob } from './delivery-jobs';
import type { IdempotencyKeys, WebhookStore } from './ports';
import { foldDelivery, logEntryId, requeueSeq, type DeliveryState } from './delivery-state';
import { generateSecret } from './signing';
import { urlProblem, type GuardPolicy } from './url-guard';

export interface SubscriptionDeps {
  repository: WebhookStore;
  idempotency: IdempotencyKeys;
  schedule: ScheduleJob;
  guard: GuardPolicy;
  secretOverlapMs: number;
  /** Subscriptions an account may hold when its token carries no plan limit. */
  maxPerAccount: number;
}

/** The 409 of a full account: the limit is in the message, and the way out. */
function capReached(limit: number): AppError {
  return new AppError(
    'CONFLICT',
    `This account has reached its limit of ${limit} webhook subscription${limit === 1 ? '' : 's'}. Delete one before creating another, or move to a plan with a higher limit.`,
  );
}

const iso = (d: Date | null) => (d ? new Date(d).toISOString() : null);

export function toSubscriptionView(s: SubscriptionDocument): WebhookSubscription {
  return {
    id: s._id,
    url: s.url,
    events: s.events,
    types: s.types ?? null,
    description: s.description ?? null,
    status: s.status,
    disabled_reason: s.disabled_reason ?? null,
    created_at: new Date(s.created_at).toISOString(),
    updated_at: new Date(s.updated_at).toISOString(),
  };
}

/**
 * A delivery as a client sees it; with `payload` (the detail) every attempt with the request it
 * sent (that body) and the response it got.
 */
export function toDeliveryView(d: DeliveryHeader, state: DeliveryState, payload?: string): Delivery {
  return {
    id: d._id,
    webhook_id: d.webhook_id,
    event_id: d.event_id,
    event: d.event,
    status: state.status,
    attempts_made: state.attempts_made,
    next_attempt_at: iso(state.next_attempt_at),
    created_at: new Date(d.created_at).toISOString(),
    updated_at: new Date(state.updated_at).toISOString(),
    ...(payload !== undefined
      ? {
          attempts: state.attempts.map((a) => ({
            attempt: a.attempt,
            started_at: new Date(a.started_at).toISOString(),
            duration_ms: a.duration_ms,
            status_code: a.status_code,
            error: a.error,
            request: a.request ? { url: a.request.url, headers: a.request.headers, body: payload } : null,
            response: a.response ?? null,
          })),
        }
      : {}),
  };
}

/** Each delivery with its state, folded from its log. */
function withStates<D extends DeliveryHeader>(
  docs: readonly D[],
  entries: readonly DeliveryLogEntry[],
): Array<{ doc: D; state: DeliveryState }> {
  const byDelivery = new Map<string, DeliveryLogEntry[]>();
  for (const e of entries) {
    const list = byDelivery.get(e.delivery_id) ?? [];
    list.push(e);
    byDelivery.set(e.delivery_id, list);
  }
  return docs.map((doc) => ({ doc, state: foldDelivery(doc, byDelivery.get(doc._id) ?? []) }));
}

function checkUrl(url: string, guard: GuardPolicy): void {
  const problem = urlProblem(url, guard);
  if (problem)
    throw new AppError('VALIDATION_ERROR', problem, { details: [{ field: 'url', message: problem }] });
}

async function owned(deps: SubscriptionDeps, accountId: string, id: string): Promise<SubscriptionDocument> {
  const sub = await deps.repository.findSubscription(accountId, id);
  if (!sub) throw new AppError('NOT_FOUND', `Webhook ${id} was not found.`);
  return sub;
}

/**
 * `types: null` and `description: null` mean what omitting them means, so both hash alike (a
 * retry may send either); omitted fields hash as they always did, so keys claimed before null
 * was accepted still match.
 */
const requestHash = (input: CreateWebhookInput): string =>
  createHash('sha256')
    .update(
      JSON.stringify({
        ...input,
        types: input.types ?? undefined,
        description: input.description ?? undefined,
      }),
    )
    .digest('base64url');

/**
 * How long after claiming an Idempotency-Key its first request is surely over (it checks a URL
 * and stores one document, under the service's request timeout).
 */
const FIRST_REQUEST_OVER_MS = 30_000;

/**
 * Story: check the URL → with an Idempotency-Key, claim it (the same key and body within 24 h
 * return the subscription it made; another body is a 409) → refuse a full account (409) →
 * store the subscription with a new signing secret → if creations raced past the cap, the ones
 * beyond it in creation order take theirs back (409) → return it with the secret. `created` is
 * false for a replay. `limit` is the plan's (from the gateway's token), else the configured
 * default.
 */
export async function createSubscription(
  deps: SubscriptionDeps,
  accountId: string,
  input: CreateWebhookInput,
  idempotencyKey?: string,
  limit: number = deps.maxPerAccount,
): Promise<{ subscription: WebhookSubscription & { secret: string }; created: boolean }> {
  checkUrl(input.url, deps.guard);
  let id = newId('wh');
  if (idempotencyKey) {
    const claim = await deps.idempotency.claim(accountId, idempotencyKey, requestHash(input), id);
    if (claim.outcome === 'conflict') throw new AppError('IDEMPOTENCY_CONFLICT');
    if (claim.outcome === 'replay') {
      // A concurrent first request may still be storing it: give it a moment. Once the first
      // request is surely over, a missing subscription was deleted since: retrying cannot help.
      const firstRequestOver = Date.now() - claim.claimedAt.getTime() > FIRST_REQUEST_OVER_MS;
      for (let i = 0; i < (firstRequestOver ? 1 : 20); i++) {
        const existing = await deps.repository.findSubscription(accountId, claim.resourceId);
        const current = existing?.secrets.find((s) => s.expires_at === null) ?? existing?.secrets[0];
        if (existing && current)
          return {
            subscription: { ...toSubscriptionView(existing), secret: current.secret },
            created: false,
          };
        if (firstRequestOver) break;
        await new Promise((r) => setTimeout(r, 50));
      }
      throw new AppError(
        'CONFLICT',
        firstRequestOver
          ? `The webhook this Idempotency-Key created (${claim.resourceId}) has been deleted; use a new Idempotency-Key to create another.`
          : 'The first request with this Idempotency-Key is still being processed; retry.',
      );
    }
    id = claim.resourceId;
  }
  const releaseKey = async () => {
    if (idempotencyKey) await deps.idempotency.release(accountId, idempotencyKey).catch(() => undefined);
  };
  if ((await deps.repository.countSubscriptions(accountId)) >= limit) {
    await releaseKey();
    throw capReached(limit);
  }
  const now = new Date();
  const secret = generateSecret();
  const doc: SubscriptionDocument = {
    _id: id,
    account_id: accountId,
    url: input.url,
    events: input.events,
    types: input.types ?? null,
    description: input.description ?? null,
    status: 'enabled',
    disabled_reason: null,
    secrets: [{ secret, created_at: now, expires_at: null }],
    created_at: now,
    updated_at: now,
  };
  try {
    await deps.repository.insertSubscription(doc);
  } catch (err) {
    await releaseKey();
    throw err;
  }
  // Concurrent creations each passed the count above; the first `limit` in creation order stay.
  // One that raced and lost removes its own, so the account never holds more than the limit.
  if (!(await deps.repository.firstSubscriptionIds(accountId, limit)).includes(id)) {
    await deps.repository.deleteSubscription(accountId, id);
    await releaseKey();
    throw capReached(limit);
  }
  return { subscription: { ...toSubscriptionView(doc), secret }, created: true };
}

/** A page of the account's subscriptions, newest first. */
export async function listSubscriptions(
  deps: SubscriptionDeps,
  accountId: string,
  q: ShortListQuery,
): Promise<{ data: WebhookSubscription[]; meta: PageMeta }> {
  const perPage = q.limit ?? SHORT_LIST_DEFAULT_LIMIT;
  const page = q.page ?? 1;
  const found = await deps.repository.pageSubscriptions(accountId, (page - 1) * perPage, perPage);
  return { data: found.rows.map(toSubscriptionView), meta: pageMeta(found.total, page, perPage) };
}

export async function getSubscription(deps: SubscriptionDeps, accountId: string, id: string) {
  return toSubscriptionView(await owned(deps, accountId, id));
}

export async function updateSubscription(
  deps: SubscriptionDeps,
  accountId: string,
  id: string,
  input: UpdateWebhookInput,
) {
  await owned(deps, accountId, id);
  if (input.url !== undefined) checkUrl(input.url, deps.guard);
  const set: Partial<SubscriptionDocument> = { updated_at: new Date() };
  if (input.url !== undefined) set.url = input.url;
  if (input.events !== undefined) set.events = input.events;
  if (input.types !== undefined) set.types = input.types;
  if (input.description !== undefined) set.description = input.description;
  if (input.enabled !== undefined) {
    set.status = input.enabled ? 'enabled' : 'disabled';
    set.disabled_reason = input.enabled ? null : 'Disabled by the account.';
  }
  const updated = await deps.repository.updateSubscription(accountId, id, set);
  if (!updated) throw new AppError('NOT_FOUND', `Webhook ${id} was not found.`);
  return toSubscriptionView(updated);
}

export async function deleteSubscription(deps: SubscriptionDeps, accountId: string, id: string) {
  const sub = await owned(deps, accountId, id);
  await deps.repository.deleteSubscription(accountId, id);
  return toSubscriptionView(sub);
}

/**
 * Earlier secrets that may still sign at once. Each one adds a signature to every delivery: 40
 * rotations in a day made a 2 KB `webhook-signature` header, and ~340 (six minutes of requests
 * on the default plan) would pass the 16 KB most servers accept for all headers, so every
 * delivery would be refused. Four leave room for a rotation or two gone wrong in the overlap.
 */
export const MAX_PREVIOUS_SECRETS = 4;

/**
 * New secret signs from now on; the previous one keeps signing for the overlap, then stops. Of
 * the earlier secrets still in their overlap, the newest MAX_PREVIOUS_SECRETS keep signing; an
 * older one stops at once.
 */
export async function rotateSecret(deps: SubscriptionDeps, accountId: string, id: string) {
  const sub = await owned(deps, accountId, id);
  const now = Date.now();
  const secret = generateSecret();
  const kept = sub.secrets
    .filter((s) => s.expires_at === null || new Date(s.expires_at).getTime() > now)
    .map((s) => ({ ...s, expires_at: s.expires_at ?? new Date(now + deps.secretOverlapMs) }))
    .sort((a, b) => new Date(b.created_at).getTime() - new Date(a.created_at).getTime())
    .slice(0, MAX_PREVIOUS_SECRETS);
  const updated = await deps.repository.updateSubscription(accountId, id, {
    secrets: [{ secret, created_at: new Date(now), expires_at: null }, ...kept],
    updated_at: new Date(now),
  });
  if (!updated) throw new AppError('NOT_FOUND', `Webhook ${id} was not found.`);
  return { ...toSubscriptionView(updated), secret };
}

/** What a sample signal's performance reads like after each event. */
const SAMPLE_PERFORMANCE: Record<Exclude<WebhookEventName, 'signal.new'>, WebhookTestData['performance']> = {
  'signal.winner': { roi: 250, ath_roi: 310, status: 'winner', time_to_ath_hours: 6 },
  'signal.dead': { roi: -85, ath_roi: 20, status: 'dead', time_to_ath_hours: 1 },
  'signal.rugged': { roi: -99, ath_roi: 5, status: 'rugged', time_to_ath_hours: 0.5 },
};

/**
 * What a test event carries: a sample signal in the shape of `event`'s data (signal.new without
 * `performance`, the others with it, as the real events come), marked `test: true`, so a
 * receiver written to the spec's payload accepts it. Its id names no signal.
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

/** Queues one test delivery of `event` (default webhook.test) with a sample payload of its shape. */
export async function sendTestEvent(
  deps: SubscriptionDeps,
  accountId: string,
  id: string,
  event: DeliveryEventName = WEBHOOK_TEST_EVENT,
) {
  const sub = await owned(deps, accountId, id);
  // The worker fails a disabled subscription's deliveries without an attempt: a test queued now
  // would answer "pending" and then fail unsent. Saying so up front tells the caller what to do.
  if (sub.status !== 'enabled') {
    const why = sub.disabled_reason ? ` ${sub.disabled_reason}` : '';
    throw new AppError('CONFLICT', `This webhook is disabled.${why} Enable it before sending a test event.`);
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
  await deps.schedule({
    delivery_id: delivery._id,
    attempt: 1,
    webhook_id: delivery.webhook_id,
    event: delivery.event,
    payload: delivery.payload,
    subscription_at: subscriptionVersion(sub),
  });
  return toDeliveryView(delivery, foldDelivery(delivery, []));
}

/**
 * A page of a subscription's deliveries, newest first. Without a status filter only the page's
 * logs are read; with one, the state of every delivery of the subscription is folded (status is
 * appended, never stored in place, so there is no status to query by).
 */
export async function listDeliveries(
  deps: SubscriptionDeps,
  accountId: string,
  id: string,
  q: { status?: DeliveryStatus; event?: string; limit?: number; page?: number },
) {
  await owned(deps, accountId, id);
  const perPage = q.limit ?? 20;
  const page = q.page ?? 1;
  const skip = (page - 1) * perPage;
  let rows: Array<{ doc: DeliveryHeader; state: DeliveryState }>;
  let total: number;
  if (q.status === undefined) {
    const found = await deps.repository.pageDeliveries(id, q.event, skip, perPage);
    rows = withStates(found.rows, await deps.repository.logOf(found.rows.map((d) => d._id)));
    total = found.total;
  } else {
    const [docs, entries] = await Promise.all([
      deps.repository.allDeliveries(id, q.event),
      deps.repository.logOfSubscription(id),
    ]);
    const matching = withStates(docs, entries).filter((r) => r.state.status === q.status);
    rows = matching.slice(skip, skip + perPage);
    total = matching.length;
  }
  return { data: rows.map((r) => toDeliveryView(r.doc, r.state)), meta: pageMeta(total, page, perPage) };
}

async function ownedDelivery(deps: SubscriptionDeps, accountId: string, id: string, deliveryId: string) {
  const d = await deps.repository.findAccountDelivery(accountId, id, deliveryId);
  if (!d) throw new AppError('NOT_FOUND', `Delivery ${deliveryId} was not found.`);
  return { doc: d, state: foldDelivery(d, await deps.repository.logOf([d._id])) };
}

export async function getDelivery(deps: SubscriptionDeps, accountId: string, id: string, deliveryId: string) {
  await owned(deps, accountId, id);
  const { doc, state } = await ownedDelivery(deps, accountId, id, deliveryId);
  return toDeliveryView(doc, state, doc.payload);
}

/**
 * The version of the subscription this request saw (its last change), stamped on the job it
 * queues: the worker holds subscriptions for up to a second, and a re-send or test event right
 * after enabling a subscription was dropped against the worker's older, disabled copy.
 */
function subscriptionVersion(sub: SubscriptionDocument): number {
  return new Date(sub.updated_at).getTime();
}

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
) {
  const sub = await owned(deps, accountId, id);
  const { doc, state } = await ownedDelivery(deps, accountId, id, deliveryId);
  if (state.status !== 'failed')
    throw new AppError('CONFLICT', `Only failed deliveries can be re-sent; this one is ${state.status}.`);
  if (sub.status !== 'enabled')
    throw new AppError('CONFLICT', 'Enable the webhook before re-sending its deliveries.');
  const now = new Date();
  if (!(await requeue(deps, sub, doc, state, now)))
    throw new AppError('CONFLICT', 'This delivery is being re-sent already.');
  return toDeliveryView(doc, { ...state, status: 'pending', next_attempt_at: now, updated_at: now });
}

/** Re-sends queued at once by a recovery (each a log append and a publish). */
const RECOVER_CONCURRENCY = 16;

/**
 * Story: re-send every delivery of the webhook created at or after `since` that is failed now
 * (one more attempt each, as a re-send) → answer how many were queued. Idempotent: a repeat
 * finds them pending (or succeeded) and queues none of them again; concurrent recoveries queue
 * each delivery once (the re-send's place in its log is taken once).
 */
export async function recoverDeliveries(
  deps: SubscriptionDeps,
  accountId: string,
  id: string,
  since: Date,
): Promise<RecoverWebhookResult> {
  const sub = await owned(deps, accountId, id);
  if (sub.status !== 'enabled')
    throw new AppError('CONFLICT', 'Enable the webhook before recovering its failed deliveries.');
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
  return { since: since.toISOString(), queued };
}
