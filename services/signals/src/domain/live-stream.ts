import {
  sseEvent,
  isWebhookEventName,
  signalTypeSchema,
  type SignalStreamQuery,
  type SignalType,
  type StreamEndData,
  type StreamResetData,
  type StreamResetReason,
  type WebhookEventName,
} from '@signal/contracts';

/** One event of the live stream's log (a Redis Stream entry): what the feeder appended. */
export interface LogEntry {
  /** The Redis Stream entry id (`<ms>-<seq>`): the event's id on the stream. */
  id: string;
  event: WebhookEventName;
  /** The bus event's id (`evt_…`), which the feeder dedupes on. */
  eventId: string;
  type: SignalType;
  /** The webhook payload, JSON. */
  data: string;
}

/** An entry as read from the log: its id always, its content when the stream can send it. */
export interface ReadEntry {
  id: string;
  entry: LogEntry | undefined;
}

/** What appending one event came to: its entry id (`added` false: appended before), or the error. */
export type AppendOutcome = { ok: true; id: string; added: boolean } | { ok: false; error: unknown };

/**
 * An entry as Redis returns it (`[id, [field, value, …]]`), or undefined when it is not one the
 * stream can send (a field missing, or a name or type from a newer writer this reader does not
 * know): such an entry still moves a reader's position on, it is only never sent.
 */
export function parseLogEntry(id: string, fields: readonly string[]): LogEntry | undefined {
  const values = new Map<string, string>();
  for (let i = 0; i + 1 < fields.length; i += 2) values.set(fields[i]!, fields[i + 1]!);
  const event = values.get('event');
  const eventId = values.get('event_id');
  const type = signalTypeSchema.safeParse(values.get('type'));
  const data = values.get('data');
  if (
    event === undefined ||
    !isWebhookEventName(event) ||
    eventId === undefined ||
    !type.success ||
    data === undefined
  )
    return undefined;
  return { id, event, eventId, type: type.data, data };
}

/** The fields an entry is written with (`XADD … <field> <value> …`). */
export function logEntryFields(entry: Omit<LogEntry, 'id'>): string[] {
  return ['event', entry.event, 'event_id', entry.eventId, 'type', entry.type, 'data', entry.data];
}

const ENTRY_ID = /^(0|[1-9]\d{0,19})-(0|[1-9]\d{0,19})$/;
const MAX_PART = '18446744073709551615';

const partFits = (part: string): boolean =>
  part.length < MAX_PART.length || (part.length === MAX_PART.length && part <= MAX_PART);

/** Is this a Redis Stream entry id as Redis writes it (`<ms>-<seq>`, no leading zeros, 64-bit parts)? */
export function isEntryId(text: string): boolean {
  const m = ENTRY_ID.exec(text);
  return m !== null && partFits(m[1]!) && partFits(m[2]!);
}

function comparePart(a: string, b: string): number {
  if (a.length !== b.length) return a.length < b.length ? -1 : 1;
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Orders two entry ids (both `isEntryId`): negative, zero or positive. */
export function compareEntryIds(a: string, b: string): number {
  const [aMs = '', aSeq = ''] = a.split('-');
  const [bMs = '', bSeq = ''] = b.split('-');
  return comparePart(aMs, bMs) || comparePart(aSeq, bSeq);
}

/** The milliseconds part of an entry id (the time Redis appended it). */
export const entryIdTime = (id: string): number => Number(id.split('-')[0]);

/** What a stream sends: every event, or only some types and names (`type`, `events` query). */
export interface StreamFilter {
  types?: ReadonlySet<SignalType>;
  events?: ReadonlySet<WebhookEventName>;
}

export function streamFilter(query: Pick<SignalStreamQuery, 'type' | 'events'>): StreamFilter {
  return {
    ...(query.type ? { types: new Set(query.type) } : {}),
    ...(query.events ? { events: new Set(query.events) } : {}),
  };
}

export function matches(filter: StreamFilter, entry: LogEntry): boolean {
  return (
    (!filter.types || filter.types.has(entry.type)) && (!filter.events || filter.events.has(entry.event))
  );
}

export { HEARTBEAT, STREAM_PREAMBLE, sseComment, sseEvent } from '@signal/contracts';

/** A log entry as the stream sends it: the payload under the event's name, with the entry id. */
export const entryEvent = (entry: LogEntry): string =>
  sseEvent({ id: entry.id, event: entry.event, data: entry.data });

const RESET_MESSAGES: Record<StreamResetReason, string> = {
  malformed: 'Last-Event-ID is not an event id of this stream.',
  unknown: 'Last-Event-ID names no event of this stream.',
  expired: 'Last-Event-ID is older than the events the stream keeps; what came after it cannot be replayed.',
};

/**
 * The `reset` event: the client re-syncs from the list, and the stream goes on live. It carries
 * the id the live part starts after (when the log has one), so a client that reconnects later
 * resumes from there instead of being reset again.
 */
export function resetEvent(reason: StreamResetReason, resumeFrom: string | undefined): string {
  const data: StreamResetData = {
    reason,
    message: `${RESET_MESSAGES[reason]} Re-sync from GET /v1/signals; the stream goes on live from here.`,
    resync: '/v1/signals',
  };
  return sseEvent({
    ...(resumeFrom === undefined ? {} : { id: resumeFrom }),
    event: 'reset',
    data: JSON.stringify(data),
  });
}

export { OVERFLOW_EVENT } from '@signal/contracts';

/** The last event of every stream when the server shuts down (or loses the event log mid-replay). */
export const RECONNECT_EVENT = sseEvent({
  event: 'reconnect',
  data: JSON.stringify({
    reason: 'shutdown',
    message:
      'The server is ending this stream. Reconnect with Last-Event-ID to resume after the last event you received.',
  } satisfies StreamEndData),
});

/**
 * Why the log cannot resume after a well-formed id it does not hold: older than its first entry
 * (trimmed away), or, with an empty log, older than the retention, is `expired`; anything else
 * (a later id, one never written) is `unknown`. The log is trimmed from the front only, so an id
 * it holds has every later entry behind it and resumes.
 */
export function notHeldReason(
  id: string,
  log: { first: string | undefined; now: number; retentionMs: number },
): 'expired' | 'unknown' {
  const older = log.first ? compareEntryIds(id, log.first) < 0 : entryIdTime(id) < log.now - log.retentionMs;
  return older ? 'expired' : 'unknown';
}
