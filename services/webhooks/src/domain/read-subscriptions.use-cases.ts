import {
  SHORT_LIST_DEFAULT_LIMIT,
  pageMeta,
  type PageMeta,
  type ShortListQuery,
  type WebhookSubscription,
} from '@signal/contracts';
import { succeed, type Result } from '@signal/service-kit';
import { ownedSubscription, type SubscriptionDeps } from './subscription-rules';
import { toSubscriptionView } from './views';

/** A page of the account's subscriptions, newest first. */
export async function listSubscriptions(
  deps: SubscriptionDeps,
  accountId: string,
  q: ShortListQuery,
): Promise<{ data: WebhookSubscription[]; meta: PageMeta }> {
  const perPage = q.limit ?? SHORT_LIST_DEFAULT_LIMIT;
  const page = q.page ?? 1;
  const found = await deps.repository.pageSubscriptions(accountId, (page - 1) * perPage, perPage);
  return { data: found.rows.map(toSubscriptionView), meta: pageMeta(found.total, page, perPage) };
}

export async function getSubscription(
  deps: SubscriptionDeps,
  accountId: string,
  id: string,
): Promise<Result<WebhookSubscription, 'NOT_FOUND'>> {
  const sub = await ownedSubscription(deps, accountId, id);
  return sub.ok ? succeed(toSubscriptionView(sub.value)) : sub;
}
