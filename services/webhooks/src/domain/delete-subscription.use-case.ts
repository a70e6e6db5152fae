import type { WebhookSubscription } from '@signal/contracts';
import { succeed, type Result } from '@signal/service-kit';
import { ownedSubscription, type SubscriptionDeps } from './subscription-rules';
import { toSubscriptionView } from './views';

/** Deletes the account's subscription; returns it as it was. */
export async function deleteSubscription(
  deps: SubscriptionDeps,
  accountId: string,
  id: string,
): Promise<Result<WebhookSubscription, 'NOT_FOUND'>> {
  const found = await ownedSubscription(deps, accountId, id);
  if (!found.ok) return found;
  await deps.repository.deleteSubscription(accountId, id);
  return succeed(toSubscriptionView(found.value));
}
