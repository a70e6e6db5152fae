import { createHash } from 'node:crypto';
import { NOT_SENT_WHILE_DISABLED } from '@signal/contracts';
import type { AttemptRecord, DeliveryHeader, DeliveryLogEntry, DeliveryStatus } from './records';

/** A delivery as a client sees it: its document plus every entry of its log, folded. */
export interface DeliveryState {
  status: DeliveryStatus;
  attempts_made: number;
  next_attempt_at: Date | null;
  updated_at: Date;
  attempts: AttemptRecord[];
  /** The highest attempt number used so far (made or dropped): a re-send queues the next. */
  last_attempt: number;
  /**
   * Why the latest attempt failed, or why it was not made (`subscription_disabled`: the
   * subscription was off when it was due); null once one succeeded. A re-send queued keeps it.
   */
  last_error: string | null;
}

/** Log position of attempt k (made or dropped), and of the re-send that queued it. */
export const attemptSeq = (attempt: number): number => 2 * attempt;
export const requeueSeq = (attempt: number): number => 2 * attempt - 1;
/** What follows a delivery's id in its log entries' ids; no delivery id holds it. */
export const LOG_ID_SEPARATOR = ':';
export const logEntryId = (deliveryId: string, seq: number): string =>
  `${deliveryId}${LOG_ID_SEPARATOR}${seq}`;

/** The state after every entry, in log order (entries may come in any order). */
export function foldDelivery(doc: DeliveryHeader, entries: readonly DeliveryLogEntry[]): DeliveryState {
  // Documents written before the log carry their own state; the log continues from it.
  const attempts: AttemptRecord[] = [...(doc.attempts ?? [])];
  let state: DeliveryState = {
    status: doc.status,
    attempts_made: doc.attempts_made ?? 0,
    next_attempt_at: doc.next_attempt_at ?? (doc.status === 'pending' ? doc.created_at : null),
    updated_at: doc.updated_at ?? doc.created_at,
    attempts,
    last_attempt: doc.attempts_made ?? 0,
    // A delivery made failed, with no attempt, is one its subscription was disabled for when the
    // event came (fan-out.use-case.ts keeps it for recover).
    last_error:
      attempts.at(-1)?.error ??
      (doc.status === 'failed' && attempts.length === 0 ? NOT_SENT_WHILE_DISABLED : null),
  };
  for (const e of [...entries].sort((a, b) => a.seq - b.seq)) {
    if (e.kind === 'attempt' && e.started_at !== null) {
      attempts.push({
        // Numbered as made: a log position a dropped attempt (webhook off) used shows no gap.
        attempt: attempts.length + 1,
        started_at: e.started_at,
        duration_ms: e.duration_ms ?? 0,
        status_code: e.status_code,
        error: e.error,
        ...(e.request !== undefined ? { request: e.request } : {}),
        ...(e.response !== undefined ? { response: e.response } : {}),
      });
    }
    state = {
      status: e.status,
      attempts_made: e.kind === 'attempt' ? state.attempts_made + 1 : state.attempts_made,
      next_attempt_at: e.next_attempt_at,
      updated_at: e.at,
      attempts,
      last_attempt: Math.max(state.last_attempt, e.kind === 'requeued' ? e.attempt - 1 : e.attempt),
      last_error: e.kind === 'requeued' ? state.last_error : e.error,
    };
  }
  return state;
}

/** Each delivery with its state, folded from its log. */
export function withStates<D extends DeliveryHeader>(
  docs: readonly D[],
  entries: readonly DeliveryLogEntry[],
): Array<{ doc: D; state: DeliveryState }> {
  const byDelivery = new Map<string, DeliveryLogEntry[]>();
  for (const e of entries) {
    const list = byDelivery.get(e.delivery_id) ?? [];
    list.push(e);
    byDelivery.set(e.delivery_id, list);
  }
  return docs.map((doc) => ({ doc, state: foldDelivery(doc, byDelivery.get(doc._id) ?? []) }));
}

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

function crockford(bits: bigint, chars: number): string {
  let out = '';
  for (let i = 0; i < chars; i++) {
    out = CROCKFORD[Number(bits & 31n)] + out;
    bits >>= 5n;
  }
  return out;
}

/** What every delivery id begins with. */
export const DELIVERY_ID_PREFIX = 'dlv_';

/**
 * The bound below which sort the ids of deliveries whose event came before `timeMs`: and so the
 * ids of their log entries and attempt claims, which begin with the delivery's id. An id of an
 * event in that very millisecond sorts after it (it is longer), so nothing at `timeMs` is below.
 */
export function deliveryIdBound(timeMs: number): string {
  return `${DELIVERY_ID_PREFIX}${ulidTime(timeMs)}`;
}

/** A ULID's time: milliseconds, within its 48 bits, as 10 Crockford characters. */
const ulidTime = (ms: number): string =>
  crockford(BigInt(Math.max(0, Math.min(Math.floor(ms), 2 ** 48 - 1))), 10);

/**
 * The id of the delivery of `eventId` to `webhookId`: a ULID whose time is the event's and whose
 * randomness is a hash of the pair. The same pair always gets the same id, so an event fanned
 * out twice (redelivered after a crash) makes no second delivery and the receiver sees one
 * `webhook-id`, with no read to find out.
 */
export function deliveryIdFor(webhookId: string, eventId: string, eventTimeMs: number): string {
  const hash = createHash('sha256').update(`${webhookId}\n${eventId}`).digest();
  const random = BigInt(`0x${hash.subarray(0, 10).toString('hex')}`); // 80 bits
  return `${DELIVERY_ID_PREFIX}${ulidTime(eventTimeMs)}${crockford(random, 16)}`;
}
