/**
 * A webhook's health and a delivery's last response, read defensively: the API adds them to
 * each subscription (`health`) and delivery (`last_response_status`, `last_error`); a server
 * without them still renders its pages, with the bare state.
 */
import { isRecord } from './api.js';

export interface WebhookHealth {
  /** The outcome of the latest attempt; null before the first. */
  last_delivery_status: 'succeeded' | 'failed' | null;
  last_delivery_at: string | null;
  /** The HTTP status the receiver gave then; null when there was no response. */
  last_response_status: number | null;
  last_error: string | null;
  /** The first failed attempt since the last success; null when the latest succeeded. */
  failing_since: string | null;
  failures_24h: number;
}

const text = (v: unknown): string | null => (typeof v === 'string' ? v : null);
const count = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);

export function healthOf(subscription: unknown): WebhookHealth | undefined {
  if (!isRecord(subscription) || !isRecord(subscription.health)) return undefined;
  const h = subscription.health;
  const status = h.last_delivery_status;
  return {
    last_delivery_status: status === 'succeeded' || status === 'failed' ? status : null,
    last_delivery_at: text(h.last_delivery_at),
    last_response_status: count(h.last_response_status),
    last_error: text(h.last_error),
    failing_since: text(h.failing_since),
    failures_24h: count(h.failures_24h) ?? 0,
  };
}

/**
 * A delivery's `last_error` when no attempt was made: its subscription was disabled when it was
 * due (the contracts' NOT_SENT_WHILE_DISABLED; the page's bundle carries its own copy, as of the
 * event names in shell.ts).
 */
export const NOT_SENT_WHILE_DISABLED = 'subscription_disabled';

/**
 * An attempt's outcome in a few words: "HTTP 500", "timeout", or the status and what failed after
 * it ("HTTP 200 · timeout": a body still arriving at the deadline; "HTTP 302 ·
 * redirect_not_followed"). An `http_<status>` error says nothing the status does not.
 */
export function outcomeText(status: number | null, error: string | null): string | null {
  if (status === null) return error;
  return error === null || error === `http_${status}` ? `HTTP ${status}` : `HTTP ${status} · ${error}`;
}

/** What the receiver answered a delivery's latest attempt: "HTTP 500", "timeout", or nothing known. */
export function lastResponseOf(delivery: unknown): string | undefined {
  if (!isRecord(delivery)) return undefined;
  const status = count(delivery.last_response_status);
  const error = text(delivery.last_error);
  if (status !== null) return outcomeText(status, error) ?? undefined;
  if (error === NOT_SENT_WHILE_DISABLED) return 'not sent: webhook disabled';
  if (error) return error;
  // The detail carries every attempt: its last one says it.
  const attempts = Array.isArray(delivery.attempts) ? delivery.attempts.filter(isRecord) : [];
  const last = attempts[attempts.length - 1];
  if (!last) return undefined;
  return outcomeText(count(last.status_code), text(last.error)) ?? undefined;
}
