import { randomBytes } from 'node:crypto';
import { createServer, type Server, type Socket } from 'node:net';
import { connectRedis, RedisScript } from '@signal/service-kit';
import { infraUrls, silentLogger, startTcpProxy, viaProxy, waitFor, type TcpProxy } from '@signal/test-kit';
import type Redis from 'ioredis';
import { ScriptConnection, leanTarget } from '../src/data/script-connection';

/**
 * The rate limiter's own Redis connection (data/script-connection.ts) against the real Redis:
 * what it reads is what ioredis reads, and it fails and comes back as the shared client does.
 */
const run = randomBytes(4).toString('hex');
const prefix = `t:lean:${run}:`;
let redis: Redis;
const opened: ScriptConnection[] = [];
const proxies: TcpProxy[] = [];
const servers: Server[] = [];

/** A script no Redis has seen yet (its text, so its SHA, is new to this run). */
const freshScript = (lua: string) => new RedisScript(`-- ${run} ${randomBytes(4).toString('hex')}\n${lua}`);

function leanConnection(
  url: string,
  { replyTimeoutMs = 1000, retryStepMs = 50, failures = [] as Error[] } = {},
): ScriptConnection {
  const target = leanTarget(url);
  if (!target) throw new Error(`the lean connection does not take ${url}`);
  const connection = new ScriptConnection(target, {
    replyTimeoutMs,
    retryStepMs,
    onFailure: (err) => failures.push(err),
  });
  opened.push(connection);
  return connection;
}

beforeAll(async () => {
  redis = await connectRedis(infraUrls().redisUrl, silentLogger, 3000);
});
afterEach(async () => {
  for (const connection of opened.splice(0)) connection.close();
  await Promise.all(proxies.splice(0).map((p) => p.close()));
  for (const server of servers.splice(0)) server.close();
});
afterAll(async () => {
  const keys = await redis.keys(`${prefix}*`);
  if (keys.length > 0) await redis.del(...keys);
  redis.disconnect();
});

describe('the limiter connection, on the real Redis', () => {
  it('when a script answers with every reply type, then the lean connection reads what ioredis reads', async () => {
    const script = freshScript(
      `redis.call('SET', KEYS[1], ARGV[1])
       return {ARGV[1], tonumber(ARGV[2]), {1, 'x', {}}, redis.call('GET', KEYS[1]), false, redis.status_reply('FINE')}`,
    );
    const args = ['välue', 7];
    const keys = [`${prefix}types`];
    const lean = await leanConnection(infraUrls().redisUrl).run(script, keys, args);
    expect(lean).toEqual(await script.run(redis, keys, args));
    expect(lean).toEqual(['välue', 7, [1, 'x', []], 'välue', null, 'FINE']);
  });

  it('when Redis has never seen the script, then the call runs it by its text and Redis knows it afterwards', async () => {
    const script = freshScript('return tonumber(ARGV[1]) + 1');
    expect(await redis.script('EXISTS', script.sha)).toEqual([0]);
    expect(await leanConnection(infraUrls().redisUrl).run(script, [], [41])).toBe(42);
    expect(await redis.script('EXISTS', script.sha)).toEqual([1]);
  });

  it('when several calls go out in one write, then each gets its own outcome and an error reply fails only its own', async () => {
    const script = freshScript(
      "if ARGV[1] == 'bad' then return redis.error_reply('BAD input') end return tonumber(ARGV[1]) * 2",
    );
    const connection = leanConnection(infraUrls().redisUrl);
    const outcomes = await connection.runEach(script, [
      { keys: [], args: [1] },
      { keys: [], args: ['bad'] },
      { keys: [], args: [3] },
    ]);
    expect(outcomes[0]).toEqual({ ok: true, value: 2 });
    expect(outcomes[1]).toMatchObject({ ok: false, error: { message: 'BAD input' } });
    expect(outcomes[2]).toEqual({ ok: true, value: 6 });
    // The connection reads on after the error reply.
    expect(await connection.run(script, [], [5])).toBe(10);
  });

  it('when the URL names a database, then the script runs in that one', async () => {
    const url = new URL(infraUrls().redisUrl);
    url.pathname = '/5';
    const key = `${prefix}db5`;
    const script = freshScript("redis.call('SET', KEYS[1], 'here') return 1");
    await leanConnection(url.toString()).run(script, [key], []);
    const db5 = await connectRedis(url.toString(), silentLogger, 3000);
    try {
      expect(await db5.get(key)).toBe('here');
      expect(await redis.get(key)).toBeNull();
      await db5.del(key);
    } finally {
      db5.disconnect();
    }
  });

  it('when Redis refuses the password, then calls fail with its reason and no message holds the secret', async () => {
    const url = new URL(infraUrls().redisUrl);
    url.username = '';
    url.password = 'not-the-password-4711';
    const failures: Error[] = [];
    const connection = leanConnection(url.toString(), { failures });
    const refused = await connection.run(freshScript('return 1'), [], []).then(
      () => undefined,
      (err: Error) => err,
    );
    expect(refused?.message).toMatch(/^Redis refused the limiter connection: /);
    expect(failures).toHaveLength(1);
    for (const err of [refused!, ...failures]) expect(err.message).not.toContain('not-the-password-4711');
  });

  it('when the connection is cut with a call waiting, then that call fails, calls fail at once while Redis is away, and the next call once it is back is answered', async () => {
    const target = new URL(infraUrls().redisUrl);
    const proxy = await startTcpProxy(target.hostname, Number(target.port || 6379));
    proxies.push(proxy);
    const failures: Error[] = [];
    // A pause after a failure long enough that the call right after the cut falls in it.
    const connection = leanConnection(viaProxy(infraUrls().redisUrl, proxy), { retryStepMs: 500, failures });
    const script = freshScript('return 1');
    expect(await connection.run(script, [], [])).toBe(1);

    const waiting = connection.run(script, [], []);
    proxy.cut();
    await expect(waiting).rejects.toThrow();
    // Within the pause after a failure no connection is tried: the call fails without waiting.
    await expect(connection.run(script, [], [])).rejects.toThrow(/unreachable/);
    // After it, a try while the proxy still refuses fails too.
    await waitFor(
      () =>
        connection.run(script, [], []).then(
          () => false,
          (err: Error) => !/unreachable/.test(err.message),
        ),
      5000,
      20,
      'a refused connection attempt',
    );

    proxy.restore();
    expect(await waitFor(() => connection.run(script, [], []), 5000, 20, 'the call answered again')).toBe(1);
    expect(failures.length).toBeGreaterThanOrEqual(2);
  });

  it('when Redis accepts but never answers, then the call fails after the reply timeout and the next call opens a new connection', async () => {
    const accepted: Socket[] = [];
    const closed: Socket[] = [];
    const silent = createServer((socket) => {
      accepted.push(socket);
      socket.on('close', () => closed.push(socket));
      socket.resume();
    });
    servers.push(silent);
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const address = silent.address();
    if (address === null || typeof address === 'string') throw new Error('no port');
    const connection = leanConnection(`redis://127.0.0.1:${address.port}`, { replyTimeoutMs: 200 });

    const started = Date.now();
    await expect(connection.run(freshScript('return 1'), [], [])).rejects.toThrow(
      'Redis did not answer the limiter within 200 ms',
    );
    expect(Date.now() - started).toBeGreaterThanOrEqual(190);
    await waitFor(() => closed.length === 1, 2000, 10, 'the stalled connection closed');

    await waitFor(
      () =>
        connection.run(freshScript('return 1'), [], []).then(
          () => false,
          (err: Error) => /within 200 ms/.test(err.message),
        ),
      5000,
      20,
      'a second stalled call',
    );
    expect(accepted).toHaveLength(2);
  });

  it('when the connection is closed, then calls fail at once', async () => {
    const connection = leanConnection(infraUrls().redisUrl);
    expect(await connection.run(freshScript('return 1'), [], [])).toBe(1);
    connection.close();
    await expect(connection.run(freshScript('return 1'), [], [])).rejects.toThrow(
      'the limiter connection is closed',
    );
  });
});

describe('which REDIS_URL the lean connection takes', () => {
  it('when the URL is plain redis:, then host, port, user, password and database come from it', () => {
    expect(leanTarget('redis://app:p%40ss@cache.internal:6380/2')).toEqual({
      host: 'cache.internal',
      port: 6380,
      username: 'app',
      password: 'p@ss',
      db: 2,
    });
    expect(leanTarget('redis://[::1]')).toEqual({
      host: '::1',
      port: 6379,
      username: undefined,
      password: undefined,
      db: 0,
    });
  });

  it('when the URL is TLS, Sentinel, carries options or is not a URL, then it is left to ioredis', () => {
    for (const url of [
      'rediss://cache.internal:6380',
      'redis-sentinel://s1:26379,s2:26379/main',
      'redis://cache.internal:6379?family=6',
      'redis://cache.internal/app',
      'redis://:%E0%A4%A@cache.internal',
      'not a url',
    ])
      expect(leanTarget(url)).toBeUndefined();
  });
});
