import { connectMongo, connectRedis, type Logger } from '@signal/service-kit';
import { AccountRepository } from '../data/account.repository';
import { RateLimitStore } from '../data/rate-limit.store';
import type { AccountDeps } from '../domain/accounts.use-cases';
import { KeyCache } from '../domain/key-cache';

export interface AdminConfig {
  MONGO_URL: string;
  GATEWAY_DB: string;
  REDIS_URL: string;
  REDIS_PREFIX: string;
  API_KEY_PEPPER: string;
}

/** The slice of the gateway the operator CLI needs: accounts in MongoDB, plans and revocations in Redis. */
export async function createDependencies(
  config: AdminConfig,
  logger: Logger,
): Promise<{ accounts: AccountDeps; close(): Promise<void> }> {
  const mongo = await connectMongo(config.MONGO_URL, config.GATEWAY_DB);
  const repository = new AccountRepository(mongo);
  await repository.ensureIndexes();
  const redis = await connectRedis(config.REDIS_URL, logger);
  return {
    accounts: {
      repository,
      limiter: new RateLimitStore(redis, config.REDIS_PREFIX),
      cache: new KeyCache(),
      pepper: config.API_KEY_PEPPER,
    },
    async close() {
      redis.disconnect();
      await mongo.close();
    },
  };
}
