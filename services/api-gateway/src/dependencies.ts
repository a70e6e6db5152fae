import { connectMongo, connectRedis, pingMongo, type Logger } from '@signal/service-kit';
import type Redis from 'ioredis';
import type { Connection } from 'mongoose';
import type { GatewayConfig } from './config';
import { accountModel, apiKeyModel } from './data/account.model';
import { AccountRepository } from './data/account.repository';
import type { AccountDeps } from './domain/accounts.use-cases';
import type { AuthDeps } from './domain/authenticate.use-case';
import { KeyCache } from './domain/key-cache';
import { LocalFallbackLimiter, RateLimiter } from './domain/rate-limiter';
import { InternalTokenCache, createUpstream, type Upstream } from './http/proxy';

export interface GatewayDependencies {
  mongo: Connection;
  redis: Redis;
  repository: AccountRepository;
  auth: AuthDeps;
  accounts: AccountDeps;
  upstreams: { signals: Upstream; stats: Upstream; webhooks: Upstream };
  tokens: InternalTokenCache;
  close(): Promise<void>;
}

export async function createDependencies(
  config: GatewayConfig,
  logger: Logger,
): Promise<GatewayDependencies> {
  const mongo = await connectMongo(config.MONGO_URL, config.GATEWAY_DB, logger);
  const repository = new AccountRepository(accountModel(mongo), apiKeyModel(mongo));
  await repository.ensureIndexes();
  const redis = await connectRedis(config.REDIS_URL, logger);
  const cache = new KeyCache();
  // Redis may have lost the revoked-key set while it was away: forget what we cached.
  let wasReady = redis.status === 'ready';
  redis.on('ready', () => {
    if (wasReady) cache.clear();
    wasReady = true;
  });
  const limiter = new RateLimiter(redis, config.REDIS_PREFIX);
  const lastTouched = new Map<string, number>();
  const auth: AuthDeps = {
    repository,
    cache,
    limiter,
    fallback: new LocalFallbackLimiter(),
    pepper: config.API_KEY_PEPPER,
    ipPerMinute: config.IP_RATE_LIMIT_PER_MINUTE,
    knownKeyWindowMs: config.KNOWN_KEY_WINDOW_MS,
    // last_used_at is informational: written at most once a minute per key, off the request path.
    onKeyUsed: (keyId) => {
      const now = Date.now();
      if (now - (lastTouched.get(keyId) ?? 0) < 60_000) return;
      lastTouched.set(keyId, now);
      repository
        .touchKey(keyId, new Date(now))
        .catch((err: Error) => logger.warn({ err: err.message }, 'last_used_at not saved'));
    },
  };
  const upstreams = {
    signals: createUpstream('signals', config.SIGNALS_URL, config.UPSTREAM_CONNECTIONS),
    stats: createUpstream('stats', config.STATS_URL, config.UPSTREAM_CONNECTIONS),
    webhooks: createUpstream('webhooks', config.WEBHOOKS_URL, config.UPSTREAM_CONNECTIONS),
  };
  return {
    mongo,
    redis,
    repository,
    auth,
    accounts: { repository, limiter, cache, pepper: config.API_KEY_PEPPER },
    upstreams,
    tokens: new InternalTokenCache(config.INTERNAL_JWT_SECRET),
    async close() {
      await Promise.all(Object.values(upstreams).map((u) => u.pool.close()));
      redis.disconnect();
      await mongo.close();
    },
  };
}

export const healthChecks = (deps: GatewayDependencies) => ({
  mongo: () => pingMongo(deps.mongo),
  redis: () => deps.redis.ping(),
});
