import { connectMongo, connectRedis, type Logger } from '@signal/service-kit';
import { accountModel, apiKeyModel } from '../data/account.model';
import { AccountRepository } from '../data/account.repository';
import type { AccountDeps } from '../domain/accounts.use-cases';
import { KeyCache } from '../domain/key-cache';
import { RateLimiter } from '../domain/rate-limiter';

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
  const repository = new AccountRepository(accountModel(mongo), apiKeyModel(mongo));
  await repository.ensureIndexes();
  const redis = await connectRedis(config.REDIS_URL, logger);
  return {
    accounts: {
      repository,
      limiter: new RateLimiter(redis, config.REDIS_PREFIX),
      cache: new KeyCache(),
      pepper: config.API_KEY_PEPPER,
    },
    async close() {
      redis.disconnect();
      await mongo.close();
    },
  };
}
