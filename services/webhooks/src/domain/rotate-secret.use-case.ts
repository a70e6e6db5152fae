import { createHash } from 'node:crypto';
import type { WebhookSubscription } from '@signal/contracts';
import { fail, succeed, type Result } from '@signal/service-kit';
import { performOnce, type Performed } from './perform-once';
import { generateSecret } from './signing';
import { ownedSubscription, webhookNotFound, type SubscriptionDeps } from './subscription-rules';
import { toSubscriptionView } from './views';

type RotatedSecret = WebhookSubscription & { secret: string };

/**
 * Earlier secrets that may still sign at once. Each one adds a signature of some 50 bytes to
 * every delivery: without a bound, ~340 rotations (six minutes of requests on the default
 * plan) would pass the 16 KB most servers accept for all headers, and every delivery would be
 * refused. Four leave room for a rotation or two gone wrong in the overlap.
 */
export const MAX_PREVIOUS_SECRETS = 4;

/**
 * New secret signs from now on; the previous one keeps signing for the overlap, then stops. Of
 * the earlier secrets still in their overlap, the newest MAX_PREVIOUS_SECRETS keep signing; an
 * older one stops at once. The secrets are replaced only if the subscription did not change
 * since they were read (else read again): two rotations at once each keep the other's secret,
 * where a plain write let the later drop the earlier's, whose caller then held a secret that
 * never signed.
 */
async function rotate(
  deps: SubscriptionDeps,
  accountId: string,
  id: string,
): Promise<Result<RotatedSecret, 'NOT_FOUND' | 'CONFLICT'>> {
  const secret = generateSecret();
  for (let tries = 0; tries < ROTATE_TRIES; tries++) {
    const found = await ownedSubscription(deps, accountId, id);
    if (!found.ok) return found;
    const now = Math.max(Date.now(), new Date(found.value.updated_at).getTime() + 1);
    const kept = found.value.secrets
      .filter((s) => s.expires_at === null || new Date(s.expires_at).getTime() > now)
      .map((s) => ({ ...s, expires_at: s.expires_at ?? new Date(now + deps.secretOverlapMs) }))
      .sort((a, b) => new Date(b.created_at).getTime() - new Date(a.created_at).getTime())
      .slice(0, MAX_PREVIOUS_SECRETS);
    const updated = await deps.repository.updateSubscriptionIfUnchanged(
      accountId,
      id,
      found.value.updated_at,
      {
        secrets: [{ secret, created_at: new Date(now), expires_at: null }, ...kept],
        updated_at: new Date(now),
      },
    );
    if (!updated) return webhookNotFound(id);
    if (updated !== 'changed') return succeed({ ...toSubscriptionView(updated), secret });
  }
  return fail('CONFLICT', 'The subscription kept changing while its secret was rotated; retry.');
}

/** Reads and compare-and-sets before a rotation gives up: each retry follows another change. */
const ROTATE_TRIES = 10;

/** What a rotation keeps for its repeats: the new secret's hash, never the secret. */
const secretHash = (secret: string): string => createHash('sha256').update(secret).digest('base64url');

/**
 * Rotates the subscription's signing secret (see `rotate`), once per Idempotency-Key: a repeat of
 * a rotation whose response was lost answers with the secret that rotation made, while it still
 * signs, instead of rotating again (which would push the secret the client missed towards its
 * expiry, or out of the kept four).
 */
export function rotateSecret(
  deps: SubscriptionDeps,
  accountId: string,
  id: string,
  idempotencyKey?: string,
): Promise<Result<Performed<RotatedSecret>, 'NOT_FOUND' | 'CONFLICT' | 'IDEMPOTENCY_CONFLICT'>> {
  return performOnce(deps.idempotency, accountId, idempotencyKey, {
    request: ['rotateWebhookSecret', id],
    perform: () => rotate(deps, accountId, id),
    keep: (rotated) => secretHash(rotated.secret),
    replay: async (kept) => {
      const found = await ownedSubscription(deps, accountId, id);
      if (!found.ok) return found;
      const now = Date.now();
      const made = found.value.secrets.find(
        (s) =>
          secretHash(s.secret) === kept && (s.expires_at === null || new Date(s.expires_at).getTime() > now),
      );
      if (!made)
        return fail(
          'CONFLICT',
          'The secret the rotation with this Idempotency-Key made no longer signs, so its response cannot be repeated; rotate again with a new Idempotency-Key.',
        );
      return succeed({ ...toSubscriptionView(found.value), secret: made.secret });
    },
  });
}
