import { createSignalInputSchema } from '@signal/contracts';
import { connectRedis, valueOrThrow, type RedisClient } from '@signal/service-kit';
import { infraUrls, silentLogger, uniqueName } from '@signal/test-kit';
import { TimelineIndex } from '../src/data/timeline-index';
import { toSnapshot } from '../src/domain/signal.mapper';
import { newSignalDocument } from '../src/domain/create-signal.use-case';
import { signalInput } from './signals-harness';

/**
 * A timeline index left in Redis by another database (another deployment on the same Redis
 * and prefix, or a database that was wiped) must never serve reads for this one.
 */
let redis: RedisClient;
const prefix = `${uniqueName('epoch')}:`;
beforeAll(async () => {
  redis = await connectRedis(infraUrls().redisUrl, silentLogger);
});
afterAll(async () => {
  await new TimelineIndex(redis, prefix, 'cleanup', silentLogger).model.clear();
  redis.disconnect();
});

async function* batches<T>(items: T[]): AsyncGenerator<T[]> {
  if (items.length) yield items;
}

describe('the timeline index and its source database', () => {
  it('when the index in Redis was built from another database, then it is not used, and the rebuild starts from empty', async () => {
    const other = new TimelineIndex(redis, prefix, 'database-a', silentLogger);
    const stale = [1, 2, 3].map(() =>
      toSnapshot(valueOrThrow(newSignalDocument(createSignalInputSchema.parse(signalInput()), undefined))),
    );
    await other.model.rebuild(
      () => batches(stale),
      (b) => other.apply(b),
    );
    expect((await other.page({ limit: 10, start: 0 }))?.total).toBe(3);

    const mine = new TimelineIndex(redis, prefix, 'database-b', silentLogger);
    expect(await mine.model.isReady()).toBe(false);
    expect(await mine.page({ limit: 10, start: 0 })).toBeUndefined();
    expect(await mine.get(stale[0]!.id)).toBeUndefined();

    const own = [
      toSnapshot(valueOrThrow(newSignalDocument(createSignalInputSchema.parse(signalInput()), undefined))),
    ];
    expect(
      await mine.model.rebuild(
        () => batches(own),
        (b) => mine.apply(b),
      ),
    ).toBe(true);
    const page = await mine.page({ limit: 10, start: 0 });
    expect(page?.total).toBe(1);
    expect(page?.rows.map((r) => r.id)).toEqual([own[0]!.id]);
    expect(await mine.get(stale[0]!.id)).toBe('missing');
  });
});
