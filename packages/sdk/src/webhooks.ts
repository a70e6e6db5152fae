/** Webhook verification (Standard Webhooks: webhook-id, webhook-timestamp, webhook-signature). */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { webhookSignature } from './signature.js';
import type { WebhookPayload } from './types.js';
import { isRecord } from './errors.js';

export class WebhookVerificationError extends Error {
  override readonly name = 'WebhookVerificationError';
}

type HeaderBag = Headers | Record<string, string | string[] | undefined>;

function header(headers: HeaderBag, name: string): string | undefined {
  if (typeof Headers !== 'undefined' && headers instanceof Headers) return headers.get(name) ?? undefined;
  for (const [k, v] of Object.entries(headers)) {
    if (k.toLowerCase() === name) return Array.isArray(v) ? v.join(' ') : v;
  }
  return undefined;
}

/**
 * The raw body as text. Anything but a string or bytes is a mistake of the caller's code, not of
 * the request (a body parsed by express.json(), or none read at all), so it is a TypeError that
 * says what to pass, never the WebhookVerificationError a forged request gets.
 */
function rawBody(body: unknown): string {
  if (typeof body === 'string') return body;
  if (body instanceof Uint8Array)
    return Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('utf8');
  if (body === undefined || body === null)
    throw new TypeError(
      'body is missing: pass the raw request body (string or bytes) exactly as received ' +
        "(with Express: express.text({ type: '*/*' }) or express.raw({ type: '*/*' }) on the route)",
    );
  throw new TypeError(
    'body must be the raw request body (string or bytes) exactly as received, not parsed JSON ' +
      "(with Express: express.text({ type: '*/*' }) or express.raw({ type: '*/*' }) on the route, not express.json())",
  );
}

/**
 * The secrets to verify with. An empty or missing one is a configuration mistake (an unset
 * environment variable, most often): a TypeError that says so, not a verification failure that
 * would look like a forged request.
 */
function secretsOf(secret: unknown): string[] {
  const given: unknown[] = Array.isArray(secret) ? secret : [secret];
  if (given.length === 0 || given.some((s) => s === undefined || s === null || s === ''))
    throw new TypeError(
      "secret is missing: pass the subscription's whsec_ signing secret (is SIGNAL_WEBHOOK_SECRET set?)",
    );
  const found = given.filter((s): s is string => typeof s === 'string');
  if (found.length !== given.length)
    throw new TypeError(
      "secret must be the subscription's whsec_ signing secret as a string, or an array of them during a rotation",
    );
  return found;
}

/**
 * Verifies a delivery's signature and freshness and returns its parsed payload.
 * Pass the raw body exactly as received (not re-serialised JSON). During a secret rotation,
 * pass the new and the old secret: either one verifies. Throws WebhookVerificationError for a
 * request that does not verify, and TypeError for a call that cannot verify anything (a parsed
 * body, a missing secret).
 */
export function verifyWebhook(
  body: string | Uint8Array,
  headers: HeaderBag,
  secret: string | string[],
  options: { toleranceSeconds?: number; now?: Date } = {},
): WebhookPayload {
  const raw = rawBody(body);
  const secrets = secretsOf(secret);
  const id = header(headers, 'webhook-id');
  const timestamp = header(headers, 'webhook-timestamp');
  const signatures = header(headers, 'webhook-signature');
  if (!id || !timestamp || !signatures) throw new WebhookVerificationError('missing webhook headers');
  if (!/^\d+$/.test(timestamp)) throw new WebhookVerificationError('invalid webhook-timestamp');
  const now = Math.floor((options.now?.getTime() ?? Date.now()) / 1000);
  const tolerance = options.toleranceSeconds ?? 300;
  if (Math.abs(now - Number(timestamp)) > tolerance) {
    throw new WebhookVerificationError('webhook-timestamp outside the tolerance');
  }
  const signed = `${id}.${timestamp}.${raw}`;
  const given = signatures
    .split(' ')
    .map((s) => s.split(','))
    .filter((p): p is [string, string] => p.length === 2 && p[0] === 'v1')
    .map((p) => Buffer.from(p[1], 'base64'));
  const ok = secrets.some((s) => {
    const expected = webhookSignature(s, signed);
    return given.some((g) => g.length === expected.length && timingSafeEqual(g, expected));
  });
  if (!ok) throw new WebhookVerificationError('no matching signature');
  let payload: unknown;
  try {
    payload = JSON.parse(raw);
  } catch {
    throw new WebhookVerificationError('body is not JSON');
  }
  if (
    !isRecord(payload) ||
    !isWebhookEventName(payload.event) ||
    typeof payload.timestamp !== 'string' ||
    !isRecord(payload.data)
  ) {
    throw new WebhookVerificationError('body is not a webhook payload');
  }
  // The single decode point of a delivery: signed by the service, shaped by its contract.
  return payload as WebhookPayload;
}

/**
 * The headers the service sends with `body` signed by `secret` (or each of several, as during a
 * rotation): for testing a webhook handler without the service. The id and time default to a new
 * `msg_` id and now; pass them to reproduce one delivery.
 */
export function signWebhook(
  body: string | Uint8Array,
  secret: string | string[],
  options: { id?: string; timestamp?: number | Date } = {},
): { 'webhook-id': string; 'webhook-timestamp': string; 'webhook-signature': string } {
  const id = options.id ?? `msg_${randomBytes(12).toString('hex')}`;
  const at = options.timestamp ?? new Date();
  const seconds = String(at instanceof Date ? Math.floor(at.getTime() / 1000) : Math.floor(at));
  const signed = `${id}.${seconds}.${rawBody(body)}`;
  const signature = secretsOf(secret)
    .map((s) => `v1,${webhookSignature(s, signed).toString('base64')}`)
    .join(' ');
  return { 'webhook-id': id, 'webhook-timestamp': seconds, 'webhook-signature': signature };
}

/** A new secret in the service's form (`whsec_` and base64 of 24 random bytes): for local tests. */
export function generateWebhookSecret(): string {
  return `whsec_${randomBytes(24).toString('base64')}`;
}

/** The events a delivery can carry, listed once: one added or dropped in the document fails compiling here. */
const PAYLOAD_EVENTS: Readonly<Record<WebhookPayload['event'], true>> = {
  'signal.new': true,
  'signal.winner': true,
  'signal.dead': true,
  'signal.rugged': true,
  'webhook.test': true,
};
const isWebhookEventName = (v: unknown): v is WebhookPayload['event'] =>
  typeof v === 'string' && Object.hasOwn(PAYLOAD_EVENTS, v);
