import type { WebhookEventName } from '@signal/contracts';
import type { SubscriptionDocument } from './records';
import type { SubscriptionSource } from './ports';
import { SubscriptionCache } from './subscription-cache';

function subscription(id: string, url: string): SubscriptionDocument {
  return {
    _id: id,
    account_id: 'acc_1',
    url,
    events: ['signal.new'],
    types: null,
    description: null,
    status: 'enabled',
    disabled_reason: null,
    secrets: [{ secret: 'whsec_x', created_at: new Date('2026-01-01T00:00:00Z'), expires_at: null }],
    created_at: new Date('2026-01-01T00:00:00Z'),
    updated_at: new Date('2026-01-01T00:00:00Z'),
  };
}

/** A store whose results the test sets, and whose reads it can hold open. */
class ScriptedSource implements SubscriptionSource {
  reads = 0;
  current: SubscriptionDocument[] = [subscription('wh_1', 'https://a.example/hook')];
  private held?: () => void;
  holdNextRead = false;

  async subscriptionsFor(_event: WebhookEventName): Promise<SubscriptionDocument[]> {
    this.reads += 1;
    const result = this.current;
    if (this.holdNextRead) {
      this.holdNextRead = false;
      await new Promise<void>((resolve) => (this.held = resolve));
    }
    return result;
  }

  async findSubscriptionsByIds(ids: readonly string[]): Promise<SubscriptionDocument[]> {
    this.reads += 1;
    return this.current.filter((s) => ids.includes(s._id));
  }

  release(): void {
    this.held?.();
  }
}

const settle = () => new Promise((r) => setImmediate(r));
const urls = (list: SubscriptionDocument[]) => list.map((s) => s.url);

describe('SubscriptionCache', () => {
  let now = 1_000_000;
  let clock: jest.SpyInstance<number, []>;
  beforeEach(() => {
    now = 1_000_000;
    clock = jest.spyOn(Date, 'now').mockImplementation(() => now);
  });
  afterEach(() => clock.mockRestore());

  it('when a list is younger than half its ttl, then it is returned without a read', async () => {
    const source = new ScriptedSource();
    const cache = new SubscriptionCache(source, 1000);
    await cache.subscriptionsFor('signal.new');
    now += 400;
    await cache.subscriptionsFor('signal.new');
    await settle();
    expect(source.reads).toBe(1);
  });

  it('when a list is past half its ttl, then it is returned at once and renewed in the background', async () => {
    const source = new ScriptedSource();
    const cache = new SubscriptionCache(source, 1000);
    await cache.subscriptionsFor('signal.new');
    source.current = [subscription('wh_1', 'https://b.example/hook')];
    source.holdNextRead = true;
    now += 600;
    // The renewal is held open: the caller still gets the held list, without waiting.
    expect(urls(await cache.subscriptionsFor('signal.new'))).toEqual(['https://a.example/hook']);
    expect(source.reads).toBe(2);
    // One renewal at a time.
    await cache.subscriptionsFor('signal.new');
    expect(source.reads).toBe(2);
    source.release();
    await settle();
    expect(urls(await cache.subscriptionsFor('signal.new'))).toEqual(['https://b.example/hook']);
  });

  it('when a list is older than its ttl, then the caller waits for a fresh read', async () => {
    const source = new ScriptedSource();
    const cache = new SubscriptionCache(source, 1000);
    await cache.subscriptionsFor('signal.new');
    source.current = [subscription('wh_1', 'https://b.example/hook')];
    now += 1000;
    expect(urls(await cache.subscriptionsFor('signal.new'))).toEqual(['https://b.example/hook']);
    expect(source.reads).toBe(2);
  });

  it('when a renewed list is dated, then it is dated when its read began, so a change is seen within the ttl', async () => {
    const source = new ScriptedSource();
    const cache = new SubscriptionCache(source, 1000);
    await cache.subscriptionsFor('signal.new');
    now += 600;
    source.holdNextRead = true;
    await cache.subscriptionsFor('signal.new'); // renewal begins at 600
    now += 300; // the read takes 300 ms
    source.release();
    await settle();
    source.current = [subscription('wh_1', 'https://c.example/hook')];
    now += 700; // 1,000 ms after the renewal began: no longer fresh
    expect(urls(await cache.subscriptionsFor('signal.new'))).toEqual(['https://c.example/hook']);
  });

  it('when the cache is told to forget during a renewal, then the renewal does not bring the old list back', async () => {
    const source = new ScriptedSource();
    const cache = new SubscriptionCache(source, 1000);
    await cache.subscriptionsFor('signal.new');
    now += 600;
    source.holdNextRead = true;
    await cache.subscriptionsFor('signal.new'); // renewal reads the old list, held open
    source.current = [];
    cache.forget();
    source.release();
    await settle();
    expect(await cache.subscriptionsFor('signal.new')).toEqual([]);
  });
});

describe('SubscriptionCache.findAtLeast', () => {
  it('when the held copy is at least the asked version, then it is returned without a read', async () => {
    const source = new ScriptedSource();
    const cache = new SubscriptionCache(source, 60_000);
    await cache.findById('wh_1');
    const reads = source.reads;
    const found = await cache.findAtLeast('wh_1', Date.parse('2026-01-01T00:00:00Z'));
    expect(found?.url).toBe('https://a.example/hook');
    expect(source.reads).toBe(reads);
  });

  it('when the held copy is older than the asked version, then the store is read again and the newer copy is held for the next callers', async () => {
    const source = new ScriptedSource();
    const cache = new SubscriptionCache(source, 60_000);
    await cache.subscriptionsFor('signal.new');
    await cache.findById('wh_1');
    const changed = {
      ...subscription('wh_1', 'https://b.example/hook'),
      updated_at: new Date('2026-02-01T00:00:00Z'),
    };
    source.current = [changed];

    const found = await cache.findAtLeast('wh_1', changed.updated_at.getTime());
    expect(found?.url).toBe('https://b.example/hook');
    // The event's list held from before the change is dropped too.
    expect(urls(await cache.subscriptionsFor('signal.new'))).toEqual(['https://b.example/hook']);
    const reads = source.reads;
    expect((await cache.findAtLeast('wh_1', changed.updated_at.getTime()))?.url).toBe(
      'https://b.example/hook',
    );
    expect(source.reads).toBe(reads);
  });

  it('when the subscription is gone from the store, then null after one fresh read', async () => {
    const source = new ScriptedSource();
    const cache = new SubscriptionCache(source, 60_000);
    await cache.findById('wh_1');
    source.current = [];
    expect(await cache.findAtLeast('wh_1', Date.parse('2026-03-01T00:00:00Z'))).toBeNull();
  });
});
