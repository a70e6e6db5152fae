import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import {
  clusterOf,
  connectRedis,
  deleteKeysMatching,
  isRedisUnavailable,
  keySlot,
  pipelineEach,
  RedisScript,
  type RedisClient,
} from '@signal/service-kit';
import { silentLogger, waitFor } from '@signal/test-kit';
import { RateLimitStore } from '../../services/api-gateway/src/edge/data/rate-limit.store';
import { StreamSlotStore } from '../../services/api-gateway/src/stream/data/stream-slots.store';
import { UsageStore } from '../../services/api-gateway/src/edge/data/usage.store';
import { LoginAttemptStore } from '../../services/api-gateway/src/sessions/data/login-attempts.store';
import { SessionRevocationStore } from '../../services/api-gateway/src/sessions/data/session-revocations.store';
import { RedisCredentialChanges } from '../../services/api-gateway/src/stream/data/credential-changes';
import type { Session } from '../../services/api-gateway/src/sessions/domain/sessions';
import { EventLog } from '../../services/signals/src/data/event-log';
import type { LogEntry } from '../../services/signals/src/domain/live-stream';
import { StatsCache } from '../../services/stats/src/data/stats-cache';

/**
 * The Redis stores on a real Redis Cluster (infra/local/cluster.sh: three masters, a replica
 * each). A multi-key command, script or pipeline whose keys leave one slot (one node for a
 * pipeline) fails here with CROSSSLOT or "All keys in the pipeline should belong to the same
 * slots allocation group": each case below runs one across many accounts, so their keys land on
 * every master.
 */
const prefix = `t:cl:${randomBytes(4).toString('hex')}:`;
let redis: RedisClient;
let cluster: NonNullable<ReturnType<typeof clusterOf>>;
const NOW = Date.UTC(2026, 10, 25, 12, 0, 0);
/** Enough accounts that their hash tags cover all three masters. */
const accounts = Array.from({ length: 40 }, (_, i) => `acc_${i}`);

beforeAll(async () => {
  redis = await connectRedis(process.env.REDIS_URL ?? '', silentLogger, 10_000);
  const asCluster = clusterOf(redis);
  if (!asCluster) throw new Error('REDIS_URL must name the cluster (infra/local/cluster.sh up)');
  cluster = asCluster;
});
afterAll(async () => {
  await deleteKeysMatching(redis, `${prefix}*`);
  redis.disconnect();
});

/** The masters that serve these keys, as the cluster says now. */
const mastersOf = (keys: string[]) => new Set(keys.map((k) => cluster.slots[keySlot(k)]?.[0]));

describe('a Redis Cluster behind REDIS_URL', () => {
  it('when the URL is redis-cluster://, then the services get a ready Cluster of three masters', async () => {
    expect(cluster.status).toBe('ready');
    expect(cluster.nodes('master')).toHaveLength(3);
    expect(mastersOf(accounts.map((a) => `${prefix}{${a}}`)).size).toBe(3);
  });

  it('when one pipeline carries keys of every master, then pipelineEach splits it by node and returns each reply in order', async () => {
    const keys = accounts.map((a) => `${prefix}{${a}}:p`);
    await expect(
      (async () => {
        const p = cluster.pipeline();
        for (const k of keys) p.set(k, 'x');
        return p.exec();
      })(),
    ).rejects.toThrow(/same slots allocation group/);
    const replies = await pipelineEach(
      redis,
      keys,
      (k) => k,
      (p, k) => p.set(k, k).get(k),
    );
    expect(replies.map((r) => r.map(([err, value]) => [err, value]))).toEqual(
      keys.map((k) => [
        [null, 'OK'],
        [null, k],
      ]),
    );
  });

  it('when the masters forgot a script and calls for every master arrive together, then each master loads it and each call runs once', async () => {
    const script = new RedisScript(`return redis.call('INCR', KEYS[1])`);
    await Promise.all(cluster.nodes('master').map((m) => m.script('FLUSH')));
    const calls = accounts.map((a) => ({ keys: [`${prefix}{${a}}:n`], args: [] }));
    expect(await script.runMany(redis, calls)).toEqual(accounts.map(() => 1));
    expect(await script.runMany(redis, calls)).toEqual(accounts.map(() => 2));
  });

  it('when keys of one prefix sit on every master, then deleteKeysMatching removes them from each', async () => {
    const own = `${prefix}del:`;
    const keys = accounts.map((a) => `${own}{${a}}`);
    await pipelineEach(
      redis,
      keys,
      (k) => k,
      (p, k) => p.set(k, '1'),
    );
    expect(mastersOf(keys).size).toBe(3);
    await deleteKeysMatching(redis, `${own}*`);
    const left = await Promise.all(keys.map((k) => redis.exists(k)));
    expect(left.reduce((a, b) => a + b, 0)).toBe(0);
  });
});

describe('the gateway stores on a Redis Cluster', () => {
  it('when checks of many accounts arrive in one event-loop turn, then each account is counted in its own slot', async () => {
    const limiter = new RateLimitStore(redis, `${prefix}rl:`);
    const decisions = await Promise.all(
      accounts.flatMap((a) =>
        [1, 2, 3].map(() => limiter.checkKey({ subject: a, perMinute: 2, perDay: 100 }, `key_${a}`, NOW)),
      ),
    );
    expect(decisions.map((d) => d.outcome)).toEqual(
      accounts.flatMap(() => ['allowed', 'allowed', 'limited']),
    );
    await limiter.markRevoked('acc_7', 'key_acc_7');
    const states = await limiter.statesAmong(accounts.map((a) => ({ accountId: a, keyId: `key_${a}` })));
    expect(states.map((s) => s.revoked)).toEqual(accounts.map((a) => a === 'acc_7'));
  });

  it('when streams of many accounts are taken and renewed together, then each account keeps its slot count', async () => {
    const slots = new StreamSlotStore(redis, `${prefix}ss:`);
    for (const a of accounts) expect(await slots.acquire(a, `st_${a}`, 1, NOW)).toEqual({ ok: true });
    await slots.renew(
      accounts.map((a) => ({ accountId: a, streamId: `st_${a}` })),
      NOW + 1000,
    );
    expect(await slots.acquire('acc_3', 'st_other', 1, NOW + 2000)).toEqual({ ok: false, open: 1 });
  });

  it('when usage of many accounts is flushed in one write, then every account reads its own counts back', async () => {
    const usage = new UsageStore(redis, `${prefix}us:`, silentLogger, 60_000);
    for (const a of accounts) {
      usage.count(a, `key_${a}`, 'served', NOW);
      usage.count(a, `key_${a}`, 'served', NOW);
    }
    await usage.flush();
    for (const a of ['acc_0', 'acc_13', 'acc_39']) {
      const series = await usage.series(a, `key_${a}`, NOW);
      expect(series.minutes.at(-1)?.served).toBe(2);
      expect(series.days.at(-1)?.served).toBe(2);
    }
  });

  it('when a session is checked, then its own revocation and its account-wide one are both read', async () => {
    const sessions = new SessionRevocationStore(redis, `${prefix}se:`);
    const session: Session = {
      kind: 'cookie',
      sessionId: 'ses_1',
      accountId: 'acc_1',
      issuedAt: NOW - 10_000,
      expiresAt: NOW + 60_000,
    };
    expect(await sessions.isRevoked(session, NOW)).toBe(false);
    await sessions.revokeAllBefore('acc_1', NOW - 5_000, 60);
    expect(await sessions.isRevoked(session, NOW)).toBe(true);
    const other: Session = { ...session, sessionId: 'ses_2', accountId: 'acc_2' };
    await sessions.revoke(other, 60);
    expect(await sessions.isRevoked(other, NOW)).toBe(true);
  });

  it('when sessions end and keys are revoked for accounts on every master, then a listener on its own connection hears each account', async () => {
    const heard: Array<string | undefined> = [];
    const changes = new RedisCredentialChanges(redis, `${prefix}cc:`);
    const listening = await changes.listen((accountId) => heard.push(accountId));
    try {
      const sessions = new SessionRevocationStore(redis, `${prefix}cc:`, changes);
      const limiter = new RateLimitStore(redis, `${prefix}cc:`, changes);
      const some = accounts.slice(0, 12);
      for (const a of some) {
        await sessions.revoke({ accountId: a, sessionId: `ses_${a}` }, 60);
        await limiter.markRevoked(a, `key_${a}`);
      }
      const expected = some.flatMap((a) => [a, a]);
      await waitFor(() => heard.length >= expected.length, 10_000, 10, 'every announcement heard');
      // Published through whichever node the client picks: the order between nodes is the bus's.
      expect([...heard].sort()).toEqual([...expected].sort());
    } finally {
      await listening.close();
    }
  });

  it('when login attempts of many subjects are reserved, then each is throttled on its own', async () => {
    const attempts = new LoginAttemptStore(redis, `${prefix}la:`);
    const policy = { free: 1, maxWaitMs: 60_000, memoryMs: 60_000 };
    for (const a of accounts.slice(0, 6)) {
      expect(await attempts.reserve({ key: `email:${a}`, policy }, NOW, true)).toMatchObject({ ok: true });
      expect(await attempts.reserve({ key: `email:${a}`, policy }, NOW, true)).toMatchObject({ ok: true });
      expect(await attempts.reserve({ key: `email:${a}`, policy }, NOW, true)).toMatchObject({ ok: false });
    }
  });
});

describe('the signals and stats stores on a Redis Cluster', () => {
  it('when events are appended twice in one write, then the log and its marks share a slot and each event is added once', async () => {
    const log = new EventLog(redis, `${prefix}sg:`, 3_600_000);
    const entries = Array.from({ length: 20 }, (_, i): Omit<LogEntry, 'id'> => ({
      eventId: `evt_${i}`,
      event: 'signal.new',
      type: 'wallet',
      data: `{"n":${i}}`,
    }));
    const first = await log.append(entries);
    const again = await log.append(entries);
    expect(first.map((o) => o.ok && o.added)).toEqual(entries.map(() => true));
    expect(again.map((o) => o.ok && o.added)).toEqual(entries.map(() => false));
    expect(await log.after('0-0', 100)).toHaveLength(20);
  });

  it('when a cached statistics response is read, then the generation and the entry come in one MGET', async () => {
    const cache = new StatsCache(redis, `${prefix}st:`, 60_000, 0);
    expect(await cache.get('wallet:7d')).toEqual({ gen: 0 });
    await cache.invalidate();
    expect((await cache.get('wallet:7d')).gen).toBe(1);
  });
});

describe('a Redis master killed under the limiter', () => {
  const script = path.join(__dirname, '..', '..', 'infra', 'local', 'cluster.sh');
  let killed = '';
  afterAll(() => {
    if (killed) execFileSync(script, ['start-redis', killed]);
  });

  it('when the master of slot 0 is killed, then its replica takes over and the same client decides again, failing only as unavailable meanwhile', async () => {
    const limiter = new RateLimitStore(redis, `${prefix}fo:`);
    // An account whose keys live in slot 0's master, the one the script kills.
    const victim = cluster.slots[0]?.[0];
    const account = accounts.find((a) => cluster.slots[keySlot(`{${a}}`)]?.[0] === victim) ?? '';
    expect(account).not.toBe('');
    const subject = { subject: account, perMinute: 1000, perDay: 100_000 };
    await limiter.checkKey(subject, 'key_fo');
    killed = execFileSync(script, ['kill-redis-master']).toString().trim();
    const failures: unknown[] = [];
    let decided = false;
    for (let i = 0; i < 600 && !decided; i++) {
      try {
        decided = (await limiter.checkKey(subject, 'key_fo')).outcome === 'allowed';
      } catch (err) {
        failures.push(err);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
    expect(decided).toBe(true);
    // Meanwhile only "unreachable" errors: what the gateway maps to its local limiter or a 503.
    expect(failures.filter((err) => !isRedisUnavailable(err)).map(String)).toEqual([]);
    expect(cluster.slots[0]?.[0]).not.toBe(victim);
  });
});
