import { pageMeta, type Delivery, type ListMeta } from '@signal/contracts';
import { fail, succeed, type Result } from '@signal/service-kit';
import {
  comesAfter,
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

type DeliveryPage = { data: Delivery[]; meta: ListMeta };

/**
 * A page of a subscription's deliveries, newest first: by number (`page`), or after the previous
 * page's last delivery (`cursor`), which deliveries made since do not shift. Without a status
 * filter only the page's logs are read; with `failed`, the states of the subscription's open
 * deliveries are folded; with another status, the state of every delivery of the subscription
 * (status is appended, never stored in place, so there is no status to query by). An account has
 * at most `listReads` of them in progress at once: their cost follows the history.
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
  const release = deps.listReads.tryAcquire(accountId);
  if (!release)
    return fail(
      'RATE_LIMIT_EXCEEDED',
      'Other delivery lists of this account are being read: retry after 1 s, or read them one at a time.',
      { retryAfter: 1 },
    );
  try {
    return await listPage(deps, accountId, id, q, position);
  } finally {
    release();
  }
}

async function listPage(
  deps: SubscriptionDeps,
  accountId: string,
  id: string,
  q: DeliveryListQuery,
  position: DeliveryPosition | undefined,
): Promise<Result<DeliveryPage, 'NOT_FOUND'>> {
  const sub = await ownedSubscription(deps, accountId, id);
  if (!sub.ok) return sub;
  const perPage = q.limit ?? 20;
  const page = position?.page ?? q.page ?? 1;
  let rows: Array<{ doc: DeliveryHeader; state: DeliveryState }>;
  let more: boolean;
  let total: number;
  if (q.status === undefined) {
    // One more than the page: whether a next page exists, without a second read.
    const found = await deps.repository.pageDeliveries(
      id,
      q.event,
      position ? { after: position } : { skip: (page - 1) * perPage },
      perPage + 1,
    );
    more = found.rows.length > perPage;
    const pageRows = found.rows.slice(0, perPage);
    rows = withStates(pageRows, await deps.repository.logOf(pageRows.map((d) => d._id)));
    total = found.total;
  } else {
    const candidates =
      q.status === 'failed' ? await foldedOpen(deps, id, q.event) : await foldedHistory(deps, id, q.event);
    const matching = candidates.filter((r) => r.state.status === q.status);
    const start = position ? firstAfter(matching, position) : (page - 1) * perPage;
    rows = matching.slice(start, start + perPage);
    more = start + perPage < matching.length;
    total = matching.length;
  }
  const last = rows[rows.length - 1]?.doc;
  return succeed({
    data: rows.map((r) => toDeliveryView(r.doc, r.state)),
    meta: {
      ...pageMeta(total, page, perPage),
      next_cursor:
        more && last
          ? encodeDeliveryCursor({ page: page + 1, at: last.created_at, id: last._id }, listKeyOf(id, q))
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
async function foldedOpen(deps: SubscriptionDeps, id: string, event: string | undefined) {
  const ids = await deps.repository.openDeliveryIds(id);
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

/** One delivery with every attempt: the request it sent (with its body) and the response it got. */
export const getDelivery = (
  deps: SubscriptionDeps,
  accountId: string,
  id: string,
  deliveryId: string,
): Promise<Result<Delivery, 'NOT_FOUND'>> => deliveryAsItStands(deps, accountId, id, deliveryId, true);
