import { isWebhookEventName, type WebhookEventName } from '@signal/contracts';
import type { SubscriptionDocument } from './records';
import type { SubscriptionLookup, SubscriptionSource } from './ports';

interface Held<T> {
  at: number;
  value: Promise<T>;
  /** Still being read: every caller shares the one read, whatever the ttl. */
  loading: boolean;
  /** A background read is under way to replace it. */
  renewing: boolean;
}

interface EventSubscriptions {
  list: SubscriptionDocument[];
  byId: Map<string, SubscriptionDocument>;
}

interface Waiter {
  resolve(found: SubscriptionDocument | null): void;
  reject(err: unknown): void;
}

/**
 * The worker needs a subscription for every event and every attempt; it holds them for a
 * moment (`ttlMs`, default 1 s), and the ids asked for within one iteration of the event loop
 * are read together, in one query: a thousand attempts to a thousand subscriptions cost one
 * read, not a thousand. A change through the API reaches the worker within `ttlMs`; a 410 seen by
 * this worker applies at once.
 */
export class SubscriptionCache implements SubscriptionLookup {
  private readonly byEvent = new Map<string, Held<EventSubscriptions>>();
  private readonly byId = new Map<string, Held<SubscriptionDocument | null>>();
  /** Ids asked for in this iteration of the event loop, read together at its end. */
  private batch?: Map<string, Waiter[]>;

  constructor(
    private readonly source: SubscriptionSource,
    private readonly ttlMs: number,
    private readonly maxHeld = 10_000,
  ) {}

  async subscriptionsFor(event: WebhookEventName): Promise<SubscriptionDocument[]> {
    return (await this.forEvent(event)).list;
  }

  findById(id: string): Promise<SubscriptionDocument | null> {
    return this.cached(this.byId, id, () => this.load(id));
  }

  /**
   * The subscription of an attempt of `event`: from the event's list (one read serves every
   * subscription of a fan-out, a thousand of them as well as one), else by id (test events, a
   * subscription whose events changed since).
   */
  async findForEvent(event: string, id: string): Promise<SubscriptionDocument | null> {
    if (isWebhookEventName(event)) {
      const found = (await this.forEvent(event)).byId.get(id);
      if (found) return found;
    }
    return this.findById(id);
  }

  async findAtLeast(id: string, version: number): Promise<SubscriptionDocument | null> {
    const held = await this.findById(id);
    if (held && new Date(held.updated_at).getTime() >= version) return held;
    // Older than the job (or not found): everything held may predate that change. Dropped once;
    // the copies read next are at least that new, so the jobs behind this one hit them.
    this.forget();
    return this.findById(id);
  }

  private forEvent(event: WebhookEventName): Promise<EventSubscriptions> {
    return this.cached(this.byEvent, event, async () => {
      const list = await this.source.subscriptionsFor(event);
      return { list, byId: new Map(list.map((s) => [s._id, s])) };
    });
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

  /**
   * A held value younger than `ttlMs` is returned at once; past half its ttl, one read in the
   * background renews it, so a worker under steady traffic never waits for the store. The
   * renewed entry is dated when its read began, so "a change reaches the worker within `ttlMs`"
   * still holds.
   */
  private cached<T>(map: Map<string, Held<T>>, key: string, load: () => Promise<T>): Promise<T> {
    const now = Date.now();
    const hit = map.get(key);
    if (hit && (hit.loading || now - hit.at < this.ttlMs)) {
      if (!hit.loading && !hit.renewing && now - hit.at >= this.ttlMs / 2) this.renew(map, key, hit, load);
      return hit.value;
    }
    const held: Held<T> = { at: now, value: load(), loading: true, renewing: false };
    held.value.then(
      () => {
        held.loading = false;
      },
      () => {
        if (map.get(key) === held) map.delete(key);
      },
    );
    if (map.size > this.maxHeld) map.clear();
    map.set(key, held);
    return held.value;
  }

  private renew<T>(map: Map<string, Held<T>>, key: string, hit: Held<T>, load: () => Promise<T>): void {
    hit.renewing = true;
    const at = Date.now();
    load().then(
      (value) => {
        // Not after `forget` (a 410 applies at once) or a newer read.
        if (map.get(key) === hit)
          map.set(key, { at, value: Promise.resolve(value), loading: false, renewing: false });
      },
      () => {
        hit.renewing = false;
      },
    );
  }
}
