import Redis from 'ioredis';
import { deleteKeysMatching } from '@signal/service-kit';
import { infraUrls, uniqueName } from '@signal/test-kit';
import { EventLog } from '../src/data/event-log';

let redis: Redis;
let prefix: string;

beforeAll(() => {
  redis = new Redis(infraUrls().redisUrl);
  prefix = `${uniqueName('eventlog')}:`;
});
afterAll(async () => {
  await deleteKeysMatching(redis, `${prefix}*`);
  redis.disconnect();
});

const entry = (eventId: string) => ({
  event: 'signal.new' as const,
  eventId,
  type: 'new' as const,
  data: JSON.stringify({ id: eventId }),
});

describe('the live stream event log', () => {
  it('when an event is appended twice, then the log holds it once and the second append names the first entry', async () => {
    const log = new EventLog(redis, prefix, 60_000);
    const [first] = await log.append([entry('evt_twice')]);
    const [again] = await log.append([entry('evt_twice')]);
    expect(first).toMatchObject({ ok: true, added: true });
    expect(again).toMatchObject({ ok: true, added: false, id: first!.ok ? first!.id : '' });
    expect(await redis.xlen(log.key)).toBe(1);
  });

  it('when the release before (its untagged mark) appended an event, then this version does not append it again, and the release before sees what this version appends', async () => {
    const log = new EventLog(redis, prefix, 60_000);
    const before = await redis.xlen(log.key);
    // As release eb2b570 appends: XADD, then the mark named without the cluster tag.
    const oldId = await redis.xadd(
      log.key,
      '*',
      'event',
      'signal.new',
      'event_id',
      'evt_old',
      'type',
      'new',
      'data',
      '{}',
    );
    await redis.set(`${prefix}signal-events:seen:evt_old`, oldId!, 'EX', 60);
    const [replayed] = await log.append([entry('evt_old')]);
    expect(replayed).toMatchObject({ ok: true, added: false, id: oldId });
    // What this version appends, the release before finds under the mark it reads.
    const [fresh] = await log.append([entry('evt_new')]);
    expect(fresh).toMatchObject({ ok: true, added: true });
    expect(await redis.get(`${prefix}signal-events:seen:evt_new`)).toBe(fresh!.ok ? fresh!.id : 'missing');
    expect(await redis.xlen(log.key)).toBe(before + 2);
  });
});
