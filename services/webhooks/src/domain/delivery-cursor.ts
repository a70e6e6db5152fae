import { createHash } from 'node:crypto';
import { deliveryIdSchema } from '@signal/contracts';
import { fail, succeed, type Result } from '@signal/service-kit';

/**
 * Where a walk of a subscription's deliveries stands: after the delivery `id` created at `at`
 * (the list's order is `created_at desc, _id desc`), or before it when the walk goes back, on
 * page `page` of the walk.
 */
export interface DeliveryPosition {
  at: Date;
  id: string;
  /** The page the walk reaches next: what `meta.page` reports for it. */
  page: number;
  /** The page is the one ending just before the delivery (`meta.prev_cursor`), not after it. */
  before?: true;
}

/** The list a cursor walks: one subscription's deliveries under one set of filters. */
export interface DeliveryListKey {
  webhookId: string;
  event?: string;
  status?: string;
}

/** A short mark of the list, so a cursor is taken only by the list that returned it. */
function listMark(list: DeliveryListKey): string {
  return createHash('sha256')
    .update(`${list.webhookId}\n${list.event ?? ''}\n${list.status ?? ''}`)
    .digest('base64url')
    .slice(0, 10);
}

/**
 * Opaque to clients; inside: `<page>.<created_at ms>.<delivery id>.<list mark>`, with `b` in front
 * of the page for a walk back.
 */
export function encodeDeliveryCursor(position: DeliveryPosition, list: DeliveryListKey): string {
  return Buffer.from(
    `${position.before ? 'b' : ''}${position.page}.${position.at.getTime()}.${position.id}.${listMark(list)}`,
    'utf8',
  ).toString('base64url');
}

const CURSOR_REFUSED =
  'cursor must be a value this list (this subscription, these filters) returned in meta.next_cursor or meta.prev_cursor';
const INVALID = () =>
  fail('VALIDATION_ERROR', CURSOR_REFUSED, {
    details: [{ field: 'cursor', message: CURSOR_REFUSED }],
  });

/**
 * The position inside a cursor, or a VALIDATION_ERROR when it is not one this list made (another
 * subscription's, or the same one's under other filters).
 */
export function decodeDeliveryCursor(
  cursor: string,
  list: DeliveryListKey,
): Result<DeliveryPosition, 'VALIDATION_ERROR'> {
  const match = /^(b?)([1-9]\d{0,14})\.(\d{1,15})\.([^.]+)\.([A-Za-z0-9_-]{10})$/.exec(
    Buffer.from(cursor, 'base64url').toString('utf8'),
  );
  if (!match || !deliveryIdSchema.safeParse(match[4]).success || match[5] !== listMark(list))
    return INVALID();
  const at = new Date(Number(match[3]));
  const page = Number(match[2]);
  if (Number.isNaN(at.getTime()) || !Number.isSafeInteger(page)) return INVALID();
  const position: DeliveryPosition = { page, at, id: match[4]! };
  if (match[1]) position.before = true;
  return succeed(position);
}

/** The list's order, newest first: `created_at desc, _id desc` (a sort comparator). */
export function newestFirst(
  a: { created_at: Date; _id: string },
  b: { created_at: Date; _id: string },
): number {
  return b.created_at.getTime() - a.created_at.getTime() || (a._id < b._id ? 1 : a._id > b._id ? -1 : 0);
}

/** Does a delivery come after `position` in the list's order (older, or as old with a lower id)? */
export function comesAfter(delivery: { created_at: Date; _id: string }, position: DeliveryPosition): boolean {
  return newestFirst(delivery, { created_at: position.at, _id: position.id }) > 0;
}

/** Does a delivery come before `position` in the list's order (newer, or as new with a higher id)? */
export function comesBefore(
  delivery: { created_at: Date; _id: string },
  position: DeliveryPosition,
): boolean {
  return newestFirst(delivery, { created_at: position.at, _id: position.id }) < 0;
}
