import Redis from 'ioredis';
import { infraUrls, silentLogger, uniqueName } from '@signal/test-kit';
import { RedisReadModel, RedisScript, deleteKeysMatching } from '../src';

/**
 * A read model shaped like the timeline index: a state hash `b` (id → version) that guards each
 * apply, and a set `all` the reads count. A write applies after its source write; a rebuild
 * clears the model and re-applies the whole source.
 */
const APPLY = new RedisScript(`
local p, id, ver = KEYS[1], ARGV[1], tonumber(ARGV[2])
local old = redis.call('HGET', p .. 'b', id)
if old and tonumber(old) >= ver then return 0 end
redis.call('ZADD', p .. 'all', ver, id)
redis.call('HSET', p .. 'b', id, ver)
return 1
`);

let redis: Redis;
let run: string;
const FILLER = 20_000;

beforeAll(async () => {
  redis = new Redis(infraUrls().redisUrl);
  run = uniqueName('readmodel');
  // Other keys on the node: a clear that scans in steps takes many steps, so writes land between them.
  const fill = redis.pipeline();
  for (let i = 0; i < FILLER; i++) fill.set(`${run}:filler:${i}`, '1', 'EX', 600);
  await fill.exec();
});
afterAll(async () => {
  await deleteKeysMatching(redis, `${run}:*`);
  redis.disconnect();
});

describe('RedisReadModel', () => {
  it('when writes apply while a rebuild clears the model, then the rebuilt model holds every source item', async () => {
    for (let round = 0; round < 5; round++) {
      const prefix = `${run}:m${round}:{model}:`;
      const model = new RedisReadModel(redis, prefix, 'epoch-1', silentLogger);
      const source = new Map<string, number>();
      const write = async (id: string) => {
        source.set(id, 1); // the source of truth first, then the model, as a service does
        await APPLY.run(redis, [prefix], [id, 1]);
      };
      for (let i = 0; i < 200; i++) await write(`seed-${i}`);
      let writing = true;
      const writer = (async () => {
        for (let i = 0; writing; i++) await write(`live-${i}`);
      })();
      await model.rebuild(
        async function* () {
          yield [...source.keys()];
        },
        async (ids) => {
          await APPLY.runMany(
            redis,
            ids.map((id) => ({ keys: [prefix], args: [id, source.get(id) ?? 0] })),
          );
        },
      );
      writing = false;
      await writer;
      expect(await model.isReady()).toBe(true);
      expect(await redis.zcard(`${prefix}all`)).toBe(source.size);
      expect(await redis.hlen(`${prefix}b`)).toBe(source.size);
      await model.clear();
      expect(await redis.exists(`${prefix}all`, `${prefix}b`, `${prefix}ready`)).toBe(0);
    }
  });

  it('when the prefix holds glob characters, then clearing deletes its keys and no other', async () => {
    const prefix = `${run}:[x]*?:{model}:`;
    const neighbour = `${run}:xa:{model}:all`;
    await redis.set(`${prefix}all`, '1');
    await redis.set(neighbour, '1');
    await new RedisReadModel(redis, prefix, 'epoch-1', silentLogger).clear();
    expect(await redis.exists(`${prefix}all`)).toBe(0);
    expect(await redis.exists(neighbour)).toBe(1);
  });
});
