import { pageMeta, type Delivery, type DeliveryListMeta } from '@signal/contracts';
import { fail, succeed, type Result } from '@signal/service-kit';
import {
  comesAfter,
  comesBefore,
  decodeDeliveryCursor,
  encodeDeliveryCursor,
  newestFirst,
  type DeliveryListKey,
  type DeliveryPosition,
} from './delivery-cursor';
import { withStates, type DeliveryState } from './delivery-state';
import type { DeliveryHeader, DeliveryStatus } from './records';
import { deliveryAsItStands, ownedSubscription, type SubscriptionDeps } from './subscription-rules';
import { toDeliveryView } from './views';

/** The list's query: filters, and a page by number or by cursor. */
export interface DeliveryListQuery {
  status?: DeliveryStatus;
  event?: string;
  limit?: number;
  page?: number;
  cursor?: string;
}

type DeliveryPage = { data: Delivery[]; meta: DeliveryListMeta };

/**
 * Open deliveries up to which `status=failed` folds them here rather than have the store page the
 * failed ones (where it can): each open one folded costs two reads by id (~0.6 ms on the embedded
 * store), the store's page a walk and a count of the history at index cost (66 ms at 10,000
 * deliveries, 264 at 50,000: docs/benchmarks.md, "A status filter from the store").
 */
const OPEN_FOLD_MAX = 100;

/**
 * A page of a subscription's deliveries, newest first: by number (`page`), or after the previous
 * page's last delivery or before its first (`cursor`: `next_cursor`, `prev_cursor`), which
 * deliveries made since do not shift. Without a status
 * filter only the page's logs are read; with `failed`, the states of the subscription's open
 * deliveries are folded while they are few; with another status (or `failed` with many open),
 * the store pages the deliveries whose log's last entry says it where it can (the embedded
 * store's `pageIdsByLatest`), and elsewhere the state of every delivery of the subscription (or
 * every open one) is folded here (status is appended, never stored in place, so there is no
 * status to query by). An account has at most `listReads` of them in progress at
 * once, and their store time is paced: their cost follows the history.
 */
export async function listDeliveries(
  deps: SubscriptionDeps,
  accountId: string,
  id: string,
  q: DeliveryListQuery,
): Promise<Result<DeliveryPage, 'NOT_FOUND' | 'RATE_LIMIT_EXCEEDED' | 'VALIDATION_ERROR'>> {
  let position: DeliveryPosition | undefined;
  if (q.cursor !== undefined) {
    const decoded = decodeDeliveryCursor(q.cursor, listKeyOf(id, q));
    if (!decoded.ok) return decoded;
    position = decoded.value;
  }
  const place = await deps.listReads.tryAcquire(accountId);
  if (!place.ok)
    return fail(
      'RATE_LIMIT_EXCEEDED',
      place.why === 'in_progress'
        ? 'Other delivery lists of this account are being read: retry after 1 s, or read them one at a time.'
        : `This account's delivery lists took more of the store's time than they may lately (their cost follows the history): retry after ${place.retryAfterS} s.`,
      { retryAfter: place.retryAfterS },
    );
  // How many deliveries the read went through: what its time is charged against.
  const cost: { examined?: number } = {};
  try {
    return await listPage(deps, accountId, id, q, position, cost);
  } finally {
    // The charge is written before the answer, so the account's next read meets it.
    await place.release(cost.examined);
  }
}

async function listPage(
  deps: SubscriptionDeps,
  accountId: string,
  id: string,
  q: DeliveryListQuery,
  position: DeliveryPosition | undefined,
  cost: { examined?: number },
): Promise<Result<DeliveryPage, 'NOT_FOUND'>> {
  const sub = await ownedSubscription(deps, accountId, id);
  if (!sub.ok) return sub;
  const perPage = q.limit ?? 20;
  const page = position?.page ?? q.page ?? 1;
  let rows: Array<{ doc: DeliveryHeader; state: DeliveryState }>;
  /** Deliveries come after the page (older), and before it (newer). */
  let later: boolean;
  let earlier: boolean;
  let total: number;
  const byStatus = deps.repository.pageDeliveriesByStatus;
  // The failed ones are among the open ones: read their ids first, to tell whether they are few.
  const openIds = q.status === 'failed' ? await deps.repository.openDeliveryIds(id) : undefined;
  const storePaged =
    q.status === undefined ||
    (byStatus !== undefined && (openIds === undefined || openIds.length > OPEN_FOLD_MAX));
  if (storePaged) {
    const from = position?.before
      ? { before: position }
      : position
        ? { after: position }
        : { skip: (page - 1) * perPage };
    // One more than the page: whether a page lies beyond it, without a second read.
    const found: { rows: DeliveryHeader[]; total: number; examined?: number } =
      q.status !== undefined && byStatus
        ? await byStatus(id, q.event, q.status, from, perPage + 1)
        : await deps.repository.pageDeliveries(id, q.event, from, perPage + 1);
    const beyond = found.rows.length > perPage;
    let pageRows: DeliveryHeader[];
    if (position?.before) {
      // Newest first, the one beyond is the first: the page is the ones nearest the position.
      pageRows = found.rows.slice(beyond ? 1 : 0);
      // The delivery the walk came back from is after the page.
      later = true;
      earlier = beyond;
    } else {
      pageRows = found.rows.slice(0, perPage);
      later = beyond;
      earlier = position !== undefined || page > 1;
    }
    rows = withStates(pageRows, await deps.repository.logOf(pageRows.map((d) => d._id)));
    total = found.total;
    // The store counts the subscription's (event's) history, and on a store without a page
    // command of its own (service-kit's `storeIdCommands`) sorts it too; by status it reads the
    // last log entry of each delivery of it.
    cost.examined = found.examined ?? found.total;
  } else {
    const candidates = openIds
      ? await foldedOpen(deps, openIds, q.event)
      : await foldedHistory(deps, id, q.event);
    cost.examined = candidates.length;
    const matching = candidates.filter((r) => r.state.status === q.status);
    let start: number;
    let end: number;
    if (position?.before) {
      end = firstAtOrAfter(matching, position);
      start = Math.max(0, end - perPage);
    } else {
      start = position ? firstAfter(matching, position) : (page - 1) * perPage;
      end = start + perPage;
    }
    rows = matching.slice(start, end);
    later = end < matching.length;
    earlier = start > 0;
    total = matching.length;
  }
  const first = rows[0]?.doc;
  const last = rows[rows.length - 1]?.doc;
  const list = listKeyOf(id, q);
  return succeed({
    data: rows.map((r) => toDeliveryView(r.doc, r.state)),
    meta: {
      ...pageMeta(total, page, perPage),
      next_cursor:
        later && last
          ? encodeDeliveryCursor({ page: page + 1, at: last.created_at, id: last._id }, list)
          : null,
      // A walk back past newer deliveries made since stays on page 1: pages count the walk.
      prev_cursor:
        earlier && first
          ? encodeDeliveryCursor(
              { page: Math.max(1, page - 1), at: first.created_at, id: first._id, before: true },
              list,
            )
          : null,
    },
  });
}

/** Every delivery of the subscription with its state: the whole history, folded. */
async function foldedHistory(deps: SubscriptionDeps, id: string, event: string | undefined) {
  const [docs, entries] = await Promise.all([
    deps.repository.allDeliveries(id, event),
    deps.repository.logOfSubscription(id),
  ]);
  return withStates(docs, entries);
}

/**
 * The subscription's open deliveries with their states, in the list's order. A failed delivery
 * failed an attempt (or was kept failed while its subscription was disabled) and has not
 * succeeded since, so it is in the open-deliveries index that recover pages through: the failed
 * ones are found among those, at a cost that follows the subscription's failures, not its history.
 */
async function foldedOpen(deps: SubscriptionDeps, ids: readonly string[], event: string | undefined) {
  const [docs, entries] = await Promise.all([
    deps.repository.deliveryHeaders(ids),
    deps.repository.logSummariesOf(ids),
  ]);
  const wanted = docs.filter((d) => event === undefined || d.event === event).sort(newestFirst);
  return withStates(wanted, entries);
}

const listKeyOf = (webhookId: string, q: DeliveryListQuery): DeliveryListKey => ({
  webhookId,
  event: q.event,
  status: q.status,
});

/** Where the rows after `position` start in rows in the list's order. */
function firstAfter(rows: Array<{ doc: DeliveryHeader }>, position: DeliveryPosition): number {
  const i = rows.findIndex((r) => comesAfter(r.doc, position));
  return i === -1 ? rows.length : i;
}

/** Where the rows before `position` end in rows in the list's order (the position's own, if there). */
function firstAtOrAfter(rows: Array<{ doc: DeliveryHeader }>, position: DeliveryPosition): number {
  const i = rows.findIndex((r) => !comesBefore(r.doc, position));
  return i === -1 ? rows.length : i;
}

/** One delivery with every attempt: the request it sent (with its body) and the response it got. */
export const getDelivery = (
  deps: SubscriptionDeps,
  accountId: string,
  id: string,
  deliveryId: string,
): Promise<Result<Delivery, 'NOT_FOUND'>> => deliveryAsItStands(deps, accountId, id, deliveryId, true);
