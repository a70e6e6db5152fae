import { createHmac, createSecretKey, randomBytes, type KeyObject } from 'node:crypto';
import type { SigningSecret } from './records';

/** `whsec_` + base64 of 24 random bytes, as Standard Webhooks libraries expect. */
export function generateSecret(): string {
  return `whsec_${randomBytes(24).toString('base64')}`;
}

/**
 * Keys prepared once per secret: an HMAC keyed from the secret's bytes prepares the key anew on
 * every signature (decode, copy, key slots), a cost that showed in the worker's profile at a
 * thousand attempts a second. Bounded: secrets of deleted or rotated subscriptions fall out.
 */
const KEYS_KEPT = 10_000;
const keys = new Map<string, KeyObject>();

function keyOf(secret: string): KeyObject {
  let key = keys.get(secret);
  if (key === undefined) {
    key = createSecretKey(Buffer.from(secret.replace(/^whsec_/, ''), 'base64'));
    if (keys.size >= KEYS_KEPT) keys.delete(keys.keys().next().value ?? '');
    keys.set(secret, key);
  }
  return key;
}

export function sign(secret: string, id: string, timestamp: number, body: string): string {
  const key = keyOf(secret);
  return `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64')}`;
}

/** Standard Webhooks headers; during a rotation overlap every live secret signs (space-separated). */
export function signatureHeaders(
  secrets: SigningSecret[],
  id: string,
  body: string,
  now = Date.now(),
): Record<string, string> {
  const timestamp = Math.floor(now / 1000);
  const live = secrets.filter((s) => s.expires_at === null || new Date(s.expires_at).getTime() > now);
  return {
    'webhook-id': id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': live.map((s) => sign(s.secret, id, timestamp, body)).join(' '),
  };
}
