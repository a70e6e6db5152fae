import Redis, { Cluster, type ChainableCommander, type ClusterOptions, type RedisOptions } from 'ioredis';
import calculateSlot from 'cluster-key-slot';
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
 * - `redis-cluster://[[user]:password@]host1[:6379][,host2[:6379]…]` — a Redis Cluster, reached
 *   through ioredis' `Cluster` (it learns every node from any of these, follows MOVED/ASK and
 *   failovers); `rediss-cluster://` uses TLS to every node. A cluster has database 0 only.
 *
 * On a Cluster every multi-key command, script and pipeline must stay within one slot (one node
 * for a pipeline): each key family carries a hash tag chosen for that (see
 * docs/decisions/redis-cluster-hash-tags.md), and `pipelineEach`, `RedisScript` and
 * `deleteKeysMatching` split their work by node.
 */
export type RedisTarget =
  | { mode: 'standalone'; url: string }
  | { mode: 'unix'; path: string; db: number }
  | { mode: 'sentinel'; options: SentinelTarget }
  | { mode: 'cluster'; nodes: Array<{ host: string; port: number }>; options: ClusterNodeTarget };

/** What every service talks to: one server (plain, Unix socket or Sentinel-managed) or a Cluster. */
export type RedisClient = Redis | Cluster;

/** The client as a Cluster, or undefined for one server. */
export function clusterOf(client: RedisClient): Cluster | undefined {
  return client instanceof Cluster ? client : undefined;
}

/**
 * A second client to the same server or Cluster, with the same options: what a subscriber needs
 * (a subscribed connection runs no other command).
 */
export function duplicateOf(client: RedisClient): RedisClient {
  if (client instanceof Cluster) return client.duplicate();
  return client.duplicate();
}

/** The ioredis options a Cluster URL sets on the connection to each node. */
export type ClusterNodeTarget = Pick<RedisOptions, 'username' | 'password' | 'tls'>;

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
const CLUSTER_SCHEMES = new Set(['redis-cluster', 'rediss-cluster']);
const SENTINEL_OPTIONS = new Set(['sentinelUsername', 'sentinelPassword']);
const DEFAULT_SENTINEL_PORT = 26379;
const DEFAULT_REDIS_PORT = 6379;
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
  if (scheme !== undefined && CLUSTER_SCHEMES.has(scheme)) return parseClusterUrl(url, scheme);
  if (scheme === undefined || !SENTINEL_SCHEMES.has(scheme))
    throw new Error(
      'must start with redis:, rediss:, unix:, redis-sentinel:, rediss-sentinel:, redis-cluster: or rediss-cluster:',
    );

  const m = /^[^:]+:\/\/(?:([^@/?#]*)@)?([^/?#]*)(\/[^?#]*)?(?:\?([^#]*))?$/.exec(url);
  if (!m) throw new Error('not redis-sentinel://host1:26379,host2:26379/masterName');
  const [, userinfo, hostList = '', path = '', query = ''] = m;

  const sentinels = hostList.split(',').map((item) => hostPort(item, DEFAULT_SENTINEL_PORT, 'a sentinel'));

  const [, rawName = '', rawDb, ...rest] = path.split('/');
  const name = decode(rawName, 'the master name');
  if (name === '') throw new Error('no master name: redis-sentinel://host1:26379,host2:26379/masterName');
  if (rest.length > 0 || (rawDb !== undefined && rawDb !== '' && !/^\d+$/.test(rawDb)))
    throw new Error('the path must be /masterName or /masterName/db (a database number)');
  const db = rawDb ? Number(rawDb) : 0;

  const target: SentinelTarget = { sentinels, name, db, ...credentials(userinfo) };
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

/** `redis-cluster://[[user]:password@]host1[:6379][,host2[:6379]…]`: no path, no options. */
function parseClusterUrl(url: string, scheme: string): RedisTarget {
  const m = /^[^:]+:\/\/(?:([^@/?#]*)@)?([^/?#]*)\/?$/.exec(url);
  if (!m)
    throw new Error('not redis-cluster://host1:6379,host2:6379 (a cluster takes no database and no options)');
  const [, userinfo, hostList = ''] = m;
  const nodes = hostList.split(',').map((item) => hostPort(item, DEFAULT_REDIS_PORT, 'a cluster node'));
  const options: ClusterNodeTarget = credentials(userinfo);
  if (scheme === 'rediss-cluster') options.tls = {};
  return { mode: 'cluster', nodes, options };
}

/** `host`, `host:port` or `[v6]:port`, with `fallback` as the port when none is given. */
function hostPort(item: string, fallback: number, what: string): { host: string; port: number } {
  const hp = HOST_PORT.exec(item.trim());
  const port = hp?.[2] === undefined ? fallback : Number(hp[2]);
  if (!hp || port < 1 || port > 65535) throw new Error(`${what} is empty or not host[:port]`);
  const host = hp[1]!.startsWith('[') ? hp[1]!.slice(1, -1) : hp[1]!;
  return { host, port };
}

/** The credentials before `@`; like redis://secret@host, a lone userinfo is the password. */
function credentials(userinfo: string | undefined): Pick<RedisOptions, 'username' | 'password'> {
  if (userinfo === undefined || userinfo === '') return {};
  const colon = userinfo.indexOf(':');
  const username = decode(colon < 0 ? userinfo : userinfo.slice(0, colon), 'the username');
  if (colon < 0) return { password: username };
  const password = decode(userinfo.slice(colon + 1), 'the password');
  return { ...(username !== '' && { username }), ...(password !== '' && { password }) };
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
 * `sentinelOptions` as well). For a Cluster, `options` apply to the connection to each node, and
 * the cluster-wide ones (offline queue, retries of the slot map) follow them. Connects in the
 * background; no handlers attached.
 */
export function redisClient(
  url: string,
  options: RedisOptions = {},
  sentinelOptions: RedisOptions = {},
): RedisClient {
  const target = parseRedisUrl(url);
  if (target.mode === 'standalone') return new Redis(target.url, options);
  if (target.mode === 'unix') return new Redis({ path: target.path, db: target.db, ...options });
  if (target.mode === 'cluster') return new Cluster(target.nodes, clusterOptions(target.options, options));
  return new Redis({ ...target.options, ...options, ...sentinelOptions });
}

/** Cluster-wide options that follow the per-node ones (one policy for both). */
function clusterOptions(target: ClusterNodeTarget, options: RedisOptions): ClusterOptions {
  const { retryStrategy, enableOfflineQueue, ...node } = options;
  const cluster: ClusterOptions = {
    redisOptions: { ...node, ...target },
    // A node that a failover replaced is dropped and the slot map read again at once; a command
    // caught in between is retried after the map is fresh, not failed.
    retryDelayOnFailover: 200,
    retryDelayOnClusterDown: 200,
    retryDelayOnTryAgain: 200,
    slotsRefreshTimeout: 2000,
  };
  if (enableOfflineQueue !== undefined) cluster.enableOfflineQueue = enableOfflineQueue;
  if (typeof retryStrategy === 'function')
    cluster.clusterRetryStrategy = (times) => retryStrategy(times) ?? null;
  return cluster;
}

/**
 * Redis that fails fast while down (no offline queue, 1 s command timeout) and reconnects by
 * itself. Waits up to `readyWaitMs` for the first connection, then returns either way: callers
 * start even with Redis down and follow their documented fallback. `url` is any `RedisTarget`
 * URL: one server, or a Sentinel-managed master (same fail-fast options; the sentinels are
 * retried like the server).
 */
export async function connectRedis(url: string, logger: Logger, readyWaitMs = 3000): Promise<RedisClient> {
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

/**
 * Deletes every key matching `pattern` with SCAN (never KEYS, which blocks a large keyspace); on a
 * Cluster, on every master (SCAN sees one node's keys).
 */
export async function deleteKeysMatching(redis: RedisClient, pattern: string, keep?: string): Promise<void> {
  const servers = redis instanceof Cluster ? redis.nodes('master') : [redis];
  for (const server of servers) {
    let cursor = '0';
    do {
      const [next, found] = await server.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
      cursor = next;
      const keys = found.filter((k) => k !== keep);
      // One DEL per key: the keys of one node may be in many slots, and a multi-key DEL must not be.
      if (keys.length) {
        const pipeline = server.pipeline();
        for (const key of keys) pipeline.del(key);
        await pipeline.exec();
      }
    } while (cursor !== '0');
  }
}

/** One command's outcome in a pipeline, as ioredis reports it. */
export type PipelineReply = [error: Error | null, value: unknown];

/**
 * Sends the commands of many items in as few writes as can be: one pipeline on a single server;
 * on a Cluster one pipeline per node, since a pipeline must stay on one node (each item's
 * commands must then stay within the slot of `keyOf(item)`: give them one hash tag). Returns each
 * item's replies, in order; a pipeline that fails as a whole fails every item it carried.
 */
export async function pipelineEach<T>(
  redis: RedisClient,
  items: readonly T[],
  keyOf: (item: T) => string,
  add: (pipeline: ChainableCommander, item: T) => void,
): Promise<PipelineReply[][]> {
  const replies: PipelineReply[][] = items.map(() => []);
  const groups = new Map<string, number[]>();
  items.forEach((item, i) => {
    const group = redis instanceof Cluster ? slotOwner(redis, keyOf(item)) : '';
    const members = groups.get(group);
    if (members) members.push(i);
    else groups.set(group, [i]);
  });
  await Promise.all(
    [...groups.values()].map(async (members) => {
      const pipeline = redis.pipeline();
      const counts = members.map((i) => {
        const before = pipeline.length;
        add(pipeline, items[i]!);
        return pipeline.length - before;
      });
      let results: PipelineReply[];
      try {
        results = (await pipeline.exec()) ?? [];
      } catch (err) {
        const error = err instanceof Error ? err : new Error(String(err));
        members.forEach(
          (i, n) => (replies[i] = Array.from({ length: counts[n]! }, () => [error, undefined])),
        );
        return;
      }
      let at = 0;
      members.forEach((i, n) => {
        replies[i] = results.slice(at, at + counts[n]!);
        at += counts[n]!;
      });
    }),
  );
  return replies;
}

/** The Redis Cluster slot of `key` (its hash tag's, when it has one). */
export function keySlot(key: string): number {
  return calculateSlot(key);
}

/** The node that serves `key`'s slot as the cluster last said (the slot itself before it said). */
function slotOwner(cluster: Cluster, key: string): string {
  const slot = keySlot(key);
  return cluster.slots[slot]?.[0] ?? `slot ${slot}`;
}

/**
 * Is this ioredis's "Redis is unreachable right now" (fail-fast while reconnecting, a dropped
 * connection, a command that timed out)? Consumers retry these without spending an attempt.
 */
export function isRedisUnavailable(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  return (
    err.name === 'MaxRetriesPerRequestError' ||
    err.name === 'ClusterAllFailedError' ||
    /^Stream isn't writeable and enableOfflineQueue|^Connection is closed\.?$|^Command timed out$|^CLUSTERDOWN |^TRYAGAIN |^Cluster isn't ready|^Too many Cluster redirections|^Failed to refresh slots cache/.test(
      err.message,
    )
  );
}
