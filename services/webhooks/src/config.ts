import { MAX_DELIVERY_LANES } from '@signal/messaging';
import { env, internalKeyEnv, observabilityEnv, parseConfig } from '@signal/service-kit';
import { Resolver } from 'node:dns';
import { z } from 'zod';
import type { GuardPolicy } from './domain/url-guard';

const delays = z
  .string()
  .regex(/^\d+(,\d+)*$/, 'must be comma-separated milliseconds, e.g. 10000,120000,900000')
  .transform((s) => s.split(',').map(Number));

/** Name servers as c-ares takes them (`1.1.1.1`, `1.1.1.1:53`, `[2606:4700::1111]:53`): refused at start-up if it would not. */
const nameServers = z
  .string()
  .transform((s) =>
    s
      .split(',')
      .map((part) => part.trim())
      .filter((part) => part !== ''),
  )
  .superRefine((servers, ctx) => {
    try {
      new Resolver().setServers(servers);
    } catch (err) {
      ctx.addIssue({ code: 'custom', message: err instanceof Error ? err.message : String(err) });
    }
  });

export const configSchema = z
  .object({
    NODE_ENV: env.nodeEnv(),
    PORT: env.port(4003),
    HOST: z.string().default('127.0.0.1'),
    LOG_LEVEL: env.logLevel(),
    ...observabilityEnv(9403),
    MONGO_URL: env.url(['mongodb', 'mongodb+srv']),
    WEBHOOKS_DB: z.string().default('webhooks'),
    AMQP_URL: env.urlList(['amqp', 'amqps']),
    AMQP_PREFIX: z.string().default(''),
    AMQP_QUEUE_TYPE: z.enum(['quorum', 'classic']).default('quorum'),
    INTERNAL_JWT_PUBLIC_KEY: internalKeyEnv.publicKey(),
    /**
     * Subscriptions an account may hold when the gateway's token carries no plan limit
     * (`limits.webhooks`); creating one more returns 409 with the limit in the message.
     */
    WEBHOOKS_MAX_PER_ACCOUNT: env.int(25, 0),
    /** Spacing of the 3 retries after the first attempt; ±20 % jitter is added. */
    WEBHOOK_RETRY_DELAYS_MS: delays.default([10_000, 120_000, 900_000]),
    WEBHOOK_TIMEOUT_MS: env.int(5000, 100),
    WEBHOOK_MAX_RESPONSE_BYTES: env.int(4096, 0),
    /**
     * Attempts in flight or waiting per subscription per worker, and never more than a quarter
     * of its account's (WEBHOOK_CONCURRENCY_PER_ACCOUNT, or less when other accounts are busy):
     * one slow receiver cannot starve the rest of its account. Beyond it a job waits in the
     * broker, a second the first time, twice as long each time after, up to 16. There is no bound per receiving host: subscriptions on one host (a relay
     * service's, whatever their accounts) never wait for each other's connections.
     */
    WEBHOOK_CONCURRENCY_PER_SUBSCRIPTION: env.int(10, 1),
    /**
     * POSTs in flight per account per worker, at most; more jobs of the account may wait in the
     * worker, unacknowledged, for one of them to finish (at most WEBHOOK_TIMEOUT_MS, then in the
     * broker, 1 s doubling to 16 s). Everything an account holds, in flight or waiting, is within its
     * fair share of WEBHOOK_WORKER_PREFETCH (half of it alone, a third each with another busy
     * account, …) and what others leave idle, always leaving a share free: one account's slow
     * receivers cannot take every job the worker holds.
     */
    WEBHOOK_CONCURRENCY_PER_ACCOUNT: env.int(1000, 1),
    /**
     * Delivery jobs a worker holds at once per queue (each waits for its place, its POST and its
     * batched record), and what accounts' fair shares divide. With a backlog in the queue every
     * job over its account's share is put back to wait in the broker, so the share must hold what
     * a busy account has in flight while the store is slow: at 1,000 an account alone held 500
     * and the broker's work for jobs put back was a third of the machine at 2,000 attempts/s
     * (docs/benchmarks.md, webhooks).
     */
    WEBHOOK_WORKER_PREFETCH: env.int(4000, 1),
    /**
     * Jobs over their account's share put back to wait in the broker (a second, doubling each time
     * the same job is put back, up to 16), at most this many a second per worker; the rest wait in the worker, unacknowledged, for a place of their
     * account (at most WEBHOOK_TIMEOUT_MS), unless none of the account's POSTs finished for a
     * second (its receivers hang): those are put back whatever the budget. A put-back lets the
     * worker reach what is behind a busy account in the queue, and costs the broker ~0.5 ms of
     * CPU: unbounded, jobs put back and refilled at once took the CPU the worker needed to catch
     * up (docs/benchmarks.md, webhooks).
     */
    WEBHOOK_PUT_BACKS_PER_SECOND: env.int(50, 1),
    /**
     * Lanes of first attempts. Fan-out puts an account's first attempts in its own lane (a hash
     * of its id), or in a second one (another hash) while this worker holds half a lane's
     * prefetch from its own; the worker takes from every lane. One account's backlog (a burst,
     * receivers that hang) waits in its lanes, and another account's first attempts are taken at
     * once unless both its lanes are the busy account's (1 time in 120 with 16 lanes). With fewer
     * lanes more accounts share them; with one, an account whose receivers hang holds every other
     * account's first attempts behind its own (docs/benchmarks.md, "Hostile neighbours"). A job
     * not taken from its lane within a minute moves to `webhooks.deliveries`, which every release
     * reads (a rollback, fewer lanes). The API reads it too (a test event goes to its account's
     * own lane): the same on both.
     */
    WEBHOOK_LANES: env.int(16, 1, MAX_DELIVERY_LANES),
    /**
     * Jobs a worker holds at once per lane: the most one account takes from a lane (POSTs in
     * flight, jobs waiting for a place or their record), beyond which its first attempts wait in
     * the lane at no cost to anyone. A first attempt whose subscription has its limit in flight
     * waits here too (up to 12 × WEBHOOK_TIMEOUT_MS, a quarter of these places per subscription)
     * rather than going round the broker. All lanes full, a worker holds WEBHOOK_LANES times this
     * many jobs (with ~1 KB payloads, ~3 KB each).
     */
    WEBHOOK_LANE_PREFETCH: env.int(1000, 1),
    /** Bus events a worker fans out at once. */
    WEBHOOK_FANOUT_PREFETCH: env.int(50, 1),
    /**
     * Deliveries and attempt records are written in batches: whatever arrived within this
     * window, or as soon as WEBHOOK_WRITE_BATCH wait. The window adds to each delivery's
     * latency; the batch makes a thousand records a second a handful of writes.
     */
    WEBHOOK_WRITE_WINDOW_MS: env.int(5, 0),
    WEBHOOK_WRITE_BATCH: env.int(500, 1),
    /** How long the worker holds subscription reads (changes reach it within this). */
    WEBHOOK_SUBSCRIPTION_CACHE_MS: env.int(1000, 0),
    /** Longest Retry-After (429/503) the worker honours. */
    WEBHOOK_MAX_RETRY_AFTER_MS: env.int(3_600_000, 0),
    /**
     * Recover calls an account may make a minute (each covers a page of up to 100 deliveries);
     * one more is 429 RATE_LIMIT_EXCEEDED with Retry-After.
     */
    WEBHOOK_RECOVER_PER_MINUTE: env.int(10, 1),
    /**
     * Delivery lists one account may have in progress at once in each webhooks API process (a
     * list's cost follows the subscription's history); one more is 429 RATE_LIMIT_EXCEEDED with
     * Retry-After: 1, so one account's lists cannot hold the store for everyone.
     */
    WEBHOOK_LIST_READS_PER_ACCOUNT: env.int(2, 1),
    /**
     * Milliseconds of delivery-list reading one account may take of each second, across every
     * webhooks API process, once its lists took WEBHOOK_LIST_READ_BURST_MS more than that: past it, a list
     * is 429 RATE_LIMIT_EXCEEDED with the Retry-After its time takes to pay back, so one account's
     * lists of a long history cannot take the store's time from every other account's reads.
     */
    WEBHOOK_LIST_READ_MS_PER_SECOND: env.int(250, 10),
    /** Milliseconds of delivery-list reading an account may take at once beyond the rate above. */
    WEBHOOK_LIST_READ_BURST_MS: env.int(2000, 0),
    /**
     * Milliseconds the store may take over one delivery list's read before it stops it: the list
     * is 504 GATEWAY_TIMEOUT and the store reads no longer for a client gone. Under the gateway's
     * UPSTREAM_TIMEOUT_MS (10 s), which answers 504 itself then.
     */
    WEBHOOK_LIST_READ_MAX_MS: env.int(9000, 100),
    /**
     * How often the worker writes what recorded attempts changed in each subscription's health:
     * a change of outcome (succeeded or failed, another status code or error) shows within this.
     */
    WEBHOOK_HEALTH_FLUSH_MS: env.int(1000, 10),
    /**
     * How long what only moves on in a subscription's health (its last attempt's time, its failure
     * counts) may wait to be written while the outcome stays the same: one write per subscription
     * per this, not per flush (0: every flush).
     */
    WEBHOOK_HEALTH_REFRESH_MS: env.int(10_000, 0),
    /**
     * How long a delivery is kept, from its event's time (30 days): then the worker removes it
     * with its attempts (the list, the delivery by id, retry and recover no longer find it).
     * Deleted subscriptions' deliveries go the same way.
     */
    WEBHOOK_RETENTION_MS: env.int(30 * 24 * 3_600_000, 1000),
    /**
     * How long from the end of one retention sweep to the start of the next (every worker replica
     * sweeps; a delivery may outlive its retention by this).
     */
    WEBHOOK_RETENTION_SWEEP_MS: env.int(600_000, 100),
    /** How long a rotated-out secret keeps signing (both signatures are sent). */
    WEBHOOK_SECRET_OVERLAP_MS: env.int(24 * 3_600_000, 0),
    /**
     * Allow http:// and loopback receivers (127.0.0.0/8, ::1, localhost) for local development
     * and tests. Private, link-local and every other special range stay refused.
     */
    WEBHOOK_ALLOW_LOOPBACK_URLS: env.bool(false),
    /**
     * Name servers receivers' host names are asked of, comma-separated IP addresses with an
     * optional port; empty: the system's (/etc/resolv.conf). The worker asks them itself, on its
     * event loop, and keeps each answer for its TTL (at most 5 minutes; a name with no address or
     * no answer, 5 seconds): the system resolver (getaddrinfo) takes one of four shared threads
     * per lookup, so names whose servers never answer made every account's new connections
     * wait (docs/decisions/webhook-dns-resolver.md).
     */
    WEBHOOK_DNS_SERVERS: nameServers.default([]),
    /**
     * A name server's first try's timeout; the second waits twice as long, then the attempt fails
     * as `dns_error`. Keep both tries (3×) under WEBHOOK_TIMEOUT_MS.
     */
    WEBHOOK_DNS_TIMEOUT_MS: env.int(1000, 10),
  })
  .refine((c) => !(c.NODE_ENV === 'production' && c.WEBHOOK_ALLOW_LOOPBACK_URLS), {
    message: 'must not be true in production',
    path: ['WEBHOOK_ALLOW_LOOPBACK_URLS'],
  });
export type WebhooksConfig = z.infer<typeof configSchema>;

export const loadConfig = (e: NodeJS.ProcessEnv = process.env): WebhooksConfig =>
  parseConfig('webhooks', configSchema, e);

/** The URL guard's policy this configuration asks for. */
export const guardPolicy = (c: WebhooksConfig): GuardPolicy => ({
  allowLoopback: c.WEBHOOK_ALLOW_LOOPBACK_URLS,
});
