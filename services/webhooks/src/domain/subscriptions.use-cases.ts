import { createHash } from 'node:crypto';
import type {
  CreateWebhookInput,
  Delivery,
  UpdateWebhookInput,
  WebhookSubscription,
} from '@signal/contracts';
import { AppError, newId } from '@signal/service-kit';
import type { DeliveryDocument, SubscriptionDocument } from '../data/webhook.models';
import type { IdempotencyRepository } from '../data/idempotency.repository';
import type { WebhookRepository } from '../data/webhook.repository';
import type { ScheduleJob } from './delivery-jobs';
import { generateSecret } from './signing';
import { urlProblem, type GuardPolicy } from './url-guard';

export interface SubscriptionDeps {
  repository: WebhookRepository;
  idempotency: IdempotencyRepository;
  schedule: ScheduleJob;
  guard: GuardPolicy;
  secretOverlapMs: number;
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

export function toDeliveryView(d: DeliveryDocument, withAttempts = false): Delivery {
  return {
    id: d._id,
    webhook_id: d.webhook_id,
    event_id: d.event_id,
    event: d.event,
    status: d.status,
    attempts_made: d.attempts_made,
    next_attempt_at: iso(d.next_attempt_at),
    created_at: new Date(d.created_at).toISOString(),
    updated_at: new Date(d.updated_at).toISOString(),
    ...(withAttempts
      ? {
          attempts: (d.attempts ?? []).map((a) => ({
            attempt: a.attempt,
            started_at: new Date(a.started_at).toISOString(),
            duration_ms: a.duration_ms,
            status_code: a.status_code,
            error: a.error,
          })),
        }
      : {}),
  };
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

const requestHash = (input: CreateWebhookInput): string =>
  createHash('sha256').update(JSON.stringify(input)).digest('base64url');

/**
 * Story: check the URL → with an Idempotency-Key, claim it (the same key and body within 24 h
 * return the subscription it made; another body is a 409) → store the subscription with a new
 * signing secret → return it with the secret. `created` is false for a replay.
 */
export async function createSubscription(
  deps: SubscriptionDeps,
  accountId: string,
  input: CreateWebhookInput,
  idempotencyKey?: string,
): Promise<{ subscription: WebhookSubscription & { secret: string }; created: boolean }> {
  checkUrl(input.url, deps.guard);
  let id = newId('wh');
  if (idempotencyKey) {
    const claim = await deps.idempotency.claim(accountId, idempotencyKey, requestHash(input), id);
    if (claim.outcome === 'conflict') throw new AppError('IDEMPOTENCY_CONFLICT');
    if (claim.outcome === 'replay') {
      // A concurrent first request may still be storing it: give it a moment.
      for (let i = 0; i < 20; i++) {
        const existing = await deps.repository.findSubscription(accountId, claim.resourceId);
        const current = existing?.secrets.find((s) => s.expires_at === null) ?? existing?.secrets[0];
        if (existing && current)
          return {
            subscription: { ...toSubscriptionView(existing), secret: current.secret },
            created: false,
          };
        await new Promise((r) => setTimeout(r, 50));
      }
      throw new AppError(
        'CONFLICT',
        'The first request with this Idempotency-Key is still being processed; retry.',
      );
    }
    id = claim.resourceId;
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
    if (idempotencyKey) await deps.idempotency.release(accountId, idempotencyKey).catch(() => undefined);
    throw err;
  }
  return { subscription: { ...toSubscriptionView(doc), secret }, created: true };
}

export async function listSubscriptions(deps: SubscriptionDeps, accountId: string) {
  return (await deps.repository.listSubscriptions(accountId)).map(toSubscriptionView);
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

/** New secret signs from now on; the previous one keeps signing for the overlap, then stops. */
export async function rotateSecret(deps: SubscriptionDeps, accountId: string, id: string) {
  const sub = await owned(deps, accountId, id);
  const now = Date.now();
  const secret = generateSecret();
  const kept = sub.secrets
    .filter((s) => s.expires_at === null || new Date(s.expires_at).getTime() > now)
    .map((s) => ({ ...s, expires_at: s.expires_at ?? new Date(now + deps.secretOverlapMs) }));
  const updated = await deps.repository.updateSubscription(accountId, id, {
    secrets: [{ secret, created_at: new Date(now), expires_at: null }, ...kept],
    updated_at: new Date(now),
  });
  return { ...toSubscriptionView(updated!), secret };
}

export async function sendTestEvent(deps: SubscriptionDeps, accountId: string, id: string) {
  const sub = await owned(deps, accountId, id);
  const now = new Date();
  const eventId = newId('evt');
  const { delivery } = await deps.repository.insertDelivery({
    _id: newId('dlv'),
    account_id: accountId,
    webhook_id: sub._id,
    event_id: eventId,
    event: 'webhook.test',
    payload: JSON.stringify({
      event: 'webhook.test',
      timestamp: now.toISOString(),
      data: { subscription_id: sub._id, message: 'This is a test event from Signal Service.' },
    }),
    status: 'pending',
    attempts_made: 0,
    next_attempt_at: now,
    attempts: [],
    created_at: now,
    updated_at: now,
  });
  await deps.schedule({
    delivery_id: delivery._id,
    attempt: 1,
    webhook_id: delivery.webhook_id,
    event: delivery.event,
    payload: delivery.payload,
  });
  return toDeliveryView(delivery);
}

export async function listDeliveries(
  deps: SubscriptionDeps,
  accountId: string,
  id: string,
  q: { status?: DeliveryDocument['status']; event?: string; limit?: number; page?: number },
) {
  await owned(deps, accountId, id);
  const perPage = q.limit ?? 20;
  const page = q.page ?? 1;
  const { rows, total } = await deps.repository.listDeliveries(
    id,
    { status: q.status, event: q.event },
    (page - 1) * perPage,
    perPage,
  );
  return {
    data: rows.map((d) => toDeliveryView(d)),
    meta: { total, page, per_page: perPage, total_pages: Math.ceil(total / perPage) },
  };
}

export async function getDelivery(deps: SubscriptionDeps, accountId: string, id: string, deliveryId: string) {
  await owned(deps, accountId, id);
  const d = await deps.repository.findAccountDelivery(accountId, id, deliveryId);
  if (!d) throw new AppError('NOT_FOUND', `Delivery ${deliveryId} was not found.`);
  return toDeliveryView(d, true);
}

/** Re-sends a failed delivery: one more attempt, same webhook-id, same body. */
export async function retryDelivery(
  deps: SubscriptionDeps,
  accountId: string,
  id: string,
  deliveryId: string,
) {
  const sub = await owned(deps, accountId, id);
  const d = await deps.repository.findAccountDelivery(accountId, id, deliveryId);
  if (!d) throw new AppError('NOT_FOUND', `Delivery ${deliveryId} was not found.`);
  if (d.status !== 'failed')
    throw new AppError('CONFLICT', `Only failed deliveries can be re-sent; this one is ${d.status}.`);
  if (sub.status !== 'enabled')
    throw new AppError('CONFLICT', 'Enable the webhook before re-sending its deliveries.');
  const now = new Date();
  await deps.repository.markDelivery(d._id, { status: 'pending', next_attempt_at: now });
  await deps.schedule({
    delivery_id: d._id,
    attempt: d.attempts_made + 1,
    webhook_id: d.webhook_id,
    event: d.event,
    payload: d.payload,
  });
  return toDeliveryView({ ...d, status: 'pending', next_attempt_at: now, updated_at: now });
}
