import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freePort, infraUrls, silentLogger } from '@signal/test-kit';
import Redis from 'ioredis';
import { connectRedis, parseRedisUrl, type RedisClient } from '../src';

/** The client as one server (these URLs never name a Cluster). */
function oneServer(client: RedisClient): Redis {
  if (!(client instanceof Redis)) throw new Error('expected a client of one server');
  return client;
}

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

  it.each([
    ['unix:///var/run/redis/redis.sock', '/var/run/redis/redis.sock', 0],
    ['unix:///tmp/r.sock?db=3', '/tmp/r.sock', 3],
    ['UNIX:///run/with%20space.sock', '/run/with space.sock', 0],
  ])('when the URL is %s, then ioredis gets the socket path %s and db %d', (url, socketPath, db) => {
    expect(parseRedisUrl(url)).toEqual({ mode: 'unix', path: socketPath, db });
  });

  it.each([
    ['unix://relative.sock', 'unix:///absolute/path'],
    ['unix:///', 'unix:///absolute/path'],
    ['unix:///tmp/r.sock?db=x', 'db must be a database number'],
    ['unix:///tmp/r.sock?password=x', 'unknown option "password"'],
  ])('when the URL is %s, then it is refused (%s)', (url, reason) => {
    expect(() => parseRedisUrl(url)).toThrow(reason);
  });

  it('when the URL lists cluster nodes, then ioredis gets each node, port 6379 where none is given', () => {
    expect(parseRedisUrl('redis-cluster://10.0.0.1:7000,cache-b,[::1]:7002')).toEqual({
      mode: 'cluster',
      nodes: [
        { host: '10.0.0.1', port: 7000 },
        { host: 'cache-b', port: 6379 },
        { host: '::1', port: 7002 },
      ],
      options: {},
    });
  });

  it('when a cluster URL has credentials and the rediss-cluster scheme, then every node gets them and TLS', () => {
    expect(parseRedisUrl('rediss-cluster://app:p%40ss@h1:7000,h2:7001/')).toEqual({
      mode: 'cluster',
      nodes: [
        { host: 'h1', port: 7000 },
        { host: 'h2', port: 7001 },
      ],
      options: { username: 'app', password: 'p@ss', tls: {} },
    });
  });

  it.each([
    ['redis-cluster://', 'a cluster node is empty'],
    ['redis-cluster://h1,,h2', 'a cluster node is empty'],
    ['redis-cluster://h1:99999', 'a cluster node is empty or not host[:port]'],
    ['redis-cluster://h1:7000/2', 'a cluster takes no database'],
    ['redis-cluster://h1:7000?db=2', 'a cluster takes no database'],
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
  it('when the URL is the real Redis, then the client is ready and replies', async () => {
    const redis = await connectRedis(infraUrls().redisUrl, silentLogger);
    try {
      expect(redis.status).toBe('ready');
      expect(await redis.ping()).toBe('PONG');
    } finally {
      redis.disconnect();
    }
  });

  it('when the URL is a Unix socket a Redis listens on, then the client is ready over it', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'redis-unix-'));
    const socket = path.join(dir, 'redis.sock');
    // Its own server: the machine's Redis listens on TCP only. Port 0 = no TCP listener at all.
    const server = spawn(
      'redis-server',
      ['--port', '0', '--unixsocket', socket, '--save', '', '--appendonly', 'no'],
      {
        stdio: 'ignore',
      },
    );
    try {
      for (let i = 0; i < 100 && !existsSync(socket); i++) await new Promise((r) => setTimeout(r, 20));
      const redis = oneServer(await connectRedis(`unix://${socket}?db=1`, silentLogger));
      try {
        expect(redis.status).toBe('ready');
        await redis.set('unix-check', 'yes');
        expect(await redis.get('unix-check')).toBe('yes');
        expect(redis.options.db).toBe(1);
        expect(redis.options.enableOfflineQueue).toBe(false);
      } finally {
        redis.disconnect();
      }
    } finally {
      server.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('when the Unix socket does not exist, then connectRedis returns after the wait and commands fail fast', async () => {
    const redis = await connectRedis('unix:///nonexistent/redis.sock', silentLogger, 200);
    try {
      expect(redis.status).not.toBe('ready');
      // Refused at once, not queued until a connection comes: the offline queue is off.
      await expect(redis.get('anything')).rejects.toThrow(/enableOfflineQueue/);
    } finally {
      redis.disconnect();
    }
  });

  it('when no sentinel replies, then connectRedis still returns after the wait and commands fail fast', async () => {
    const port = await freePort();
    const redis = oneServer(
      await connectRedis(`redis-sentinel://127.0.0.1:${port}/mymaster/2`, silentLogger, 300),
    );
    try {
      expect(redis.status).not.toBe('ready');
      expect(redis.options.sentinels).toEqual([{ host: '127.0.0.1', port }]);
      expect(redis.options.name).toBe('mymaster');
      expect(redis.options.db).toBe(2);
      expect(redis.options.enableOfflineQueue).toBe(false);
      // Refused at once, not queued until a connection comes: the offline queue is off.
      await expect(redis.get('anything')).rejects.toThrow(/enableOfflineQueue/);
    } finally {
      redis.disconnect();
      // ioredis leaves its connect-timeout (2 s) and sentinel back-off timers to run out after a
      // disconnect; let them end inside the test.
      await new Promise((r) => setTimeout(r, 2500));
    }
  });
});
