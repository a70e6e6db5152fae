import {
  compareEntryIds,
  entryIdTime,
  sseEvent,
  isWebhookEventName,
  signalTypeSchema,
  type SignalType,
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

/** A log entry as the stream sends it: the payload under the event's name, with the entry id. */
export const entryEvent = (entry: LogEntry): string =>
  sseEvent({ id: entry.id, event: entry.event, data: entry.data });

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
