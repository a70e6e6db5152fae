import { connectMongo, connectRedis, type Logger } from '@signal/service-kit';
import { AccountRepository } from '../accounts/data/account.repository';
import { RateLimitStore } from '../edge/data/rate-limit.store';
import { RedisCredentialChanges } from '../stream/data/credential-changes';
import type { AccountDeps } from '../accounts/domain/accounts.use-cases';
import type { AccountStore } from '../accounts/domain/ports';
import type { PasswordAccounts } from '../accounts/domain/ports';
import { KeyCache } from '../edge/domain/key-cache';
import { scryptPasswords } from '../accounts/domain/password';
import { PasswordWork } from '../accounts/domain/password-work';
import { defaultCaps } from '../config';

export interface AdminConfig {
  MONGO_URL: string;
  GATEWAY_DB: string;
  REDIS_URL: string;
  REDIS_PREFIX: string;
  API_KEY_PEPPER: string;
  DEFAULT_PLAN_MAX_KEYS: number;
  DEFAULT_PLAN_MAX_WEBHOOKS: number;
  DEFAULT_PLAN_MAX_STREAMS: number;
}

/** What the commands need: the account use cases, and (demo) an account found by its email. */
export interface AdminDeps extends AccountDeps {
  repository: AccountStore & Pick<PasswordAccounts, 'findAccountByEmail'>;
}

/** The slice of the gateway the operator CLI needs: accounts in MongoDB, plans and revocations in Redis. */
export async function createDependencies(
  config: AdminConfig,
  logger: Logger,
  redisReadyWaitMs = 15_000,
): Promise<{ accounts: AdminDeps; close(): Promise<void> }> {
  const mongo = await connectMongo(config.MONGO_URL, config.GATEWAY_DB);
  const repository = new AccountRepository(mongo);
  await repository.ensureIndexes();
  // A CLI has no retry loop behind it: wait longer than a service for the connection, then
  // say plainly that Redis is not there.
  const redis = await connectRedis(config.REDIS_URL, logger, redisReadyWaitMs);
  if (redis.status !== 'ready') {
    redis.disconnect();
    await mongo.close();
    throw new Error('Redis is not reachable (REDIS_URL); nothing was changed');
  }
  return {
    accounts: {
      repository,
      // Its revocations end the key's streams on every gateway at once, as the API's do.
      limiter: new RateLimitStore(
        redis,
        config.REDIS_PREFIX,
        new RedisCredentialChanges(redis, config.REDIS_PREFIX),
      ),
      cache: new KeyCache(),
      pepper: config.API_KEY_PEPPER,
      passwords: scryptPasswords(),
      // One operator, one command at a time.
      work: new PasswordWork({ running: 1, waiting: Infinity, waitingPerClient: Infinity }),
      capDefaults: defaultCaps(config),
    },
    async close() {
      redis.disconnect();
      await mongo.close();
    },
  };
}
