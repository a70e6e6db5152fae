import { createHash } from 'node:crypto';
import type { ApiKeyView } from '@signal/contracts';
import { AppError, newId } from '@signal/service-kit';
import { createApiKey, toKeyView, type AccountDeps } from './accounts.use-cases';
import type { SecretSealer } from './sealed-secret';

export type KeyRequestClaim =
  | { outcome: 'new' }
  | { outcome: 'replay'; keyId: string; sealedKey: string | undefined }
  | { outcome: 'conflict' };

/** Port: key creations by Idempotency-Key (data/key-requests.store.ts). */
export interface KeyRequests {
  claim(accountId: string, key: string, requestHash: string, keyId: string): Promise<KeyRequestClaim>;
  sealedKey(accountId: string, key: string): Promise<string | undefined>;
  complete(accountId: string, key: string, sealedKey: string): Promise<void>;
  release(accountId: string, key: string): Promise<void>;
}

export interface CreateKeyDeps extends AccountDeps {
  keyRequests: KeyRequests;
  sealer: SecretSealer;
}

export interface CreateKeyInput {
  name: string;
  expires_at?: string;
}

export type CreatedKey = ApiKeyView & { key: string };

const requestHash = (input: CreateKeyInput): string =>
  createHash('sha256')
    .update(JSON.stringify({ name: input.name, expires_at: input.expires_at ?? null }))
    .digest('base64url');

/**
 * Story: without an Idempotency-Key, a new key. With one: claim it (with the new key's id) →
 * make the key → keep the key sealed beside the claim for 24 h. A retry with the same key and
 * body answers the same key (the secret included, as the first answer did — Stripe's rule, so a
 * client whose first answer was lost is not left with a key it cannot use); another body is
 * IDEMPOTENCY_CONFLICT. `replayed` says which.
 */
export async function createKeyOnce(
  deps: CreateKeyDeps,
  accountId: string,
  input: CreateKeyInput,
  idempotencyKey?: string,
): Promise<{ created: CreatedKey; replayed: boolean }> {
  const expiresAt = input.expires_at ? new Date(input.expires_at) : undefined;
  if (!idempotencyKey)
    return { created: await createApiKey(deps, accountId, input.name, expiresAt), replayed: false };
  const keyId = newId('key');
  const claim = await deps.keyRequests.claim(accountId, idempotencyKey, requestHash(input), keyId);
  if (claim.outcome === 'conflict') throw new AppError('IDEMPOTENCY_CONFLICT');
  if (claim.outcome === 'replay')
    return { created: await replay(deps, accountId, idempotencyKey, claim), replayed: true };
  try {
    const created = await createApiKey(deps, accountId, input.name, expiresAt, keyId);
    await deps.keyRequests.complete(accountId, idempotencyKey, deps.sealer.seal(created.key));
    return { created, replayed: false };
  } catch (err) {
    await deps.keyRequests.release(accountId, idempotencyKey).catch(() => undefined);
    throw err;
  }
}

async function replay(
  deps: CreateKeyDeps,
  accountId: string,
  idempotencyKey: string,
  claim: Extract<KeyRequestClaim, { outcome: 'replay' }>,
): Promise<CreatedKey> {
  let sealed = claim.sealedKey;
  // A concurrent first request may still be making the key: give it a moment.
  for (let i = 0; !sealed && i < 20; i++) {
    await new Promise((r) => setTimeout(r, 50));
    sealed = await deps.keyRequests.sealedKey(accountId, idempotencyKey);
  }
  const doc = sealed ? await deps.repository.findKey(accountId, claim.keyId) : null;
  const key = sealed ? deps.sealer.open(sealed) : undefined;
  if (!doc || key === undefined) {
    throw new AppError(
      'CONFLICT',
      'The first request with this Idempotency-Key is still being processed; retry.',
    );
  }
  return { ...toKeyView(doc), key };
}
