/**
 * The rules the gateway's stream fan-out applies to each event of the log: which client streams
 * want it, and where it stands in the log's order.
 */

/** What a client's stream asked for (`type`, `events` query): every event when a set is absent. */
export interface FeedFilter {
  types?: ReadonlySet<string>;
  events?: ReadonlySet<string>;
}

/** Does a stream with this filter want an `event` about a signal of `type`? */
export const wants = (filter: FeedFilter, event: string, type: string | undefined): boolean =>
  (!filter.events || filter.events.has(event)) &&
  (!filter.types || (type !== undefined && filter.types.has(type)));

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

const ENTRY_ID = /^(\d{1,20})-(\d{1,20})$/;

/**
 * Does the log entry `id` come after `position`? Entry ids (`<ms>-<seq>`, a Redis Stream's)
 * order by both parts as numbers. An id that is not an entry id (a stand-in service's) counts
 * as after, so nothing is held back by an id the gateway cannot order.
 */
export function comesAfter(id: string, position: string): boolean {
  const a = ENTRY_ID.exec(id);
  const b = ENTRY_ID.exec(position);
  if (!a || !b) return true;
  const ms = BigInt(a[1]!) - BigInt(b[1]!);
  return ms > 0n || (ms === 0n && BigInt(a[2]!) > BigInt(b[2]!));
}
