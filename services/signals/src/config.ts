import { STREAM_MIN_RETENTION_HOURS } from '@signal/contracts';
import { env, internalKeyEnv, observabilityEnv, parseConfig } from '@signal/service-kit';
import { z } from 'zod';

export const configSchema = z.object({
  NODE_ENV: env.nodeEnv(),
  PORT: env.port(4001),
  HOST: z.string().default('127.0.0.1'),
  LOG_LEVEL: env.logLevel(),
  ...observabilityEnv(9401),
  MONGO_URL: env.url(['mongodb', 'mongodb+srv']),
  SIGNALS_DB: z.string().default('signals'),
  AMQP_URL: env.urlList(['amqp', 'amqps']),
  /** The timeline index (list and detail reads) lives here, under REDIS_PREFIX. */
  REDIS_URL: env.redisUrl(),
  REDIS_PREFIX: z.string().default(''),
  /** How often the timeline index maintenance checks for a lost index and retries failed index updates. */
  TIMELINE_CHECK_INTERVAL_MS: env.int(1000, 50),
  AMQP_PREFIX: z.string().default(''),
  AMQP_QUEUE_TYPE: z.enum(['quorum', 'classic']).default('quorum'),
  INTERNAL_JWT_PUBLIC_KEY: internalKeyEnv.publicKey(),
  /** Credential of the ingest API (simulator, data pipeline); distinct from the gateway's. */
  INGEST_TOKEN: env.secret(24),
  OUTBOX_INTERVAL_MS: env.int(200, 10),
  /** Full outbox sweep (what write-time hints missed: broker outages, crashes). */
  OUTBOX_SWEEP_INTERVAL_MS: env.int(5000, 100),
  /** List queries on MongoDB at once while the timeline index is away; more get 503 + Retry-After. */
  STORE_FALLBACK_CONCURRENCY: env.int(4, 1),
  /**
   * Milliseconds such a fallback read may take: then it is 503 + Retry-After and the store stops
   * it (its time limit), so the store never reads on for a client already answered.
   */
  STORE_FALLBACK_DEADLINE_MS: env.int(5000, 100),
  /**
   * How long the live stream's event log keeps an event (a client reconnecting with Last-Event-ID
   * within it misses nothing). The API promises at least 24 hours.
   */
  STREAM_RETENTION_HOURS: env.int(25, STREAM_MIN_RETENTION_HOURS),
  /**
   * Heartbeat comment on every open stream (the signals service's, the gateway's feed among them;
   * the gateway's to its clients). Well under the gateway's STREAM_IDLE_TIMEOUT_MS, which would
   * otherwise end a quiet stream.
   */
  STREAM_HEARTBEAT_MS: z.coerce.number().int().min(10).max(9000).default(5000),
  /** A stream whose unsent output passes this is sent `overflow` and ended (a client not reading). */
  STREAM_MAX_BUFFERED_BYTES: env.int(256 * 1024, 1024),
});
export type SignalsConfig = z.infer<typeof configSchema>;

export const loadConfig = (e: NodeJS.ProcessEnv = process.env): SignalsConfig =>
  parseConfig('signals', configSchema, e);
