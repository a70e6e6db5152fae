import type { ApiKeyView } from '@signal/contracts';
import { fail, newId, succeed, type Result } from '@signal/service-kit';
import { createHash } from 'node:crypto';
import { replayCreatedKey, type CreateKeyDeps } from './create-key.use-case';
import { keyStatus } from './key-status';
import type { ApiKey } from './records';
import {
  createApiKey,
  keyNotFound,
  revokeApiKey,
  toKeyView,
  type AccountDeps,
  type CreateKeyFailure,
  type CreatedKey,
} from './accounts.use-cases';

export interface RolledKey {
  created: CreatedKey;
  previous: ApiKeyView;
}

/**
 * Roll: a new key now (same name, same expiry if any), and the old one stops after the overlap —
 * revoked at once for 0, else it expires then. Every gateway reloads key records at least once a
 * minute, and a non-zero overlap is at least a minute, so every instance knows the new expiry
 * before it arrives. The new key counts against the plan's cap like any other, and so does the old
 * one while it still works (a roll without overlap replaces it at once, so it is not counted). A
 * key is rolled once: the roll claims it first, so a second roll, concurrent or later, is a
 * CONFLICT (roll its replacement instead).
 */
export async function rollApiKey(
  deps: AccountDeps,
  accountId: string,
  keyId: string,
  overlapSeconds: number,
  now = Date.now(),
  replacementId = newId('key'),
): Promise<Result<RolledKey, CreateKeyFailure | 'SERVICE_UNAVAILABLE'>> {
  const old = await deps.repository.findKey(accountId, keyId);
  if (!old) return keyNotFound(keyId);
  const oldExpiry = old.expires_at ? new Date(old.expires_at).getTime() : null;
  if (old.revoked_at || (oldExpiry !== null && oldExpiry <= now)) {
    return fail('CONFLICT', 'Only an active key can be rolled; create a new key instead.');
  }
  // A replacement that no longer works (revoked, or expired) replaces nothing: its claim is given
  // up so the key can be rolled again. One still being made is not found yet and keeps its claim.
  // The new key keeps the expiry the key was given, read from the dead replacement's chain (the
  // key's own `expires_at` is the earlier roll's overlap end).
  let givenFrom = old;
  if (old.replaced_by) {
    const replacement = await deps.repository.findKey(accountId, old.replaced_by);
    if (!replacement || keyStatus(replacement, now) === 'active')
      return fail('CONFLICT', 'This key is already being rolled out; roll the key that replaces it instead.');
    await deps.repository.releaseRoll(accountId, keyId, old.replaced_by);
    givenFrom = replacement;
  }
  const givenExpiry = await expiryGiven(deps, accountId, givenFrom);
  if (!(await deps.repository.claimRoll(accountId, keyId, replacementId))) {
    return fail('CONFLICT', 'This key is already being rolled out; roll the key that replaces it instead.');
  }
  const until = new Date(Math.min(now + overlapSeconds * 1000, oldExpiry ?? Number.POSITIVE_INFINITY));
  // Streams opened with the old key read its end from Redis with the revocations (requests read
  // it from the key's record, reloaded within a minute). Marked before the replacement exists:
  // a roll that cannot reach Redis changes nothing and is retried.
  const marked = overlapSeconds > 0;
  if (marked) {
    try {
      await deps.limiter.markEnd(accountId, keyId, until);
    } catch (err) {
      await deps.repository.releaseRoll(accountId, keyId, replacementId).catch(() => undefined);
      return fail('SERVICE_UNAVAILABLE', 'The roll could not be applied everywhere; retry.', {
        retryAfter: 1,
        cause: err,
      });
    }
  }
  // A roll that makes no replacement takes its mark back: the old key goes on as it was.
  const unmark = () => (marked ? deps.limiter.clearEnd(accountId, keyId).catch(() => undefined) : undefined);
  const created = await createApiKey(
    deps,
    accountId,
    old.name,
    givenExpiry ?? undefined,
    replacementId,
    overlapSeconds === 0 ? keyId : undefined,
  ).catch(async (err: unknown) => {
    await deps.repository.releaseRoll(accountId, keyId, replacementId).catch(() => undefined);
    await unmark();
    throw err;
  });
  if (!created.ok) {
    await deps.repository.releaseRoll(accountId, keyId, replacementId);
    await unmark();
    return created;
  }
  if (overlapSeconds === 0) {
    const revoked = await revokeApiKey(deps, accountId, keyId);
    return revoked.ok ? succeed({ created: created.value, previous: revoked.value }) : revoked;
  }
  await deps.repository.setKeyExpiry(accountId, keyId, until);
  deps.cache.deleteByKeyId(keyId);
  return succeed({
    created: created.value,
    previous: toKeyView({ ...old, expires_at: until, replaced_by: replacementId }),
  });
}

/**
 * A roll, once per Idempotency-Key (as a key creation is): a repeat of a roll whose answer was
 * lost answers with the replacement it made, its secret included while it works, where a second
 * roll would be a CONFLICT and leave the replacement's secret unseen. The key's claim holds the
 * replacement's id, chosen before the roll, so concurrent repeats make one replacement.
 */
export async function rollApiKeyOnce(
  deps: CreateKeyDeps,
  accountId: string,
  keyId: string,
  overlapSeconds: number,
  idempotencyKey?: string,
): Promise<
  Result<
    { rolled: RolledKey; replayed: boolean },
    CreateKeyFailure | 'SERVICE_UNAVAILABLE' | 'IDEMPOTENCY_CONFLICT'
  >
> {
  if (!idempotencyKey) {
    const rolled = await rollApiKey(deps, accountId, keyId, overlapSeconds);
    return rolled.ok ? succeed({ rolled: rolled.value, replayed: false }) : rolled;
  }
  const replacementId = newId('key');
  const request = createHash('sha256')
    .update(JSON.stringify({ roll: keyId, overlap_seconds: overlapSeconds }))
    .digest('base64url');
  const claim = await deps.keyRequests.claim(accountId, idempotencyKey, request, replacementId);
  if (claim.outcome === 'conflict') return fail('IDEMPOTENCY_CONFLICT');
  if (claim.outcome === 'replay') {
    const created = await replayCreatedKey(deps, accountId, idempotencyKey, claim);
    if (!created.ok) return created;
    const old = await deps.repository.findKey(accountId, keyId);
    if (!old) return keyNotFound(keyId);
    return succeed({ rolled: { created: created.value, previous: toKeyView(old) }, replayed: true });
  }
  // A roll that made no replacement leaves no claim behind: a retry with the key tries again.
  const release = () => deps.keyRequests.release(accountId, idempotencyKey).catch(() => undefined);
  try {
    const rolled = await rollApiKey(deps, accountId, keyId, overlapSeconds, Date.now(), replacementId);
    if (!rolled.ok) {
      await release();
      return rolled;
    }
    await deps.keyRequests.complete(accountId, idempotencyKey, deps.sealer.seal(rolled.value.created.key));
    return succeed({ rolled: rolled.value, replayed: false });
  } catch (err) {
    await release();
    throw err;
  }
}

/**
 * The expiry a key was given when it was made, which each key that replaced it keeps: a roll
 * sets the old key's `expires_at` to its overlap's end, so the given one is read at the end of
 * its chain of replacements (each link one roll; a replacement not made yet ends the walk).
 */
async function expiryGiven(deps: AccountDeps, accountId: string, key: ApiKey): Promise<Date | null> {
  let current = key;
  for (let hops = 0; current.replaced_by && hops < 100; hops++) {
    const next = await deps.repository.findKey(accountId, current.replaced_by);
    if (!next) break;
    current = next;
  }
  return current.expires_at ? new Date(current.expires_at) : null;
}
