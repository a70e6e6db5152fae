import { z } from 'zod';
import { env, parseConfig } from '../src';

/** Pure parsing: no infrastructure involved. */
const schema = z.object({ MONGO_URL: env.url(['mongodb', 'mongodb+srv']) });

function issues(value: string | undefined): string[] {
  const result = schema.safeParse(value === undefined ? {} : { MONGO_URL: value });
  return result.success ? [] : result.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
}

describe('env.url for MONGO_URL', () => {
  it.each([
    'mongodb://127.0.0.1:27017',
    'mongodb://localhost',
    'mongodb://a:27017,b:27017/db?replicaSet=rs0',
    'mongodb://a.example.net:27017,b.example.net:27018,c.example.net/signals?replicaSet=rs0&readPreference=secondaryPreferred&w=majority',
    'mongodb://user:p%40ss@a:27017,b:27017/db?authSource=admin&tls=true',
    'mongodb://[::1]:27017/db',
    'mongodb://%2Ftmp%2Fmongodb-27017.sock/db',
    'mongodb+srv://cluster0.example.net/signals?retryWrites=true&w=majority',
    'mongodb+srv://user:secret@cluster0.example.net',
  ])('when MONGO_URL is %s, then it is accepted unchanged', (url) => {
    expect(issues(url)).toEqual([]);
    expect(schema.parse({ MONGO_URL: url }).MONGO_URL).toBe(url);
  });

  it.each([
    ['not-a-url', 'must be a URL'],
    ['', 'must be a URL'],
    ['http://a:27017/db', 'must start with mongodb or mongodb+srv:'],
    ['mongodb://', 'MongoDB connection string'],
    ['mongodb://a:27017,/db', 'not host[:port]'],
    ['mongodb://a:0/db', 'port from 1 to 65535'],
    ['mongodb://a:99999/db', 'port from 1 to 65535'],
    ['mongodb://a:abc/db', 'not host[:port]'],
    ['mongodb://a b:27017/db', 'not host[:port]'],
    ['mongodb://user:p@ss@a:27017/db', 'percent-encoded'],
    ['mongodb+srv://a.example.net,b.example.net/db', 'multiple service names'],
    ['mongodb+srv://cluster0.example.net:27017/db', 'port'],
  ])('when MONGO_URL is %s, then exactly one issue names the variable (%s)', (url, expected) => {
    const found = issues(url);
    expect(found).toHaveLength(1);
    expect(found[0]).toMatch(/^MONGO_URL: must /);
    expect(found[0]).toContain(expected);
  });

  it('when MONGO_URL is missing, then the issue says it is required', () => {
    expect(issues(undefined)).toEqual(['MONGO_URL: is required']);
  });

  it('when a refused MONGO_URL holds credentials, then the message does not repeat them', () => {
    const [message] = issues('mongodb+srv://user:hunter2@a.example.net,b.example.net/db');
    expect(message).toBeDefined();
    expect(message).not.toContain('hunter2');
  });

  it('when a non-Mongo URL is checked, then WHATWG URL rules still apply', () => {
    const redis = z.object({ REDIS_URL: env.url(['redis', 'rediss']) });
    expect(redis.safeParse({ REDIS_URL: 'redis://127.0.0.1:6379/0' }).success).toBe(true);
    expect(redis.safeParse({ REDIS_URL: 'redis://a:6379,b:6379' }).success).toBe(false);
    expect(redis.safeParse({ REDIS_URL: 'amqp://127.0.0.1' }).success).toBe(false);
  });

  it('when the environment is invalid, then parseConfig prints one line per variable and exits 1', () => {
    const written: string[] = [];
    const write = jest.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
      written.push(String(chunk));
      return true;
    });
    const exit = jest.spyOn(process, 'exit').mockImplementation((code?: string | number | null) => {
      throw new Error(`exit ${String(code)}`);
    });
    try {
      expect(() => parseConfig('svc', schema, { MONGO_URL: 'mongodb://a:27017,b:notaport/db' })).toThrow(
        'exit 1',
      );
    } finally {
      write.mockRestore();
      exit.mockRestore();
    }
    const lines = written.join('').trimEnd().split('\n');
    expect(lines[0]).toBe('svc: invalid configuration');
    expect(lines).toHaveLength(2);
    expect(lines[1]).toMatch(/^ {2}MONGO_URL: must be a URL: a MongoDB connection string/);
  });
});

describe('env.urlList for AMQP_URL', () => {
  const amqp = z.object({ AMQP_URL: env.urlList(['amqp', 'amqps']) });
  function check(value: string | undefined): { urls?: string[]; issues: string[] } {
    const result = amqp.safeParse(value === undefined ? {} : { AMQP_URL: value });
    return result.success
      ? { urls: result.data.AMQP_URL, issues: [] }
      : { issues: result.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`) };
  }

  it('when AMQP_URL is one URL, then it parses to a list of one', () => {
    expect(check('amqp://guest:guest@127.0.0.1:5672')).toEqual({
      urls: ['amqp://guest:guest@127.0.0.1:5672'],
      issues: [],
    });
  });

  it('when AMQP_URL lists several brokers (spaces and a trailing comma tolerated), then they parse in order', () => {
    expect(check('amqp://u:p@rabbit-0:5672/vh, amqps://u:p@rabbit-1:5671/vh,amqp://rabbit-2,')).toEqual({
      urls: ['amqp://u:p@rabbit-0:5672/vh', 'amqps://u:p@rabbit-1:5671/vh', 'amqp://rabbit-2'],
      issues: [],
    });
  });

  it.each([
    ['', 'AMQP_URL: must be a URL or a comma-separated list of URLs'],
    [' , ', 'AMQP_URL: must be a URL or a comma-separated list of URLs'],
    ['not-a-url', 'AMQP_URL: must be a URL'],
    ['http://rabbit:5672', 'AMQP_URL: must start with amqp or amqps:'],
    ['amqp://rabbit-0:5672,redis://rabbit-1:5672', 'AMQP_URL: item 2 of 2 must start with amqp or amqps:'],
    ['amqp://rabbit-0:5672,amqp://', 'AMQP_URL: item 2 of 2 must be a URL with a host'],
  ])('when AMQP_URL is "%s", then one issue says why', (value, expected) => {
    expect(check(value)).toEqual({ issues: [expected] });
  });

  it('when AMQP_URL is missing, then the issue says it is required', () => {
    expect(check(undefined)).toEqual({ issues: ['AMQP_URL: is required'] });
  });
});

describe('env.redisUrl for REDIS_URL', () => {
  const redis = z.object({ REDIS_URL: env.redisUrl() });
  function issues(value: string | undefined): string[] {
    const result = redis.safeParse(value === undefined ? {} : { REDIS_URL: value });
    return result.success ? [] : result.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
  }

  it.each([
    'redis://127.0.0.1:6379',
    'rediss://:secret@cache.example.net:6380/1',
    'redis-sentinel://sentinel-0:26379,sentinel-1:26379,sentinel-2:26379/mymaster',
    'rediss-sentinel://app:secret@sentinel-0/mymaster/2?sentinelPassword=x',
  ])('when REDIS_URL is %s, then it is accepted unchanged', (url) => {
    expect(issues(url)).toEqual([]);
    expect(redis.parse({ REDIS_URL: url }).REDIS_URL).toBe(url);
  });

  it.each([
    ['amqp://127.0.0.1', 'must start with redis:'],
    ['redis-sentinel://sentinel-0:26379,sentinel-1:26379', 'no master name'],
    ['redis-sentinel://app:hunter2@sentinel-0:0/m', 'a sentinel is empty or not host[:port]'],
  ])('when REDIS_URL is %s, then one issue names the variable and says why', (url, reason) => {
    const found = issues(url);
    expect(found).toHaveLength(1);
    expect(found[0]).toMatch(/^REDIS_URL: must be a Redis URL/);
    expect(found[0]).toContain(reason);
    expect(found[0]).not.toContain('hunter2');
  });

  it('when REDIS_URL is missing, then the issue says it is required', () => {
    expect(issues(undefined)).toEqual(['REDIS_URL: is required']);
  });
});
