import { pageMeta, type Delivery, type PageMeta } from '@signal/contracts';
import { fail, succeed, type Result } from '@signal/service-kit';
import { withStates, type DeliveryState } from './delivery-state';
import type { DeliveryHeader, DeliveryStatus } from './records';
import { ownedDelivery, ownedSubscription, type SubscriptionDeps } from './subscription-rules';
import { toDeliveryView } from './views';

/**
 * A page of a subscription's deliveries, newest first. Without a status filter only the page's
 * logs are read; with one, the state of every delivery of the subscription is folded (status is
 * appended, never stored in place, so there is no status to query by). An account has at most
 * `listReads` of them in progress at once: their cost follows the history.
 */
export async function listDeliveries(
  deps: SubscriptionDeps,
  accountId: string,
  id: string,
  q: { status?: DeliveryStatus; event?: string; limit?: number; page?: number },
): Promise<Result<{ data: Delivery[]; meta: PageMeta }, 'NOT_FOUND' | 'RATE_LIMIT_EXCEEDED'>> {
  const release = deps.listReads.tryAcquire(accountId);
  if (!release)
    return fail(
      'RATE_LIMIT_EXCEEDED',
      'Other delivery lists of this account are being read: retry after 1 s, or read them one at a time.',
      { retryAfter: 1 },
    );
  try {
    return await listPage(deps, accountId, id, q);
  } finally {
    release();
  }
}

async function listPage(
  deps: SubscriptionDeps,
  accountId: string,
  id: string,
  q: { status?: DeliveryStatus; event?: string; limit?: number; page?: number },
): Promise<Result<{ data: Delivery[]; meta: PageMeta }, 'NOT_FOUND'>> {
  const sub = await ownedSubscription(deps, accountId, id);
  if (!sub.ok) return sub;
  const perPage = q.limit ?? 20;
  const page = q.page ?? 1;
  const skip = (page - 1) * perPage;
  let rows: Array<{ doc: DeliveryHeader; state: DeliveryState }>;
  let total: number;
  if (q.status === undefined) {
    const found = await deps.repository.pageDeliveries(id, q.event, skip, perPage);
    rows = withStates(found.rows, await deps.repository.logOf(found.rows.map((d) => d._id)));
    total = found.total;
  } else {
    const [docs, entries] = await Promise.all([
      deps.repository.allDeliveries(id, q.event),
      deps.repository.logOfSubscription(id),
    ]);
    const matching = withStates(docs, entries).filter((r) => r.state.status === q.status);
    rows = matching.slice(skip, skip + perPage);
    total = matching.length;
  }
  return succeed({
    data: rows.map((r) => toDeliveryView(r.doc, r.state)),
    meta: pageMeta(total, page, perPage),
  });
}

/** One delivery with every attempt: the request it sent (with its body) and the response it got. */
export async function getDelivery(
  deps: SubscriptionDeps,
  accountId: string,
  id: string,
  deliveryId: string,
): Promise<Result<Delivery, 'NOT_FOUND'>> {
  const sub = await ownedSubscription(deps, accountId, id);
  if (!sub.ok) return sub;
  const found = await ownedDelivery(deps, accountId, id, deliveryId);
  if (!found.ok) return found;
  const { doc, state } = found.value;
  return succeed(toDeliveryView(doc, state, doc.payload));
}
