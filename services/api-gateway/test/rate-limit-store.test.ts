import { randomBytes } from 'node:crypto';
import { clusterOf, connectRedis, deleteKeysMatching, type RedisClient } from '@signal/service-kit';
import { infraUrls, silentLogger } from '@signal/test-kit';
import { RateLimitStore } from '../src/edge/data/rate-limit.store';
import type { KeyDecision } from '../src/edge/domain/rate-limit';

/**
 * The shared limiter decides the checks of one account that arrive in one iteration of the
 * event loop in one script call. These tests hold it to what one call per check would decide:
 * exact counts, each check seeing the counts of those before it, revocation per key, accounts
 * apart.
 */
let redis: RedisClient;
let store: RateLimitStore;
const prefix = `t:rls:${randomBytes(4).toString('hex')}:`;
const NOW = Date.UTC(2026, 10, 23, 12, 30, 15);

beforeAll(async () => {
  redis = await connectRedis(infraUrls().redisUrl, silentLogger, 3000);
  store = new RateLimitStore(redis, prefix);
});
afterAll(async () => {
  await deleteKeysMatching(redis, `${prefix}*`);
  redis.disconnect();
});

const used = (d: KeyDecision) => (d.outcome === 'revoked' ? -1 : d.minute.used);

describe('the shared limiter, many checks in one batch', () => {
  it('when 1,200 checks of one key arrive together on a 1,000/min plan, then exactly 1,000 are allowed, counted 1 to 1,000 in order', async () => {
    const subject = { subject: 'acc_burst', perMinute: 1000, perDay: 100_000 };
    const decisions = await Promise.all(
      Array.from({ length: 1200 }, () => store.checkKey(subject, 'key_burst', NOW)),
    );
    const allowed = decisions.filter((d) => d.outcome === 'allowed');
    expect(allowed).toHaveLength(1000);
    // Arrival order is decision order: the first 1,000 got in, the rest were refused at 1,000.
    expect(decisions.slice(0, 1000).map(used)).toEqual(Array.from({ length: 1000 }, (_, i) => i + 1));
    expect(decisions.slice(1000).every((d) => d.outcome === 'limited' && d.minute.used === 1000)).toBe(true);
    const next = await store.checkKey(subject, 'key_burst', NOW);
    expect(next).toMatchObject({
      outcome: 'limited',
      minute: { used: 1000, limit: 1000 },
      day: { used: 1000 },
    });
  });

  it('when a revoked key, a live key of the same account and another account arrive together, then each gets its own decision', async () => {
    await store.markRevoked('acc_mixed', 'key_gone');
    const mixed = { subject: 'acc_mixed', perMinute: 3, perDay: 100 };
    const other = { subject: 'acc_other', perMinute: 2, perDay: 100 };
    const decisions = await Promise.all([
      store.checkKey(mixed, 'key_live', NOW),
      store.checkKey(mixed, 'key_gone', NOW),
      store.checkKey(other, 'key_o', NOW),
      store.checkKey(mixed, 'key_live', NOW),
      store.checkKey(mixed, 'key_gone', NOW),
      store.checkKey(other, 'key_o', NOW),
      store.checkKey(other, 'key_o', NOW),
      store.checkKey(mixed, 'key_live', NOW),
      store.checkKey(mixed, 'key_live', NOW),
    ]);
    expect(decisions.map((d) => [d.outcome, used(d)])).toEqual([
      ['allowed', 1],
      ['revoked', -1],
      ['allowed', 1],
      ['allowed', 2],
      ['revoked', -1],
      ['allowed', 2],
      ['limited', 2],
      ['allowed', 3],
      ['limited', 3],
    ]);
  });

  it('when Redis has forgotten the script and checks of three accounts arrive together, then their pipelined calls load it again and each is decided', async () => {
    await redis.script('FLUSH');
    const subjects = ['acc_p1', 'acc_p2', 'acc_p3'].map((subject) => ({ subject, perMinute: 1, perDay: 10 }));
    const decisions = await Promise.all(
      subjects.flatMap((s) => [
        store.checkKey(s, `${s.subject}_key`, NOW),
        store.checkKey(s, `${s.subject}_key`, NOW),
      ]),
    );
    expect(decisions.map((d) => [d.outcome, used(d)])).toEqual([
      ['allowed', 1],
      ['limited', 1],
      ['allowed', 1],
      ['limited', 1],
      ['allowed', 1],
      ['limited', 1],
    ]);
  });

  it('when the account has a plan in Redis, then it overrides the plan the check carries, for the whole batch', async () => {
    await store.setPlan('acc_plan', 2, 100);
    const decisions = await Promise.all(
      Array.from({ length: 4 }, () =>
        store.checkKey({ subject: 'acc_plan', perMinute: 60, perDay: 100 }, 'k', NOW),
      ),
    );
    expect(decisions.map((d) => d.outcome)).toEqual(['allowed', 'allowed', 'limited', 'limited']);
    expect(decisions[0]).toMatchObject({ minute: { limit: 2 }, day: { limit: 100 } });
  });

  it('when checks of one account fall in two minute windows, then each window counts its own and both expire', async () => {
    const subject = { subject: 'acc_windows', perMinute: 5, perDay: 100 };
    const [a, b] = await Promise.all([
      store.checkKey(subject, 'k', NOW),
      store.checkKey(subject, 'k', NOW + 60_000),
    ]);
    expect([used(a!), used(b!)]).toEqual([1, 1]);
    expect(b).toMatchObject({ day: { used: 2 } });
    // Every master's (on a Redis Cluster, KEYS answers for one node).
    const servers = clusterOf(redis)?.nodes('master') ?? [redis];
    const keys = (await Promise.all(servers.map((s) => s.keys(`${prefix}{acc_windows}:*`)))).flat();
    expect(keys).toHaveLength(3);
    for (const key of keys) expect(await redis.pttl(key)).toBeGreaterThan(0);
  });

  it('when subjects without a key (the per-IP guard) arrive together, then they are counted and never revoked', async () => {
    const ip = { subject: 'ip:192.0.2.7', perMinute: 2, perDay: 100 };
    const decisions = await Promise.all([store.count(ip, NOW), store.count(ip, NOW), store.count(ip, NOW)]);
    expect(decisions.map((d) => [d.outcome, d.minute.used])).toEqual([
      ['allowed', 1],
      ['allowed', 2],
      ['limited', 2],
    ]);
  });
});
