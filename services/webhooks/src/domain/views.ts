import type { Delivery, DeliveryAttemptResponse, WebhookSubscription } from '@signal/contracts';
import type { DeliveryState } from './delivery-state';
import { healthView } from './health';
import type { AttemptResponse, DeliveryHeader, SubscriptionDocument } from './records';

const iso = (d: Date | null) => (d ? new Date(d).toISOString() : null);

/** A kept response as a client reads it (records of every version). */
function responseView(r: AttemptResponse): DeliveryAttemptResponse {
  return {
    status: r.status,
    headers: Array.isArray(r.headers)
      ? Object.fromEntries(r.headers.map((h) => [h.name, h.value]))
      : r.headers,
    headers_truncated: r.headers_truncated ?? false,
    body: r.body,
    body_encoding: r.body_encoding ?? 'text',
    body_truncated: r.body_truncated,
  };
}

export function toSubscriptionView(s: SubscriptionDocument): WebhookSubscription {
  return {
    id: s._id,
    url: s.url,
    events: s.events,
    types: s.types ?? null,
    description: s.description ?? null,
    status: s.status,
    disabled_reason: s.disabled_reason ?? null,
    created_at: new Date(s.created_at).toISOString(),
    updated_at: new Date(s.updated_at).toISOString(),
    health: healthView(s.health),
  };
}

/**
 * A delivery as a client sees it; with `payload` (the detail) every attempt with the request it
 * sent (that body) and the response it got.
 */
export function toDeliveryView(d: DeliveryHeader, state: DeliveryState, payload?: string): Delivery {
  return {
    id: d._id,
    webhook_id: d.webhook_id,
    event_id: d.event_id,
    event: d.event,
    status: state.status,
    attempts_made: state.attempts_made,
    next_attempt_at: iso(state.next_attempt_at),
    last_response_status: state.attempts.at(-1)?.status_code ?? null,
    last_error: state.last_error,
    created_at: new Date(d.created_at).toISOString(),
    updated_at: new Date(state.updated_at).toISOString(),
    ...(payload !== undefined
      ? {
          attempts: state.attempts.map((a) => ({
            attempt: a.attempt,
            started_at: new Date(a.started_at).toISOString(),
            duration_ms: a.duration_ms,
            status_code: a.status_code,
            error: a.error,
            request: a.request ? { url: a.request.url, headers: a.request.headers, body: payload } : null,
            response: a.response ? responseView(a.response) : null,
          })),
        }
      : {}),
  };
}
