import { freePort, infraUrls, silentLogger } from '@signal/test-kit';
import { connectRedis, parseRedisUrl } from '../src';

/** URL parsing needs no server; the connect cases use the real Redis or a closed port. */
describe('parseRedisUrl', () => {
  it.each([
    'redis://127.0.0.1:6379',
    'rediss://user:secret@cache.example.net:6380/2',
    'redis://:secret@redis/0',
  ])('when the URL is %s, then it is one server handed to ioredis unchanged', (url) => {
    expect(parseRedisUrl(url)).toEqual({ mode: 'standalone', url });
  });

  it('when the URL lists sentinels and a master name, then ioredis gets sentinels, name and db 0', () => {
    expect(parseRedisUrl('redis-sentinel://host1:26379,host2:26380,host3/mymaster')).toEqual({
      mode: 'sentinel',
      options: {
        sentinels: [
          { host: 'host1', port: 26379 },
          { host: 'host2', port: 26380 },
          { host: 'host3', port: 26379 },
        ],
        name: 'mymaster',
        db: 0,
      },
    });
  });

  it('when the URL has credentials, a database and sentinel options, then each lands in its ioredis option', () => {
    expect(
      parseRedisUrl(
        'redis-sentinel://app:p%40ss%3Aword@10.0.0.1:26379,[::1]:26379/my%20master/3?sentinelUsername=sen&sentinelPassword=s%26cret',
      ),
    ).toEqual({
      mode: 'sentinel',
      options: {
        sentinels: [
          { host: '10.0.0.1', port: 26379 },
          { host: '::1', port: 26379 },
        ],
        name: 'my master',
        db: 3,
        username: 'app',
        password: 'p@ss:word',
        sentinelUsername: 'sen',
        sentinelPassword: 's&cret',
      },
    });
  });

  it('when only a password is given (":secret@" or "secret@"), then it is the master password without a username', () => {
    for (const url of ['redis-sentinel://:secret@h1/m', 'redis-sentinel://secret@h1/m']) {
      expect(parseRedisUrl(url)).toEqual({
        mode: 'sentinel',
        options: { sentinels: [{ host: 'h1', port: 26379 }], name: 'm', db: 0, password: 'secret' },
      });
    }
  });

  it('when the scheme is rediss-sentinel, then TLS is on towards the sentinels and the master', () => {
    expect(parseRedisUrl('rediss-sentinel://h1:26379/m')).toEqual({
      mode: 'sentinel',
      options: {
        sentinels: [{ host: 'h1', port: 26379 }],
        name: 'm',
        db: 0,
        tls: {},
        sentinelTLS: {},
        enableTLSForSentinelMode: true,
      },
    });
  });

  it.each([
    ['mongodb://h:27017', 'must start with redis:'],
    ['not a url', 'must start with redis:'],
    ['redis://', 'no host'],
    ['redis-sentinel://h1:26379', 'no master name'],
    ['redis-sentinel://h1:26379/', 'no master name'],
    ['redis-sentinel:///mymaster', 'a sentinel is empty'],
    ['redis-sentinel://h1,,h2/mymaster', 'a sentinel is empty'],
    ['redis-sentinel://h1:0/mymaster', 'a sentinel is empty or not host[:port]'],
    ['redis-sentinel://h1:70000/mymaster', 'a sentinel is empty or not host[:port]'],
    ['redis-sentinel://h1:port/mymaster', 'a sentinel is empty or not host[:port]'],
    ['redis-sentinel://h1/mymaster/db1', '/masterName/db'],
    ['redis-sentinel://h1/mymaster/1/extra', '/masterName/db'],
    ['redis-sentinel://h1/mymaster?sentinelPasword=x', 'unknown option "sentinelPasword"'],
    ['redis-sentinel://h1/%E0%A4%A', 'percent-encoding'],
  ])('when the URL is %s, then it is refused (%s)', (url, reason) => {
    expect(() => parseRedisUrl(url)).toThrow(reason);
  });

  it('when a refused URL holds a password, then the error does not repeat it', () => {
    expect(() => parseRedisUrl('redis-sentinel://app:hunter2@h1:99999/m')).toThrow(
      expect.objectContaining({ message: expect.not.stringContaining('hunter2') }),
    );
  });
});

describe('connectRedis', () => {
  it('when the URL is the real Redis, then the client is ready and answers', async () => {
    const redis = await connectRedis(infraUrls().redisUrl, silentLogger);
    try {
      expect(redis.status).toBe('ready');
      expect(await redis.ping()).toBe('PONG');
    } finally {
      redis.disconnect();
    }
  });

  it('when no sentinel answers, then connectRedis still returns after the wait and commands fail fast', async () => {
    const port = await freePort();
    const started = Date.now();
    const redis = await connectRedis(`redis-sentinel://127.0.0.1:${port}/mymaster/2`, silentLogger, 300);
    try {
      expect(Date.now() - started).toBeLessThan(2000);
      expect(redis.options.sentinels).toEqual([{ host: '127.0.0.1', port }]);
      expect(redis.options.name).toBe('mymaster');
      expect(redis.options.db).toBe(2);
      expect(redis.options.enableOfflineQueue).toBe(false);
      const before = Date.now();
      await expect(redis.get('anything')).rejects.toThrow();
      expect(Date.now() - before).toBeLessThan(1500);
    } finally {
      redis.disconnect();
      // ioredis leaves its connect-timeout (2 s) and sentinel back-off timers to run out after a
      // disconnect; let them end inside the test.
      await new Promise((r) => setTimeout(r, 2500));
    }
  });
});
