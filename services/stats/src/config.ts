import { env, internalKeyEnv, observabilityEnv, parseConfig } from '@signal/service-kit';
import { z } from 'zod';

export const configSchema = z.object({
  NODE_ENV: env.nodeEnv(),
  PORT: env.port(4002),
  HOST: z.string().default('127.0.0.1'),
  LOG_LEVEL: env.logLevel(),
  ...observabilityEnv(9402),
  MONGO_URL: env.url(['mongodb', 'mongodb+srv']),
  STATS_DB: z.string().default('stats'),
  REDIS_URL: env.redisUrl(),
  REDIS_PREFIX: z.string().default(''),
  AMQP_URL: env.urlList(['amqp', 'amqps']),
  AMQP_PREFIX: z.string().default(''),
  AMQP_QUEUE_TYPE: z.enum(['quorum', 'classic']).default('quorum'),
  INTERNAL_JWT_PUBLIC_KEY: internalKeyEnv.publicKey(),
  /** A cached response is dropped when newer events arrive, and never served after this. */
  STATS_CACHE_TTL_MS: env.int(5000, 0),
  /** Within this age a cached response is served even if events arrived since (protects the DB under event bursts). */
  STATS_CACHE_MIN_FRESH_MS: env.int(1000, 0),
  /** How often the aggregates check looks whether Redis lost the aggregates (then rebuilds them). */
  STATS_CHECK_INTERVAL_MS: env.int(1000, 50),
  /** Aggregations of the projection at once while the aggregates are away; more get 503 + Retry-After. */
  STORE_FALLBACK_CONCURRENCY: env.int(4, 1),
  /**
   * Milliseconds such a fallback read may take: then it is 503 + Retry-After and the store stops
   * it (its time limit), so the store never reads on for a client already answered.
   */
  STORE_FALLBACK_DEADLINE_MS: env.int(5000, 100),
  /** For the rebuild command: where to read the signals export. */
  SIGNALS_URL: z.string().url().optional(),
  INGEST_TOKEN: z.string().optional(),
});
export type StatsConfig = z.infer<typeof configSchema>;

export const loadConfig = (e: NodeJS.ProcessEnv = process.env): StatsConfig =>
  parseConfig('stats', configSchema, e);
