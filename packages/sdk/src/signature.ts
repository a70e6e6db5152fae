import { createHmac } from 'node:crypto';

/**
 * The Standard Webhooks MAC of `signed` (`<id>.<timestamp>.<body>`) under a `whsec_` secret: one
 * definition for verifying (verifyWebhook) and signing (the `signal listen` command).
 */
export function webhookSignature(secret: string, signed: string): Buffer {
  const key = Buffer.from(secret.startsWith('whsec_') ? secret.slice(6) : secret, 'base64');
  return createHmac('sha256', key).update(signed).digest();
}
