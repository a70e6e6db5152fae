import { createHmac, randomBytes } from 'node:crypto';
import type { SigningSecret } from './records';

/** `whsec_` + base64 of 24 random bytes, as Standard Webhooks libraries expect. */
export function generateSecret(): string {
  return `whsec_${randomBytes(24).toString('base64')}`;
}

export function sign(secret: string, id: string, timestamp: number, body: string): string {
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
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
