import {
  GracefulShutdown,
  connectRedis,
  deleteKeysMatching,
  startHttpServer,
  valueOrThrow,
  type RunningServer,
} from '@signal/service-kit';
import { TEST_INTERNAL_KEYS, infraUrls, silentLogger, testDatabase } from '@signal/test-kit';
import { randomBytes } from 'node:crypto';
import { appFromDependencies } from '../src/app';
import { loadConfig, type GatewayConfig } from '../src/config';
import { createDependencies, type GatewayDependencies } from '../src/dependencies';
import type { Plan } from '../src/accounts/domain/records';
import type { PasswordHasher } from '../src/accounts/domain/password';
import { createAccount, createApiKey } from '../src/accounts/domain/accounts.use-cases';

export interface GatewayHarness {
  url: string;
  config: GatewayConfig;
  deps: GatewayDependencies;
  /** A new account with the given plan and one key for it. */
  account(
    plan?: Plan,
    password?: string,
  ): Promise<{ accountId: string; key: string; keyId: string; email: string }>;
  stop(): Promise<void>;
}

export interface GatewayOptions {
  label: string;
  upstreams: { signals: string; stats: string; webhooks: string };
  env?: Record<string, string>;
  /** Share database and Redis prefix with another instance (multi-instance tests). */
  share?: { dbName: string; redisPrefix: string };
  /** Wraps the password hasher (a test that holds a derivation until it lets it end). */
  passwords?: (real: PasswordHasher) => PasswordHasher;
}

export async function startGateway(options: GatewayOptions): Promise<GatewayHarness> {
  const db = testDatabase(options.label);
  const { redisUrl } = infraUrls();
  const config = loadConfig({
    NODE_ENV: 'test',
    PORT: '0',
    LOG_LEVEL: 'silent',
    MONGO_URL: db.url,
    GATEWAY_DB: options.share?.dbName ?? db.dbName,
    REDIS_URL: redisUrl,
    REDIS_PREFIX: options.share?.redisPrefix ?? `t:${randomBytes(6).toString('hex')}:`,
    INTERNAL_JWT_PRIVATE_KEY: TEST_INTERNAL_KEYS.privateKey,
    API_KEY_PEPPER: 'test-pepper-0123456789abcdef0123456789',
    SESSION_JWT_SECRET: 'test-session-secret-0123456789abcdef0123',
    SIGNALS_URL: options.upstreams.signals,
    STATS_URL: options.upstreams.stats,
    WEBHOOKS_URL: options.upstreams.webhooks,
    // Reached only by a hung service: a loaded machine's slow answer is still an answer (the
    // timeout's own test sets a short one).
    UPSTREAM_TIMEOUT_MS: '30000',
    IP_RATE_LIMIT_PER_MINUTE: '1000',
    // Tests that send hundreds of one account's requests at once are about the windows; the
    // bound on requests in flight has its own tests.
    ACCOUNT_MAX_IN_FLIGHT: '10000',
    SIGNUPS_PER_ADDRESS_PER_MINUTE: '1000',
    SIGNUPS_PER_ADDRESS_PER_DAY: '100000',
    // ~2 ms per account instead of ~320 ms of CPU; the cost's own tests ask for owasp.
    PASSWORD_HASHING: 'fast-tests-only',
    // Tests that log in many times at once are about the throttle; the bound on password work
    // has its own test.
    PASSWORD_HASHES_WAITING: '10000',
    PASSWORD_HASHES_WAITING_PER_CLIENT: '10000',
    ...options.env,
  });
  const deps = await createDependencies(config, silentLogger);
  if (options.passwords) {
    const wrapped = options.passwords(deps.logins.passwords);
    deps.logins.passwords = wrapped;
    deps.accounts.passwords = wrapped;
  }
  const app = appFromDependencies(config, deps, silentLogger, new GracefulShutdown(silentLogger));
  const http: RunningServer = await startHttpServer(app, 0);
  let n = 0;
  return {
    url: http.url,
    config,
    deps,
    async account(plan: Plan = { per_minute: 60, per_day: 10_000 }, password) {
      n += 1;
      const email = `user${n}-${randomBytes(3).toString('hex')}@example.com`;
      const acc = valueOrThrow(await createAccount(deps.accounts, email, password, plan));
      const key = valueOrThrow(await createApiKey(deps.accounts, acc.id, 'test key'));
      return { accountId: acc.id, key: key.key, keyId: key.id, email };
    },
    async stop() {
      await http.close();
      if (!options.share) await deps.mongo.dropDatabase().catch(() => undefined);
      await deps.close();
      if (options.share) return;
      // The test's keys go once nothing of it writes any more: usage and streams ended by the
      // close write theirs during it. Through the Redis itself, not a test's proxy to it.
      const redis = await connectRedis(redisUrl, silentLogger).catch(() => undefined);
      if (redis) await deleteKeysMatching(redis, `${config.REDIS_PREFIX}*`).catch(() => undefined);
      redis?.disconnect();
    },
  };
}

export { EVERYTHING_BUT_DATE } from '@signal/test-kit';
