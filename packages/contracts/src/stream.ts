import { z } from 'zod';
import { SIGNAL_TYPES, WEBHOOK_EVENTS } from './enums';
import { DEFAULT_ERROR_MESSAGES } from './errors';

/**
 * The live stream of signal events, `GET /v1/signals/stream` (Server-Sent Events; its route is
 * `ROUTES.streamSignals`). Each event is a webhook event (`signal.new`, `signal.winner`,
 * `signal.dead`, `signal.rugged`) with the webhook payload as its `data` and its position in the
 * event log as its `id`.
 */

/** The `retry:` hint at the start of every stream: how long a client waits before reconnecting. */
export const STREAM_RETRY_MS = 2000;

/** The shortest time the event log keeps an event (the service refuses a shorter retention). */
export const STREAM_MIN_RETENTION_HOURS = 24;

/**
 * Events the stream sends about itself (no `id:`, so a client's last event id stays the last
 * signal event it received):
 * - `reset`: the given Last-Event-ID is malformed, unknown or older than the log; re-sync from
 *   `GET /v1/signals`, then the stream goes on live (this one event carries the id to resume from);
 * - `overflow`: the client did not read fast enough; the stream ends, reconnect with Last-Event-ID;
 * - `reconnect`: the server is shutting down; the stream ends, reconnect with Last-Event-ID.
 * Their data: StreamResetData and StreamEndData below.
 */

export type StreamResetReason = 'malformed' | 'unknown' | 'expired';

/** `data` of a `reset` event. */
export interface StreamResetData {
  reason: StreamResetReason;
  message: string;
  /** Where to read what the stream can no longer replay. */
  resync: string;
}

/** `data` of an `overflow` or `reconnect` event. */
export interface StreamEndData {
  reason: 'slow_client' | 'shutdown' | 'session_renewed';
  message: string;
}

/** `data` of an `error` event: the stream's credential no longer holds; do not reconnect with it. */
export interface StreamErrorData {
  code: 'UNAUTHORIZED' | 'KEY_EXPIRED';
  message: string;
}

/** A comma-separated query value whose every item is one of `values`; repeats are dropped. */
function commaList<const T extends readonly [string, ...string[]]>(name: string, values: T, what: string) {
  const known = (item: string): item is T[number] => (values as readonly string[]).includes(item);
  return z.string().transform((text, ctx) => {
    const items = text.split(',').map((item) => item.trim());
    if (items.some((item) => item === '')) {
      ctx.addIssue({ code: 'custom', message: `${name} must be a comma-separated list of ${what}` });
      return z.NEVER;
    }
    const bad = items.find((item) => !known(item));
    if (bad !== undefined) {
      // eslint-disable-next-line no-control-regex -- a client's value is quoted without control characters
      const shown = bad.replace(/[\u0000-\u001f\u007f-\u009f]/g, '\uFFFD').slice(0, 40);
      ctx.addIssue({ code: 'custom', message: `${name}: "${shown}" is not one of ${values.join(', ')}` });
      return z.NEVER;
    }
    return [...new Set(items.filter(known))];
  });
}

/** Query of GET /v1/signals/stream. Unknown parameters are refused, as on the list. */
export const signalStreamQuerySchema = z.strictObject({
  type: commaList('type', SIGNAL_TYPES, 'signal types')
    .optional()
    .describe(
      `Only signals of these types (comma-separated: ${SIGNAL_TYPES.join(', ')}); default every type`,
    ),
  events: commaList('events', WEBHOOK_EVENTS, 'event names')
    .optional()
    .describe(`Only these events (comma-separated: ${WEBHOOK_EVENTS.join(', ')}); default all four`),
  last_event_id: z
    .string()
    .optional()
    .describe(
      'Resume after this event id, for clients that cannot send the Last-Event-ID header (the header wins when both are given)',
    ),
});
export type SignalStreamQuery = z.infer<typeof signalStreamQuerySchema>;

/**
 * One Server-Sent Event. `data` is split at line ends into one `data:` line each (a JSON payload
 * has none, but a raw line end in it would otherwise end the event early). `id` and `event` are
 * ours (an entry id, an event name) and hold no line end.
 */
export function sseEvent(fields: { id?: string; event: string; data: string }): string {
  let out = fields.id === undefined ? '' : `id: ${fields.id}\n`;
  out += `event: ${fields.event}\n`;
  for (const line of fields.data.split(/\r\n|\r|\n/)) out += `data: ${line}\n`;
  return `${out}\n`;
}

/** A comment line (heartbeat): clients ignore it, and it keeps idle proxies from closing the stream. */
export const sseComment = (text: string): string => `: ${text}\n\n`;

/** What every stream starts with: how long a client waits before it reconnects. */
export const STREAM_PREAMBLE = `retry: ${STREAM_RETRY_MS}\n\n`;

export const HEARTBEAT = sseComment('keep-alive');

/** The last event of a stream whose client did not keep up (the service's and the gateway's). */
export const OVERFLOW_EVENT = sseEvent({
  event: 'overflow',
  data: JSON.stringify({
    reason: 'slow_client',
    message:
      'The stream ended because events were not read fast enough. Reconnect with Last-Event-ID to resume after the last event you received.',
  } satisfies StreamEndData),
});

/** The last event of every stream when its server shuts down (or loses the event log mid-replay). */
export const RECONNECT_EVENT = sseEvent({
  event: 'reconnect',
  data: JSON.stringify({
    reason: 'shutdown',
    message:
      'The server is ending this stream. Reconnect with Last-Event-ID to resume after the last event you received.',
  } satisfies StreamEndData),
});

/**
 * The last event of a stream opened with a dashboard session that a renewal replaced (past half
 * its life): the user is still signed in, so it is a word to reconnect (a browser's EventSource
 * sends the renewed cookie), not the end of the session.
 */
export const SESSION_RENEWED_EVENT = sseEvent({
  event: 'reconnect',
  data: JSON.stringify({
    reason: 'session_renewed',
    message:
      'This session was renewed: reconnect with the renewed session (a browser sends its new cookie) and Last-Event-ID to resume.',
  } satisfies StreamEndData),
});

const errorEvent = (data: StreamErrorData): string =>
  sseEvent({ event: 'error', data: JSON.stringify(data) });

/** The last events of a stream the gateway ends because its credential ended. */
export const KEY_REVOKED_EVENT = errorEvent({ code: 'UNAUTHORIZED', message: 'The API key was revoked.' });
export const SESSION_ENDED_EVENT = errorEvent({
  code: 'UNAUTHORIZED',
  message: 'The session ended; log in again.',
});
/** A key's expiry says what a request with it is told (spec: generate a new key). */
export const KEY_EXPIRED_EVENT = errorEvent({
  code: 'KEY_EXPIRED',
  message: DEFAULT_ERROR_MESSAGES.KEY_EXPIRED,
});

/**
 * The gateway's catch-up request (internal, not in the public API): `until=live` on the stream's
 * query makes the signals service replay its log after the client's position and then, instead
 * of going on live, end with a `caught-up` event whose data is the id of the last log entry it
 * replayed or passed over (the log's tail then). The gateway's shared feed sends everything after
 * that id. The gateway checks every client's query with the public schema, which refuses `until`,
 * so only the gateway's own requests carry it.
 */
export const STREAM_CATCH_UP_PARAM = 'until';
export const STREAM_CATCH_UP_VALUE = 'live';
export const STREAM_CAUGHT_UP_EVENT = 'caught-up';

/** The end of a catch-up: the id of the last log entry it replayed or passed over. */
export const caughtUpEvent = (position: string): string =>
  sseEvent({ event: STREAM_CAUGHT_UP_EVENT, data: position });

/** The stream's query as the signals service takes it: the public one, and the gateway's `until`. */
export const signalStreamInternalQuerySchema = signalStreamQuerySchema.extend({
  [STREAM_CATCH_UP_PARAM]: z.literal(STREAM_CATCH_UP_VALUE).optional(),
});
