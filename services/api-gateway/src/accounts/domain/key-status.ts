import type { ApiKeyStatus } from '@signal/contracts';

/** Where a key stands: it works, it ran out at its expiry, or it was revoked. */
export type KeyStatus = ApiKeyStatus;

/** A key's status from its revocation and expiry (stored as dates, shown as ISO strings). */
export function keyStatus(
  key: { revoked_at: Date | string | null; expires_at: Date | string | null },
  now = Date.now(),
): KeyStatus {
  if (key.revoked_at) return 'revoked';
  if (key.expires_at && new Date(key.expires_at).getTime() <= now) return 'expired';
  return 'active';
}
