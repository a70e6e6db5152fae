import {
  connectMongo,
  connectRedis,
  pingMongo,
  signInternalToken,
  InternalTokenCache,
  type BackgroundWorker,
  type Logger,
  type RedisClient,
} from '@signal/service-kit';
import type { Connection } from 'mongoose';
import { defaultCaps, type GatewayConfig } from './config';
import { AccountRepository } from './accounts/data/account.repository';
import { RateLimitStore } from './edge/data/rate-limit.store';
import { UsageStore } from './edge/data/usage.store';
import { LoginAttemptStore } from './sessions/data/login-attempts.store';
import { SessionRevocationStore } from './sessions/data/session-revocations.store';
import { RedisCredentialChanges } from './stream/data/credential-changes';
import { KeyRequestStore } from './accounts/data/key-requests.store';
import type { AuthDeps } from './edge/domain/authenticate.use-case';
import type { CreateKeyDeps } from './accounts/domain/create-key.use-case';
import { KeyCache } from './edge/domain/key-cache';
import { ResilientLoginAttempts } from './sessions/domain/login-throttle';
import type { PasswordLoginDeps } from './sessions/domain/password-login.use-case';
import { passwordHashing, scryptPasswords } from './accounts/domain/password';
import { PasswordWork } from './accounts/domain/password-work';
import { SecretSealer } from './accounts/domain/sealed-secret';
import { SessionStore } from './sessions/domain/sessions';
import { DeviceCookies } from './sessions/domain/device-cookies';
import { LocalFallbackLimiter, type SharedLimiter } from './edge/domain/rate-limit';
import { InFlightLimit } from './edge/domain/in-flight';
import { OpenStreams } from './stream/domain/open-streams';
import { StreamSlotStore } from './stream/data/stream-slots.store';
import { RequestThrottle, clientGroup } from './edge/domain/throttle';
import { closeUpstream, createUpstream, type Upstream } from './http/upstream';

export interface GatewayDependencies {
  mongo: Connection;
  redis: RedisClient;
  repository: AccountRepository;
  auth: AuthDeps;
  /** The account use cases, their ports wired to the edge's shared limiter and key cache. */
  accounts: CreateKeyDeps & { limiter: SharedLimiter };
  logins: PasswordLoginDeps;
  usage: UsageStore;
  upstreams: { signals: Upstream; stats: Upstream; webhooks: Upstream };
  tokens: InternalTokenCache;
  /** Live streams open through this process. */
  streams: OpenStreams;
  /** None: usage flushes on its own timer and at close. */
  workers: BackgroundWorker[];
  close(): Promise<void>;
}

export async function createDependencies(
  config: GatewayConfig,
  logger: Logger,
): Promise<GatewayDependencies> {
  const mongo = await connectMongo(config.MONGO_URL, config.GATEWAY_DB, logger);
  const repository = new AccountRepository(mongo);
  await repository.ensureIndexes();
  // No auto-pipelining: the limiter batches the checks that arrive together itself (one call per
  // account, several accounts in one pipelined write), and auto-pipelining adds CPU to every
  // lone call.
  const redis = await connectRedis(config.REDIS_URL, logger, 3000);
  const cache = new KeyCache();
  // Redis may have lost the revoked-key set while it was away: forget what we cached.
  let wasReady = redis.status === 'ready';
  redis.on('ready', () => {
    if (wasReady) cache.clear();
    wasReady = true;
  });
  const credentialChanges = new RedisCredentialChanges(redis, config.REDIS_PREFIX);
  const limiter = new RateLimitStore(redis, config.REDIS_PREFIX, credentialChanges);
  const lastTouched = new Map<string, number>();
  const auth: AuthDeps = {
    keys: repository,
    cache,
    limiter,
    fallback: new LocalFallbackLimiter(),
    guard: new RequestThrottle(limiter, {
      name: 'ip',
      perMinute: config.IP_RATE_LIMIT_PER_MINUTE,
      group: clientGroup,
    }),
    inFlight: new InFlightLimit(config.ACCOUNT_MAX_IN_FLIGHT),
    capDefaults: defaultCaps(config),
    pepper: config.API_KEY_PEPPER,
    knownKeyWindowMs: config.KNOWN_KEY_WINDOW_MS,
    // last_used_at is informational: written at most once a minute per key, off the request path.
    onKeyUsed: (keyId) => {
      const now = Date.now();
      if (now - (lastTouched.get(keyId) ?? 0) < 60_000) return;
      if (lastTouched.size > 100_000) lastTouched.clear();
      lastTouched.set(keyId, now);
      repository
        .touchKey(keyId, new Date(now))
        .catch((err: Error) => logger.warn({ err: err.message }, 'last_used_at not saved'));
    },
  };
  const upstreamOptions = { connections: config.UPSTREAM_CONNECTIONS };
  const upstreams = {
    signals: createUpstream('signals', config.SIGNALS_URL, upstreamOptions),
    stats: createUpstream('stats', config.STATS_URL, upstreamOptions),
    webhooks: createUpstream('webhooks', config.WEBHOOKS_URL, upstreamOptions),
  };
  const usage = new UsageStore(redis, config.REDIS_PREFIX, logger);
  const passwords = scryptPasswords(passwordHashing[config.PASSWORD_HASHING]);
  const work = new PasswordWork({
    running: config.PASSWORD_HASHES_AT_ONCE,
    waiting: config.PASSWORD_HASHES_WAITING,
    waitingPerClient: config.PASSWORD_HASHES_WAITING_PER_CLIENT,
  });
  const sessionRevocations = new SessionRevocationStore(redis, config.REDIS_PREFIX, credentialChanges);
  const streams = new OpenStreams(
    new StreamSlotStore(redis, config.REDIS_PREFIX),
    limiter,
    sessionRevocations,
    config.STREAM_CHECK_INTERVAL_MS,
  );
  const changesHeard = await credentialChanges.listen((accountId) => streams.credentialsChanged(accountId));
  return {
    mongo,
    redis,
    repository,
    auth,
    accounts: {
      repository,
      limiter,
      cache,
      pepper: config.API_KEY_PEPPER,
      passwords,
      work,
      capDefaults: defaultCaps(config),
      keyRequests: new KeyRequestStore(mongo),
      sealer: new SecretSealer(config.API_KEY_PEPPER, 'api-key idempotent replay'),
    },
    logins: {
      accounts: repository,
      passwords,
      work,
      attempts: new ResilientLoginAttempts(new LoginAttemptStore(redis, config.REDIS_PREFIX)),
      sessions: new SessionStore(
        config.SESSION_JWT_SECRET,
        config.SESSION_TTL_SECONDS,
        sessionRevocations,
        config.SESSION_RENEWAL_GRACE_MS,
      ),
      // Its own purpose in the HMAC input: a device signature is no session or CSRF token.
      devices: new DeviceCookies(config.SESSION_JWT_SECRET),
    },
    usage,
    upstreams,
    streams,
    workers: [],
    tokens: new InternalTokenCache((audience, accountId, ttl, limits) =>
      signInternalToken(config.INTERNAL_JWT_PRIVATE_KEY, audience, accountId, ttl, limits),
    ),
    async close() {
      await Promise.all(Object.values(upstreams).map(closeUpstream));
      await usage.close();
      await changesHeard.close();
      redis.disconnect();
      await mongo.close();
    },
  };
}

/** Closed in this order at shutdown, after the HTTP server. */
export const connections = (deps: GatewayDependencies): Array<[string, () => Promise<void>]> => [
  ['upstreams+usage+redis+mongo', () => deps.close()],
];

/**
 * What the gateway can serve without (readiness says "degraded", stays 200): with MongoDB down,
 * every key in memory (limits in Redis); with Redis down, keys seen recently (local limiter);
 * with both down, still those. Not ready only when both are down and it knows no key.
 */
export const servesWith =
  (deps: GatewayDependencies, knownKeyWindowMs: number) =>
  (up: (check: string) => boolean): boolean =>
    up('mongo') || up('redis') || deps.auth.cache.servesRecentKeys(knownKeyWindowMs);

export const healthChecks = (deps: GatewayDependencies) => ({
  mongo: () => pingMongo(deps.mongo),
  redis: () => deps.redis.ping(),
});
