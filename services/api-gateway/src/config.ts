import { env, internalKeyEnv, observabilityEnv, parseConfig } from '@signal/service-kit';
import { z } from 'zod';
import type { Plan } from './data/account.model';
import { planIsCoherent } from './domain/accounts.use-cases';
import { gatewayWorkers } from './workers';

/** The plan new accounts get (the spec's listed plan by default): the one source of those numbers. */
export const defaultPlanEnv = {
  DEFAULT_PLAN_PER_MINUTE: env.int(60, 1),
  DEFAULT_PLAN_PER_DAY: env.int(10_000, 1),
};
type DefaultPlanEnv = { DEFAULT_PLAN_PER_MINUTE: number; DEFAULT_PLAN_PER_DAY: number };
export const defaultPlan = (c: DefaultPlanEnv): Plan => ({
  per_minute: c.DEFAULT_PLAN_PER_MINUTE,
  per_day: c.DEFAULT_PLAN_PER_DAY,
});
/** The default plan obeys the rule every plan does (gateway and operator CLI configs alike). */
export const defaultPlanRule = {
  check: (c: DefaultPlanEnv): boolean => planIsCoherent(defaultPlan(c)),
  params: { message: 'must be at least DEFAULT_PLAN_PER_MINUTE', path: ['DEFAULT_PLAN_PER_DAY'] },
};

export const configSchema = z
  .object({
    NODE_ENV: env.nodeEnv(),
    PORT: env.port(4000),
    HOST: z.string().default('127.0.0.1'),
    LOG_LEVEL: env.logLevel(),
    ...observabilityEnv(9400),
    MONGO_URL: env.url(['mongodb', 'mongodb+srv']),
    GATEWAY_DB: z.string().default('gateway'),
    REDIS_URL: env.redisUrl(),
    REDIS_PREFIX: z.string().default(''),
    /** ECDSA P-256 key the gateway signs service tokens with (services hold only its public half). */
    INTERNAL_JWT_PRIVATE_KEY: internalKeyEnv.privateKey(),
    /** Server-side pepper of API key hashes: a database leak alone does not reveal usable keys. */
    API_KEY_PEPPER: env.secret(),
    SESSION_JWT_SECRET: env.secret(),
    SESSION_TTL_SECONDS: env.int(900, 60),
    /**
     * The cost of password hashes: scrypt at OWASP's cost; `fast-tests-only` (1 MiB, for the test
     * suite's many accounts) is refused unless NODE_ENV=test.
     */
    PASSWORD_HASHING: z.enum(['owasp', 'fast-tests-only']).default('owasp'),
    /** Dashboard self-service sign-up; default: open outside production, closed in production. */
    SIGNUP_ENABLED: z.enum(['true', 'false']).optional(),
    SIGNALS_URL: env.url(['http', 'https']),
    STATS_URL: env.url(['http', 'https']),
    WEBHOOKS_URL: env.url(['http', 'https']),
    UPSTREAM_TIMEOUT_MS: env.int(10_000, 100),
    UPSTREAM_CONNECTIONS: env.int(64, 1),
    /** Requests in flight per upstream connection (undici pipelines only idempotent ones). */
    UPSTREAM_PIPELINING: env.int(1, 1),
    /**
     * GET and HEAD in flight per connection on the raw client: a turn's requests go out packed
     * onto as few connections as this allows, one write each (raw-upstream.ts says why); 1 sends
     * none behind another.
     */
    UPSTREAM_RAW_PIPELINING: env.int(10, 1),
    /**
     * The client of GET and HEAD to the services: `raw` (keep-alive sockets, http/raw-upstream.ts)
     * or `undici` (which carries every request with a body either way): the way back, should a
     * service ever answer in a way the raw client refuses.
     */
    UPSTREAM_CLIENT: z.enum(['raw', 'undici']).default('raw'),
    /**
     * Who reads API-path requests: `raw` (http/raw-front.ts takes the plain shape of the hot path,
     * a complete GET or HEAD head without a body, and hands every other connection to node:http) or
     * `node` (node:http reads everything). With tracing on, node:http reads everything either
     * way: its instrumentation is what makes the request spans.
     */
    API_FRONT: z.enum(['raw', 'node']).default('raw'),
    /** Read only to know whether tracing is on (@signal/telemetry reads them itself). */
    OTEL_EXPORTER_OTLP_ENDPOINT: z.string().optional(),
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: z.string().optional(),
    OTEL_SDK_DISABLED: z.string().optional(),
    /**
     * Gateway processes on this host (node:cluster, one port): `auto` is one per core. Limits
     * stay exact across them: every count is one atomic call to the shared Redis.
     */
    GATEWAY_WORKERS: z
      .string()
      .regex(/^(auto|[1-9]\d{0,2})$/, 'must be auto or a whole number from 1')
      .default('1')
      .transform(gatewayWorkers),
    /** Brute-force guard: requests without a valid API key, per client IP and minute. */
    IP_RATE_LIMIT_PER_MINUTE: env.int(60, 1),
    ...defaultPlanEnv,
    /** How long a key stays "known" for the Redis-down fallback limiter. */
    KNOWN_KEY_WINDOW_MS: env.int(10 * 60_000, 0),
    TRUST_PROXY: z.string().default('false'),
    PUBLIC_URL: z.string().url().optional(),
    /**
     * Benchmarks only: proxy every API request as this account with no key check, no limits and
     * no Redis call, so a bench can measure what authentication and limits cost (refused in
     * production).
     */
    BENCH_AUTH_OFF_ACCOUNT: z
      .string()
      .regex(/^acc_[A-Za-z0-9]+$/, 'must be an account id')
      .optional(),
    /**
     * Benchmarks only: serve the API path behind the Express app's middleware stack instead of
     * beside it, to measure what Express costs on that path (refused in production).
     */
    BENCH_API_PATH_VIA_EXPRESS: env.bool(false),
  })
  .refine((c) => !(c.NODE_ENV === 'production' && c.BENCH_AUTH_OFF_ACCOUNT !== undefined), {
    message: 'is a benchmark setting and must not be set in production',
    path: ['BENCH_AUTH_OFF_ACCOUNT'],
  })
  .refine((c) => !(c.NODE_ENV === 'production' && c.BENCH_API_PATH_VIA_EXPRESS), {
    message: 'is a benchmark setting and must not be set in production',
    path: ['BENCH_API_PATH_VIA_EXPRESS'],
  })
  .refine((c) => c.NODE_ENV === 'test' || c.PASSWORD_HASHING === 'owasp', {
    message: 'fast-tests-only is for the test suite: it is refused unless NODE_ENV=test',
    path: ['PASSWORD_HASHING'],
  })
  .refine(defaultPlanRule.check, defaultPlanRule.params)
  .refine((c) => c.API_KEY_PEPPER !== c.SESSION_JWT_SECRET, {
    message: 'API_KEY_PEPPER and SESSION_JWT_SECRET must differ',
    path: ['API_KEY_PEPPER'],
  });
export type GatewayConfig = z.infer<typeof configSchema>;

export const loadConfig = (e: NodeJS.ProcessEnv = process.env): GatewayConfig =>
  parseConfig('api-gateway', configSchema, e);
