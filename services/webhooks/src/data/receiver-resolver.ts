import { promises as dns, type LookupAddress, type RecordWithTtl } from 'node:dns';
import { setTimeout as delay } from 'node:timers/promises';
import { isIP } from 'node:net';
import type { Lookup } from '../domain/url-guard';

/**
 * How receivers' host names are resolved: by c-ares on the event loop, answers kept for their
 * TTL. Node's default, `dns.lookup`, runs getaddrinfo on libuv's threadpool (4 threads) with no
 * cache and no timeout of ours: a few subscriptions on names whose name servers never answer
 * held every thread for the system resolver's timeout, and every other account's new connection
 * waited behind them. A c-ares query holds a socket, not a thread, and gives up after
 * `timeoutMs` × `tries` (doubling); queries for one name in flight at once are one query.
 * (docs/decisions/webhook-dns-resolver.md)
 */
export interface ReceiverResolverOptions {
  /** Name servers (`host` or `host:port`); empty: the system's (/etc/resolv.conf). */
  servers: readonly string[];
  /** The first try's timeout; each further try waits twice the one before. */
  timeoutMs: number;
  /** Tries per name server (2). */
  tries?: number;
  /** An answer is kept for its TTL, at most this long (5 minutes). */
  maxTtlMs?: number;
  /** A name with no address, or whose servers failed, is not asked again for this long (5 s). */
  failureTtlMs?: number;
  /** Names kept at most (10,000); the oldest answers go first. */
  maxNames?: number;
  now?: () => number;
}

interface Answer {
  addresses: LookupAddress[];
  /** `ENOTFOUND` (no such name, or no address) or `EAI_AGAIN` (the servers did not answer). */
  error?: 'ENOTFOUND' | 'EAI_AGAIN';
  until: number;
}

/** c-ares codes for a name that has no address of the family asked: an answer, not a failure. */
const NO_ADDRESS = new Set(['ENOTFOUND', 'ENODATA']);

const codeOf = (reason: unknown): string => {
  const code: unknown =
    typeof reason === 'object' && reason !== null ? Reflect.get(reason, 'code') : undefined;
  return typeof code === 'string' ? code : '';
};

/** RFC 6761 §6.3: `localhost` and names under it are the loopback addresses, never asked of DNS. */
const LOCALHOST = /(^|\.)localhost\.?$/i;
const LOOPBACK: LookupAddress[] = [
  { address: '127.0.0.1', family: 4 },
  { address: '::1', family: 6 },
];

/** One family's answer: its records, or the code it failed with. */
interface FamilyAnswer {
  records: RecordWithTtl[];
  code?: string;
}

const settle = (asked: Promise<RecordWithTtl[]>): Promise<FamilyAnswer> =>
  asked.then(
    (records) => ({ records }),
    (reason: unknown) => ({ records: [], code: codeOf(reason) }),
  );

/**
 * RFC 8305 §3's resolution delay: once one family has addresses, the other is waited for this
 * long, then the name goes with what it has. Some name servers drop AAAA questions; waiting for
 * their timeout held every new connection to the name for seconds.
 */
const OTHER_FAMILY_GRACE_MS = 50;
const NOT_IN_TIME: FamilyAnswer = { records: [], code: 'ENODATA' };

/** A family's answer, or none once the other family has had addresses for the grace. */
function graced(mine: Promise<FamilyAnswer>, other: Promise<FamilyAnswer>): Promise<FamilyAnswer> {
  const afterGrace = other.then((answer) =>
    answer.records.length > 0 ? delay(OTHER_FAMILY_GRACE_MS, NOT_IN_TIME, { ref: false }) : mine,
  );
  return Promise.race([mine, afterGrace]);
}

export interface ReceiverResolver {
  /** Answers every address (as `all: true`); the URL guard wrapping it answers what was asked. */
  lookup: Lookup;
  /** Queries sent to name servers so far (a name's A and AAAA count once). */
  readonly queries: number;
  /** Ends the queries in flight: their lookups fail as `EAI_AGAIN` (at shutdown). */
  cancel(): void;
}

export function receiverResolver(options: ReceiverResolverOptions): ReceiverResolver {
  const o = { tries: 2, maxTtlMs: 300_000, failureTtlMs: 5_000, maxNames: 10_000, now: Date.now, ...options };
  const now = o.now;
  const resolver = new dns.Resolver({ timeout: o.timeoutMs, tries: o.tries });
  if (o.servers.length > 0) resolver.setServers([...o.servers]);
  const answers = new Map<string, Answer>();
  const asking = new Map<string, Promise<Answer>>();
  let queries = 0;

  const keep = (name: string, answer: Answer): Answer => {
    answers.delete(name);
    answers.set(name, answer);
    if (answers.size > o.maxNames) {
      const oldest = answers.keys().next();
      if (!oldest.done) answers.delete(oldest.value);
    }
    return answer;
  };

  async function ask(name: string): Promise<Answer> {
    queries += 1;
    const v4 = settle(resolver.resolve4(name, { ttl: true }));
    const v6 = settle(resolver.resolve6(name, { ttl: true }));
    const addresses: LookupAddress[] = [];
    let ttlSeconds = Infinity;
    let failed = false;
    for (const [result, family] of [
      [await graced(v4, v6), 4],
      [await graced(v6, v4), 6],
    ] as const) {
      failed ||= result.code !== undefined && !NO_ADDRESS.has(result.code);
      for (const record of result.records) {
        addresses.push({ address: record.address, family });
        ttlSeconds = Math.min(ttlSeconds, record.ttl);
      }
    }
    if (addresses.length > 0) {
      const ttlMs = Math.min(o.maxTtlMs, Math.max(1_000, ttlSeconds * 1_000));
      return keep(name, { addresses, until: now() + ttlMs });
    }
    return keep(name, {
      addresses,
      error: failed ? 'EAI_AGAIN' : 'ENOTFOUND',
      until: now() + o.failureTtlMs,
    });
  }

  function answerFor(name: string): Answer | Promise<Answer> {
    const kept = answers.get(name);
    if (kept && kept.until > now()) return kept;
    const inFlight = asking.get(name);
    if (inFlight) return inFlight;
    const asked = ask(name).finally(() => asking.delete(name));
    asking.set(name, asked);
    return asked;
  }

  /** An address is itself and `localhost` is loopback; any other name is asked of DNS. */
  const answerOf = (hostname: string): Answer | Promise<Answer> => {
    const family = isIP(hostname);
    if (family !== 0) return { addresses: [{ address: hostname, family }], until: Infinity };
    if (LOCALHOST.test(hostname)) return { addresses: LOOPBACK, until: Infinity };
    return answerFor(hostname.toLowerCase().replace(/\.$/, ''));
  };

  const lookup: Lookup = (hostname, _options, callback) => {
    const reply = (answer: Answer) => {
      if (!answer.error) return callback(null, answer.addresses);
      const err: NodeJS.ErrnoException = new Error(
        `${answer.error === 'EAI_AGAIN' ? 'no answer' : 'no address'} for ${hostname}`,
      );
      err.code = answer.error;
      callback(err, []);
    };
    // Always a later turn, a kept answer too: net's connect expects its lookup to answer after
    // it returns.
    void Promise.resolve(answerOf(hostname)).then(reply);
  };

  return {
    lookup,
    get queries() {
      return queries;
    },
    cancel: () => resolver.cancel(),
  };
}
