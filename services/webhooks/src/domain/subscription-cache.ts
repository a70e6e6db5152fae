import type { WebhookEventName } from '@signal/contracts';
import type { SubscriptionDocument } from '../data/webhook.models';
import type { WebhookRepository } from '../data/webhook.repository';

/**
 * The worker reads subscriptions for every event and every attempt; holding them for a
 * moment (`ttlMs`, default 1 s) halves its database round trips. A change through the API
 * reaches the worker within that time; a 410 seen by this worker applies at once.
 */
export class SubscriptionCache {
  private readonly byEvent = new Map<string, { at: number; value: Promise<SubscriptionDocument[]> }>();
  private readonly byId = new Map<string, { at: number; value: Promise<SubscriptionDocument | null> }>();

  constructor(
    private readonly repository: WebhookRepository,
    private readonly ttlMs: number,
  ) {}

  subscriptionsFor(event: WebhookEventName): Promise<SubscriptionDocument[]> {
    return this.cached(this.byEvent, event, () => this.repository.subscriptionsFor(event));
  }

  findById(id: string): Promise<SubscriptionDocument | null> {
    return this.cached(this.byId, id, () => this.repository.findSubscriptionById(id));
  }

  forget(): void {
    this.byEvent.clear();
    this.byId.clear();
  }

  private cached<T>(
    map: Map<string, { at: number; value: Promise<T> }>,
    key: string,
    load: () => Promise<T>,
  ): Promise<T> {
    const now = Date.now();
    const hit = map.get(key);
    if (hit && now - hit.at < this.ttlMs) return hit.value;
    const value = load();
    value.catch(() => map.delete(key));
    if (map.size > 10_000) map.clear();
    map.set(key, { at: now, value });
    return value;
  }
}
