import type { UpdateWebhookInput, WebhookSubscription } from '@signal/contracts';
import { succeed, type Result } from '@signal/service-kit';
import type { SubscriptionDocument } from './records';
import { ownedSubscription, urlFailure, webhookNotFound, type SubscriptionDeps } from './subscription-rules';
import { toSubscriptionView } from './views';

/**
 * Changes one of the account's subscriptions: a new URL is checked, the fields given are stored
 * (disabling records why, enabling clears it), and the subscription is returned as changed.
 */
export async function updateSubscription(
  deps: SubscriptionDeps,
  accountId: string,
  id: string,
  input: UpdateWebhookInput,
): Promise<Result<WebhookSubscription, 'NOT_FOUND' | 'VALIDATION_ERROR'>> {
  const found = await ownedSubscription(deps, accountId, id);
  if (!found.ok) return found;
  if (input.url !== undefined) {
    const refused = urlFailure(input.url, deps.guard);
    if (refused) return refused;
  }
  const set: Partial<SubscriptionDocument> = { updated_at: new Date() };
  if (input.url !== undefined) set.url = input.url;
  if (input.events !== undefined) set.events = input.events;
  if (input.types !== undefined) set.types = input.types;
  if (input.description !== undefined) set.description = input.description;
  if (input.enabled !== undefined) {
    set.status = input.enabled ? 'enabled' : 'disabled';
    set.disabled_reason = input.enabled ? null : 'Disabled by the account.';
  }
  const updated = await deps.repository.updateSubscription(accountId, id, set);
  if (!updated) return webhookNotFound(id);
  return succeed(toSubscriptionView(updated));
}
