import { createHash } from 'node:crypto';
import { fail, newId, succeed, type Result } from '@signal/service-kit';
import {
  createApiKey,
  toKeyView,
  type AccountDeps,
  type CreateKeyFailure,
  type CreatedKey,
} from './accounts.use-cases';
import { keyStatus } from './key-status';
import type { KeyRequestClaim, KeyRequests } from './ports';
import type { SecretSealer } from './sealed-secret';

export interface CreateKeyDeps extends AccountDeps {
  keyRequests: KeyRequests;
  sealer: SecretSealer;
}

export interface CreateKeyInput {
  name: string;
  expires_at?: string;
}

const requestHash = (input: CreateKeyInput): string =>
  createHash('sha256')
    .update(JSON.stringify({ name: input.name, expires_at: input.expires_at ?? null }))
    .digest('base64url');

/**
 * Creates an API key, once per Idempotency-Key. Without a key, a new key. With one: claim it
 * (with the new key's id) → make the key → keep the key sealed beside the claim for 24 h. A
 * retry with the same key and body gets the same key (the secret included, as the first
 * response did — Stripe's rule, so a client whose first response was lost is not left with a
 * key it cannot use); another body is IDEMPOTENCY_CONFLICT. `replayed` says which.
 */
export async function createKeyOnce(
  deps: CreateKeyDeps,
  accountId: string,
  input: CreateKeyInput,
  idempotencyKey?: string,
): Promise<Result<{ created: CreatedKey; replayed: boolean }, CreateKeyFailure | 'IDEMPOTENCY_CONFLICT'>> {
  const expiresAt = input.expires_at ? new Date(input.expires_at) : undefined;
  if (!idempotencyKey) {
    const created = await createApiKey(deps, accountId, input.name, expiresAt);
    return created.ok ? succeed({ created: created.value, replayed: false }) : created;
  }
  const keyId = newId('key');
  const claim = await deps.keyRequests.claim(accountId, idempotencyKey, requestHash(input), keyId);
  if (claim.outcome === 'conflict') return fail('IDEMPOTENCY_CONFLICT');
  if (claim.outcome === 'replay') {
    const replayed = await replayCreatedKey(deps, accountId, idempotencyKey, claim);
    return replayed.ok ? succeed({ created: replayed.value, replayed: true }) : replayed;
  }
  // A key that was not made leaves no claim behind: a retry with the same Idempotency-Key tries again.
  const release = () => deps.keyRequests.release(accountId, idempotencyKey).catch(() => undefined);
  try {
    const created = await createApiKey(deps, accountId, input.name, expiresAt, keyId);
    if (!created.ok) {
      await release();
      return created;
    }
    await deps.keyRequests.complete(accountId, idempotencyKey, deps.sealer.seal(created.value.key));
    return succeed({ created: created.value, replayed: false });
  } catch (err) {
    await release();
    throw err;
  }
}

/**
 * The key a claimed Idempotency-Key made (a creation's or a roll's replacement), for its repeat:
 * with its secret while the key works, else a CONFLICT saying why not.
 */
export async function replayCreatedKey(
  deps: CreateKeyDeps,
  accountId: string,
  idempotencyKey: string,
  claim: Extract<KeyRequestClaim, { outcome: 'replay' }>,
): Promise<Result<CreatedKey, 'CONFLICT'>> {
  let sealed = claim.sealedKey;
  // A concurrent first request may still be making the key: give it a moment.
  for (let i = 0; !sealed && i < 20; i++) {
    await new Promise((r) => setTimeout(r, 50));
    sealed = await deps.keyRequests.sealedKey(accountId, idempotencyKey);
  }
  const doc = sealed ? await deps.repository.findKey(accountId, claim.keyId) : null;
  const key = sealed ? deps.sealer.open(sealed) : undefined;
  if (!doc || key === undefined) {
    return fail('CONFLICT', 'The first request with this Idempotency-Key is still being processed; retry.');
  }
  // A secret goes out again only while it is the key's way in: a revoked or expired key's is kept
  // back, as a webhook's rotated-out secret is.
  const status = keyStatus(doc);
  if (status !== 'active') {
    return fail(
      'CONFLICT',
      `The key this Idempotency-Key created (${doc._id}) has been ${status} since, so its response (with its secret) is not repeated; send another request (a create, a roll) with a new Idempotency-Key.`,
    );
  }
  return succeed({ ...toKeyView(doc), key });
}
