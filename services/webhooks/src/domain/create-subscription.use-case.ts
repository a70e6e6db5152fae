import { createHash } from 'node:crypto';
import type { CreateWebhookInput, WebhookSubscription } from '@signal/contracts';
import { fail, newId, succeed, type Failure, type Result } from '@signal/service-kit';
import type { Claim } from './ports';
import type { SubscriptionDocument } from './records';
import { generateSecret } from './signing';
import { urlFailure, type SubscriptionDeps } from './subscription-rules';
import { toSubscriptionView } from './views';

/** The subscription with its signing secret; `created` is false for a replay. */
export interface CreatedSubscription {
  subscription: WebhookSubscription & { secret: string };
  created: boolean;
}

/** The 409 of a full account: the limit is in the message, and the way out. */
function capReached(limit: number): Failure<'CONFLICT'> {
  return fail(
    'CONFLICT',
    `This account has reached its limit of ${limit} webhook subscription${limit === 1 ? '' : 's'}. Delete one before creating another, or move to a plan with a higher limit.`,
  );
}

/**
 * `types: null` and `description: null` mean what omitting them means, so both hash alike (a
 * retry may send either).
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
 * The secret the creation made (the one created with the subscription), while it still signs:
 * a replay repeats the first response, so it never hands out a secret rotated in since.
 */
function creationSecret(doc: SubscriptionDocument, now: number): string | undefined {
  const created = new Date(doc.created_at).getTime();
  const made = doc.secrets.find((s) => new Date(s.created_at).getTime() === created);
  if (!made || (made.expires_at !== null && new Date(made.expires_at).getTime() <= now)) return undefined;
  return made.secret;
}

/**
 * The subscription an Idempotency-Key made, for a replay of its request: the first response
 * again, with the secret it carried. A concurrent first request may still be storing it: give it
 * a moment. Once the first request is over (it said so, or it is surely over by now), a missing
 * subscription was deleted since, and a creation secret that no longer signs was rotated out:
 * retrying cannot help.
 */
async function replayed(
  deps: SubscriptionDeps,
  accountId: string,
  claim: Extract<Claim, { outcome: 'replay' }>,
): Promise<Result<CreatedSubscription, 'CONFLICT'>> {
  const firstRequestOver = claim.finished || Date.now() - claim.claimedAt.getTime() > FIRST_REQUEST_OVER_MS;
  for (let i = 0; i < (firstRequestOver ? 1 : 20); i++) {
    const existing = await deps.repository.findSubscription(accountId, claim.resourceId);
    if (existing) {
      const secret = creationSecret(existing, Date.now());
      if (secret === undefined)
        return fail(
          'CONFLICT',
          `The signing secret the webhook ${claim.resourceId} was created with has been rotated out since, so this Idempotency-Key's response cannot be repeated; POST /v1/webhooks/${claim.resourceId}/rotate-secret gives a new secret.`,
        );
      return succeed({ subscription: { ...toSubscriptionView(existing), secret }, created: false });
    }
    if (firstRequestOver) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  return fail(
    'CONFLICT',
    firstRequestOver
      ? `The webhook this Idempotency-Key created (${claim.resourceId}) has been deleted; use a new Idempotency-Key to create another.`
      : 'The first request with this Idempotency-Key is still being processed; retry.',
  );
}

/**
 * Takes a place for the subscription; when all are taken, first gives back places that creations
 * which stopped between taking one and storing their subscription left behind (older than any
 * creation still running), then tries once more.
 */
async function takePlace(
  deps: SubscriptionDeps,
  accountId: string,
  id: string,
  limit: number,
): Promise<boolean> {
  if (await deps.repository.takePlace(accountId, id, limit)) return true;
  const lost = await deps.repository.releaseLostPlaces(accountId, Date.now() - FIRST_REQUEST_OVER_MS);
  return lost > 0 && deps.repository.takePlace(accountId, id, limit);
}

/**
 * Creates a subscription and returns it with its signing secret. In order: check the URL → with
 * an Idempotency-Key, claim it (the same key and body within 24 h return the subscription it
 * made; another body is a 409) → take one of the account's places, or refuse a full account
 * (409) → store the subscription with a new signing secret → return it with the secret. `limit` is the plan's (from the gateway's
 * token), else the configured default.
 */
export async function createSubscription(
  deps: SubscriptionDeps,
  accountId: string,
  input: CreateWebhookInput,
  idempotencyKey?: string,
  limit: number = deps.maxPerAccount,
): Promise<Result<CreatedSubscription, 'VALIDATION_ERROR' | 'IDEMPOTENCY_CONFLICT' | 'CONFLICT'>> {
  const refused = urlFailure(input.url, deps.guard);
  if (refused) return refused;
  let id = newId('wh');
  if (idempotencyKey) {
    const claim = await deps.idempotency.claim(accountId, idempotencyKey, requestHash(input), id);
    if (claim.outcome === 'conflict') return fail('IDEMPOTENCY_CONFLICT');
    if (claim.outcome === 'replay') return replayed(deps, accountId, claim);
    id = claim.resourceId;
  }
  const releaseKey = async () => {
    if (idempotencyKey) await deps.idempotency.release(accountId, idempotencyKey).catch(() => undefined);
  };
  if (!(await takePlace(deps, accountId, id, limit))) {
    await releaseKey();
    return capReached(limit);
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
    await deps.repository.releasePlace(accountId, id).catch(() => undefined);
    await releaseKey();
    throw err;
  }
  // A replay then tells a deletion from a first request still at work at once; should this write
  // fail, it still does once the first request is surely over (FIRST_REQUEST_OVER_MS).
  if (idempotencyKey) await deps.idempotency.finish(accountId, idempotencyKey).catch(() => undefined);
  return succeed({ subscription: { ...toSubscriptionView(doc), secret }, created: true });
}
