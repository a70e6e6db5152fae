import type { SignalType, WebhookEventName } from './enums';
import type { SignalStreamQuery } from './stream';

/**
 * The live stream's rules, for every process that serves it (the signals service's hub and
 * replay, the gateway's fan-out and catch-up): where an event stands in the log's order, which
 * events a client's filter takes, and when a client that does not read is cut.
 */

// ---- Order: the log's entry ids ----

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

/** Orders two entry ids (both `isEntryId`): negative, zero or positive, by both parts as numbers. */
export function compareEntryIds(a: string, b: string): number {
  const [aMs = '', aSeq = ''] = a.split('-');
  const [bMs = '', bSeq = ''] = b.split('-');
  return comparePart(aMs, bMs) || comparePart(aSeq, bSeq);
}

/** The milliseconds part of an entry id (the time Redis appended it). */
export const entryIdTime = (id: string): number => Number(id.split('-')[0]);

/**
 * Does the event `id` come after `position` in the log? An id that is not an entry id (a stand-in
 * service's) counts as after, so nothing is held back by an id that cannot be ordered.
 */
export function comesAfter(id: string, position: string): boolean {
  if (!isEntryId(id) || !isEntryId(position)) return true;
  return compareEntryIds(id, position) > 0;
}

// ---- Filters: the `type` and `events` query ----

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

/**
 * Does a stream with this filter take an event (its name, and the type of the signal it is
 * about)? An absent set takes everything; a type that is not known (`undefined`) passes only a
 * filter without types.
 */
export function matches(filter: StreamFilter, event: { event: string; type: string | undefined }): boolean {
  const types: ReadonlySet<string> | undefined = filter.types;
  const events: ReadonlySet<string> | undefined = filter.events;
  return (
    (!types || (event.type !== undefined && types.has(event.type))) && (!events || events.has(event.event))
  );
}

/** The signal type of a stream event's payload (`data.type`), or undefined when it has none. */
export function signalTypeOf(data: string): string | undefined {
  let payload: unknown;
  try {
    payload = JSON.parse(data);
  } catch {
    return undefined;
  }
  if (typeof payload !== 'object' || payload === null || !('data' in payload)) return undefined;
  const signal = payload.data;
  if (typeof signal !== 'object' || signal === null || !('type' in signal)) return undefined;
  return typeof signal.type === 'string' ? signal.type : undefined;
}

// ---- Overflow: a client that does not read ----

/**
 * Has a client left more of its stream unread than the bound? Then it is sent `overflow` and
 * its stream ends: one client that stops reading never holds a process's memory.
 */
export const overflows = (unsentBytes: number, maxBufferedBytes: number): boolean =>
  unsentBytes > maxBufferedBytes;
