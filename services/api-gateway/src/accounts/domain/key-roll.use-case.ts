import type { ApiKeyView } from '@signal/contracts';
import { AppError } from '@signal/service-kit';
import { createApiKey, revokeApiKey, toKeyView, type AccountDeps } from './accounts.use-cases';

/**
 * Roll: a new key now (same name, same expiry if any), and the old one stops after the overlap —
 * revoked at once for 0, else it expires then. Every gateway reloads key records at least once a
 * minute, and a non-zero overlap is at least a minute, so every instance knows the new expiry
 * before it arrives.
 */
export async function rollApiKey(
  deps: AccountDeps,
  accountId: string,
  keyId: string,
  overlapSeconds: number,
  now = Date.now(),
): Promise<{ created: ApiKeyView & { key: string }; previous: ApiKeyView }> {
  const old = await deps.repository.findKey(accountId, keyId);
  if (!old) throw new AppError('NOT_FOUND', `API key ${keyId} was not found.`);
  const oldExpiry = old.expires_at ? new Date(old.expires_at).getTime() : null;
  if (old.revoked_at || (oldExpiry !== null && oldExpiry <= now)) {
    throw new AppError('CONFLICT', 'Only an active key can be rolled; create a new key instead.');
  }
  const created = await createApiKey(
    deps,
    accountId,
    old.name,
    oldExpiry !== null ? new Date(oldExpiry) : undefined,
    undefined,
    false,
  );
  if (overlapSeconds === 0) {
    return { created, previous: await revokeApiKey(deps, accountId, keyId) };
  }
  const until = new Date(Math.min(now + overlapSeconds * 1000, oldExpiry ?? Number.POSITIVE_INFINITY));
  await deps.repository.setKeyExpiry(accountId, keyId, until);
  deps.cache.deleteByKeyId(keyId);
  return { created, previous: toKeyView({ ...old, expires_at: until }) };
}
