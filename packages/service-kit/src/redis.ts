import Redis, { type RedisOptions } from 'ioredis';
import type { Logger } from './logger';

/**
 * Where `REDIS_URL` points:
 * - `redis://` / `rediss://` — one server (or a cluster-aware proxy such as Envoy's Redis proxy
 *   or a managed service's single endpoint), handed to ioredis as is;
 * - `unix:///path/to/redis.sock[?db=N]` — one server on a Unix socket on this host (a Redis
 *   sidecar in the same pod): no TCP stack on either side, so each round trip costs both
 *   processes less CPU than loopback TCP;
 * - `redis-sentinel://[[user]:password@]host1[:26379][,host2[:26379]…]/masterName[/db]
 *   [?sentinelUsername=…&sentinelPassword=…]` — the master that Sentinel names, followed across
 *   failovers. The credentials before `@` are the master's; `rediss-sentinel://` uses TLS to the
 *   sentinels and the master.
 *
 * Redis Cluster is not supported directly: ioredis' `Cluster` is not a `Redis` (different type,
 * `scan` and `keys` see one node only, pipelines and Lua scripts must stay within one slot), and
 * every service takes a `Redis` (RedisScript's `evalsha`, RedisReadModel's `scan`, pipelines,
 * `defineCommand`). Reach a Cluster through a cluster-aware proxy with a `redis://` URL, or run
 * Sentinel for high availability. Keys that are read together already share a hash tag
 * (`{timeline}`, `{statscache}`, …), so that move stays open.
 */
export type RedisTarget =
  | { mode: 'standalone'; url: string }
  | { mode: 'unix'; path: string; db: number }
  | { mode: 'sentinel'; options: SentinelTarget };

/** The ioredis options a Sentinel URL sets. */
export type SentinelTarget = Required<Pick<RedisOptions, 'sentinels' | 'name' | 'db'>> &
  Pick<
    RedisOptions,
    | 'username'
    | 'password'
    | 'sentinelUsername'
    | 'sentinelPassword'
    | 'tls'
    | 'sentinelTLS'
    | 'enableTLSForSentinelMode'
  >;

const SENTINEL_SCHEMES = new Set(['redis-sentinel', 'rediss-sentinel']);
const SENTINEL_OPTIONS = new Set(['sentinelUsername', 'sentinelPassword']);
const DEFAULT_SENTINEL_PORT = 26379;
/** `host`, `host:port` or `[v6]:port`. */
const HOST_PORT = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._~-]+)(?::(\d{1,5}))?$/;

/**
 * Reads a Redis URL (see `RedisTarget`). Throws an Error whose message says what is wrong
 * without repeating the URL (it may hold passwords).
 */
export function parseRedisUrl(url: string): RedisTarget {
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(url)?.[1]?.toLowerCase();
  if (scheme === 'redis' || scheme === 'rediss') {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      throw new Error('not a URL');
    }
    if (parsed.hostname === '') throw new Error('no host');
    return { mode: 'standalone', url };
  }
  if (scheme === 'unix') return parseUnixUrl(url);
  if (scheme === undefined || !SENTINEL_SCHEMES.has(scheme))
    throw new Error('must start with redis:, rediss:, unix:, redis-sentinel: or rediss-sentinel:');

  const m = /^[^:]+:\/\/(?:([^@/?#]*)@)?([^/?#]*)(\/[^?#]*)?(?:\?([^#]*))?$/.exec(url);
  if (!m) throw new Error('not redis-sentinel://host1:26379,host2:26379/masterName');
  const [, userinfo, hostList = '', path = '', query = ''] = m;

  const sentinels = hostList.split(',').map((item) => {
    const hp = HOST_PORT.exec(item.trim());
    const port = hp?.[2] === undefined ? DEFAULT_SENTINEL_PORT : Number(hp[2]);
    if (!hp || port < 1 || port > 65535) throw new Error('a sentinel is empty or not host[:port]');
    const host = hp[1]!.startsWith('[') ? hp[1]!.slice(1, -1) : hp[1]!;
    return { host, port };
  });

  const [, rawName = '', rawDb, ...rest] = path.split('/');
  const name = decode(rawName, 'the master name');
  if (name === '') throw new Error('no master name: redis-sentinel://host1:26379,host2:26379/masterName');
  if (rest.length > 0 || (rawDb !== undefined && rawDb !== '' && !/^\d+$/.test(rawDb)))
    throw new Error('the path must be /masterName or /masterName/db (a database number)');
  const db = rawDb ? Number(rawDb) : 0;

  const target: SentinelTarget = { sentinels, name, db };
  if (userinfo !== undefined && userinfo !== '') {
    const colon = userinfo.indexOf(':');
    const username = decode(colon < 0 ? userinfo : userinfo.slice(0, colon), 'the username');
    const password = colon < 0 ? undefined : decode(userinfo.slice(colon + 1), 'the password');
    if (colon < 0) {
      // Like redis://secret@host: a lone userinfo is the password (AUTH password).
      target.password = username;
    } else {
      if (username !== '') target.username = username;
      if (password !== undefined && password !== '') target.password = password;
    }
  }
  const params = new URLSearchParams(query);
  for (const key of params.keys())
    if (!SENTINEL_OPTIONS.has(key))
      throw new Error(`unknown option "${key}" (known: ${[...SENTINEL_OPTIONS].join(', ')})`);
  const sentinelUsername = params.get('sentinelUsername');
  const sentinelPassword = params.get('sentinelPassword');
  if (sentinelUsername) target.sentinelUsername = sentinelUsername;
  if (sentinelPassword) target.sentinelPassword = sentinelPassword;
  if (scheme === 'rediss-sentinel') {
    target.tls = {};
    target.sentinelTLS = {};
    target.enableTLSForSentinelMode = true;
  }
  return { mode: 'sentinel', options: target };
}

/** `unix:///absolute/path.sock` with an optional `?db=N`; no credentials (the socket's file mode guards it). */
function parseUnixUrl(url: string): RedisTarget {
  const m = /^unix:\/\/(\/[^?#]*)(?:\?([^#]*))?$/i.exec(url);
  if (!m || m[1] === '/') throw new Error('not unix:///absolute/path/to/redis.sock');
  const params = new URLSearchParams(m[2] ?? '');
  for (const key of params.keys()) if (key !== 'db') throw new Error(`unknown option "${key}" (known: db)`);
  const rawDb = params.get('db') ?? '0';
  if (!/^\d+$/.test(rawDb)) throw new Error('db must be a database number');
  return { mode: 'unix', path: decode(m[1]!, 'the socket path'), db: Number(rawDb) };
}

function decode(value: string, what: string): string {
  try {
    return decodeURIComponent(value);
  } catch {
    throw new Error(`${what} is not valid percent-encoding`);
  }
}

/**
 * An ioredis client for any `RedisTarget` URL, with `options` (and, towards sentinels,
 * `sentinelOptions` as well). Connects in the background; no handlers attached.
 */
export function redisClient(
  url: string,
  options: RedisOptions = {},
  sentinelOptions: RedisOptions = {},
): Redis {
  const target = parseRedisUrl(url);
  if (target.mode === 'standalone') return new Redis(target.url, options);
  if (target.mode === 'unix') return new Redis({ path: target.path, db: target.db, ...options });
  return new Redis({ ...target.options, ...options, ...sentinelOptions });
}

/**
 * Redis that fails fast while down (no offline queue, 1 s command timeout) and reconnects by
 * itself. Waits up to `readyWaitMs` for the first connection, then returns either way: callers
 * start even with Redis down and follow their documented fallback. `url` is any `RedisTarget`
 * URL: one server, or a Sentinel-managed master (same fail-fast options; the sentinels are
 * retried like the server).
 */
export async function connectRedis(url: string, logger: Logger, readyWaitMs = 3000): Promise<Redis> {
  const retry = (times: number) => Math.min(times * 100, 2000);
  const failFast: RedisOptions = {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    commandTimeout: 1000,
    connectTimeout: 2000,
    // ioredis arms this timer on every disconnect and clears it on the socket's 'close', which a
    // socket already closed (a refused reconnect) never emits again: with the default 2 s, a CLI
    // that finds no Redis stays alive 2 s longer, and jest waits for it.
    disconnectTimeout: 200,
    retryStrategy: retry,
  };
  const redis = redisClient(url, failFast, { sentinelRetryStrategy: retry });
  redis.on('error', (err: Error) => logger.warn({ err: err.message }, 'redis error'));
  // Errors before the first connection (refused, a connect timeout on a loaded machine) only
  // mean ioredis is retrying: wait for 'ready' until the deadline, not for the first error.
  // (Returning at the first error left a CLI run right after `scripts/up.sh` started every
  // service with no connection: "Stream isn't writeable".)
  await new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, readyWaitMs);
    redis.once('ready', () => {
      clearTimeout(timer);
      resolve();
    });
  });
  return redis;
}

/** Deletes every key matching `pattern` with SCAN (never KEYS, which blocks a large keyspace). */
export async function deleteKeysMatching(redis: Redis, pattern: string, keep?: string): Promise<void> {
  let cursor = '0';
  do {
    const [next, found] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
    cursor = next;
    const keys = found.filter((k) => k !== keep);
    if (keys.length) await redis.del(...keys);
  } while (cursor !== '0');
}

/**
 * Is this ioredis's "Redis is unreachable right now" (fail-fast while reconnecting, a dropped
 * connection, a command that timed out)? Consumers retry these without spending an attempt.
 */
export function isRedisUnavailable(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  return (
    err.name === 'MaxRetriesPerRequestError' ||
    /^Stream isn't writeable and enableOfflineQueue|^Connection is closed\.?$|^Command timed out$/.test(
      err.message,
    )
  );
}
