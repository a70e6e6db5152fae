import { env, internalKeyEnv, observabilityEnv, parseConfig } from '@signal/service-kit';
import { z } from 'zod';
import type { Plan } from './accounts/domain/records';
import type { PlanCaps } from './accounts/domain/plan-caps';
import { planIsCoherent } from './accounts/domain/accounts.use-cases';
import { gatewayWorkers } from './workers';

/**
 * The plan new accounts get (60 requests a minute, 10,000 a day unless set): the one source of
 * those numbers.
 */
export const defaultPlanEnv = {
  DEFAULT_PLAN_PER_MINUTE: env.int(60, 1),
  DEFAULT_PLAN_PER_DAY: env.int(10_000, 1),
  /** Active API keys an account may hold at once, unless its plan says otherwise. */
  DEFAULT_PLAN_MAX_KEYS: env.int(20, 1),
  /** Webhook subscriptions an account may hold, unless its plan says otherwise. */
  DEFAULT_PLAN_MAX_WEBHOOKS: env.int(25, 1),
  /** Live streams an account may have open at once, unless its plan says otherwise. */
  DEFAULT_PLAN_MAX_STREAMS: env.int(5, 1),
};
type CapEnv = {
  DEFAULT_PLAN_MAX_KEYS: number;
  DEFAULT_PLAN_MAX_WEBHOOKS: number;
  DEFAULT_PLAN_MAX_STREAMS: number;
};
/** The caps of a plan that sets none of its own. */
export const defaultCaps = (c: CapEnv): PlanCaps => ({
  keys: c.DEFAULT_PLAN_MAX_KEYS,
  webhooks: c.DEFAULT_PLAN_MAX_WEBHOOKS,
  streams: c.DEFAULT_PLAN_MAX_STREAMS,
});
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
    /** How long a session replaced by a sliding renewal keeps working (requests already in flight). */
    SESSION_RENEWAL_GRACE_MS: env.int(5000, 0),
    /**
     * The cost of password hashes: scrypt at OWASP's cost; `fast-tests-only` (1 MiB, for the test
     * suite's many accounts) is refused unless NODE_ENV=test.
     */
    PASSWORD_HASHING: z.enum(['owasp', 'fast-tests-only']).default('owasp'),
    /**
     * Password hashes (logins, sign-ups, password changes) computed at once per gateway process;
     * each is ~240 ms of one core at OWASP's cost. Unbounded, four logins at once took both cores
     * of a 2-core gateway from every API consumer's requests (docs/decisions/password-work-bounded.md).
     */
    PASSWORD_HASHES_AT_ONCE: env.int(1, 1),
    /**
     * Sign-ins waiting for a hash, all clients together; one more is 503 with Retry-After: 1.
     * Clients (an IPv4 address, an IPv6 /64) take turns in rotation.
     */
    PASSWORD_HASHES_WAITING: env.int(32, 0),
    /** Sign-ins one client may have waiting for a hash; one more is 429 with Retry-After: 1. */
    PASSWORD_HASHES_WAITING_PER_CLIENT: env.int(4, 0),
    /** Dashboard self-service sign-up; default: open outside production, closed in production. */
    SIGNUP_ENABLED: z.enum(['true', 'false']).optional(),
    SIGNALS_URL: env.url(['http', 'https']),
    STATS_URL: env.url(['http', 'https']),
    WEBHOOKS_URL: env.url(['http', 'https']),
    UPSTREAM_TIMEOUT_MS: env.int(10_000, 100),
    /** Keep-alive connections to each service; each carries one request at a time. */
    UPSTREAM_CONNECTIONS: env.int(128, 1),
    /**
     * Requests of one account in progress at once in one gateway process (a request past it is a
     * 429 that uses none of the plan): one account's burst or slow clients take at most this
     * share of the upstream connections.
     */
    ACCOUNT_MAX_IN_FLIGHT: env.int(64, 1),
    /** Open connections one client address (an IPv6 /64) may hold; unbounded behind TRUST_PROXY. */
    CLIENT_MAX_CONNECTIONS: env.int(256, 1),
    /** Bytes of a response held for a client that is not reading it before its connection is cut. */
    MAX_HELD_RESPONSE_BYTES: env.int(512 * 1024, 64 * 1024),
    /** A connection that makes no progress (nothing read or written) this long is cut; a request whose body stopped coming is first told so (400, "not received in time"). A request received whole waits for its answer however long the service takes (the service bounds its own waits). */
    STALLED_CONNECTION_MS: env.int(30_000, 1000),
    /** A live stream with no bytes from the service this long is dead (the service sends heartbeats). */
    STREAM_IDLE_TIMEOUT_MS: env.int(30_000, 1000),
    /**
     * Heartbeat comment on every open stream (the signals service's, the gateway's feed among them;
     * the gateway's to its clients). Well under the gateway's STREAM_IDLE_TIMEOUT_MS, which would
     * otherwise end a quiet stream.
     */
    STREAM_HEARTBEAT_MS: z.coerce.number().int().min(10).max(9000).default(5000),
    /**
     * How often open streams are checked against their credentials by themselves: what ends a
     * stream at its key's expiry, and a revocation whose notice was lost (Redis away). Revocations
     * and ended sessions are announced to every gateway and end their streams at once.
     */
    STREAM_CHECK_INTERVAL_MS: env.int(500, 50),
    /** A stream whose unsent output passes this is sent `overflow` and ended (a client not reading). */
    STREAM_MAX_BUFFERED_BYTES: env.int(256 * 1024, 1024),
    /**
     * Gateway processes on this host (node:cluster, one port): `auto` is one per core. Limits
     * stay exact across them: every count is one atomic call to the shared Redis.
     */
    GATEWAY_WORKERS: z
      .string()
      .regex(/^(auto|[1-9]\d{0,2})$/, 'must be auto or a whole number from 1')
      .default('1')
      .transform(gatewayWorkers),
    /**
     * The per-address guard: requests per client address (an IPv6 /64) and minute that carry no
     * credential or one that fails (bad keys, bad session cookies, failed logins, CSRF failures).
     * A valid API key is never counted or refused by it, on any path; a valid session neither, on
     * the routes it works on.
     */
    IP_RATE_LIMIT_PER_MINUTE: env.int(60, 1),
    /** Sign-up attempts per client address: every attempt counts, whether it made an account or not. */
    SIGNUPS_PER_ADDRESS_PER_MINUTE: env.int(5, 1),
    SIGNUPS_PER_ADDRESS_PER_DAY: env.int(50, 1),
    ...defaultPlanEnv,
    /** How long a key stays "known" for the Redis-down fallback limiter. */
    KNOWN_KEY_WINDOW_MS: env.int(10 * 60_000, 0),
    TRUST_PROXY: z.string().default('false'),
    PUBLIC_URL: z.string().url().optional(),
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
