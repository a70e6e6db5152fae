import type { WebhookEventName } from '@signal/contracts';
import type { SubscriptionDocument } from '../data/webhook.models';
import type { SubscriptionLookup } from './ports';

export interface SubscriptionSource {
  subscriptionsFor(event: WebhookEventName): Promise<SubscriptionDocument[]>;
  findSubscriptionsByIds(ids: readonly string[]): Promise<SubscriptionDocument[]>;
}

interface Held<T> {
  at: number;
  value: Promise<T>;
}

interface Waiter {
  resolve(found: SubscriptionDocument | null): void;
  reject(err: unknown): void;
}

/**
 * The worker needs a subscription for every event and every attempt; it holds them for a
 * moment (`ttlMs`, default 1 s), and the ids asked for within one turn of the event loop are
 * read together, in one query: a thousand attempts to a thousand subscriptions cost one read,
 * not a thousand. A change through the API reaches the worker within `ttlMs`; a 410 seen by
 * this worker applies at once.
 */
export class SubscriptionCache implements SubscriptionLookup {
  private readonly byEvent = new Map<string, Held<SubscriptionDocument[]>>();
  private readonly byId = new Map<string, Held<SubscriptionDocument | null>>();
  /** Ids asked for in this turn of the event loop, read together at its end. */
  private batch?: Map<string, Waiter[]>;

  constructor(
    private readonly source: SubscriptionSource,
    private readonly ttlMs: number,
    private readonly maxHeld = 10_000,
  ) {}

  subscriptionsFor(event: WebhookEventName): Promise<SubscriptionDocument[]> {
    return this.cached(this.byEvent, event, () => this.source.subscriptionsFor(event));
  }

  findById(id: string): Promise<SubscriptionDocument | null> {
    return this.cached(this.byId, id, () => this.load(id));
  }

  forget(): void {
    this.byEvent.clear();
    this.byId.clear();
  }

  private load(id: string): Promise<SubscriptionDocument | null> {
    let batch = this.batch;
    if (!batch) {
      const waiting = new Map<string, Waiter[]>();
      batch = waiting;
      this.batch = waiting;
      setImmediate(() => {
        this.batch = undefined;
        this.source.findSubscriptionsByIds([...waiting.keys()]).then(
          (found) => {
            const byId = new Map(found.map((s) => [s._id, s]));
            for (const [key, waiters] of waiting) for (const w of waiters) w.resolve(byId.get(key) ?? null);
          },
          (err: unknown) => {
            for (const waiters of waiting.values()) for (const w of waiters) w.reject(err);
          },
        );
      });
    }
    const waiters = batch.get(id) ?? [];
    batch.set(id, waiters);
    return new Promise((resolve, reject) => waiters.push({ resolve, reject }));
  }

  private cached<T>(map: Map<string, Held<T>>, key: string, load: () => Promise<T>): Promise<T> {
    const now = Date.now();
    const hit = map.get(key);
    if (hit && now - hit.at < this.ttlMs) return hit.value;
    const value = load();
    value.catch(() => map.delete(key));
    if (map.size > this.maxHeld) map.clear();
    map.set(key, { at: now, value });
    return value;
  }
}
