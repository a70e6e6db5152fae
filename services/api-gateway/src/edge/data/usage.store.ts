import type { RedisClient } from '@signal/service-kit';
import { USAGE_OUTCOMES, type UsageBucket, type UsageOutcome } from '@signal/contracts';
import { pipelineEach, type Logger } from '@signal/service-kit';
import type { UsageLedger, UsageSeries } from '../domain/usage';

const MINUTE = 60_000;
const DAY = 86_400_000;
/** Minute buckets are kept an hour (plus slack), day buckets 30 days (plus slack). */
const MINUTE_TTL_SECONDS = 3_900;
const DAY_TTL_SECONDS = 31 * 86_400;
const ACCOUNT_FIELD = '*';

/** No request of any outcome. */
const noRequests = (): Record<UsageOutcome, number> => ({
  served: 0,
  unauthorized: 0,
  rate_limited: 0,
  server_error: 0,
});

const empty = (at: number): UsageBucket => ({ at: new Date(at).toISOString(), ...noRequests() });

/** One key's requests in one minute since the last flush, by outcome. */
interface PendingCount {
  accountId: string;
  keyId: string;
  minute: number;
  counts: Record<UsageOutcome, number>;
}

/**
 * Requests per key and per account by outcome, in Redis hashes: one per account and UTC minute
 * (kept 1 h) and one per account and UTC day (kept 30 d); fields `<keyId|*>:<outcome>`.
 * Counts are added up in memory and written every `flushMs` in one pipelined round trip, so a
 * request costs a map increment, not a Redis call (a crash loses at most that interval).
 */
export class UsageStore implements UsageLedger {
  /**
   * Counts since the last flush, by key id: found by the key's own id string (whose hash the
   * engine keeps), not by a string built and hashed per request. A key has one entry, or a few
   * while a minute turns.
   */
  private pending = new Map<string, PendingCount[]>();
  private timer?: NodeJS.Timeout;
  private flushing: Promise<void> = Promise.resolve();

  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
    private readonly logger: Logger,
    private readonly flushMs = 500,
  ) {}

  private minuteKey(accountId: string, bucket: number): string {
    return `${this.prefix}usage:{${accountId}}:m:${bucket}`;
  }
  private dayKey(accountId: string, bucket: number): string {
    return `${this.prefix}usage:{${accountId}}:d:${bucket}`;
  }

  count(accountId: string, keyId: string, outcome: UsageOutcome, now = Date.now()): void {
    const minute = Math.floor(now / MINUTE);
    let entries = this.pending.get(keyId);
    if (!entries) {
      entries = [];
      this.pending.set(keyId, entries);
    }
    let entry: PendingCount | undefined;
    for (const e of entries)
      if (e.minute === minute && e.accountId === accountId) {
        entry = e;
        break;
      }
    if (!entry) {
      entry = { accountId, keyId, minute, counts: noRequests() };
      entries.push(entry);
    }
    entry.counts[outcome] += 1;
    this.timer ??= setTimeout(() => {
      this.timer = undefined;
      void this.flush();
    }, this.flushMs).unref();
  }

  /** Writes what was counted; a failed write is logged and dropped (usage is informational). */
  flush(): Promise<void> {
    const batch = this.pending;
    if (batch.size === 0) return this.flushing;
    this.pending = new Map();
    const counts: Array<{
      accountId: string;
      keyId: string;
      outcome: UsageOutcome;
      minute: number;
      n: number;
    }> = [];
    for (const entries of batch.values())
      for (const { accountId, keyId, minute, counts: byOutcome } of entries)
        for (const outcome of USAGE_OUTCOMES) {
          const n = byOutcome[outcome];
          if (n > 0) counts.push({ accountId, keyId, outcome, minute, n });
        }
    const write = () =>
      pipelineEach(
        this.redis,
        counts,
        (c) => this.minuteKey(c.accountId, c.minute),
        (pipeline, { accountId, keyId, outcome, minute, n }) => {
          const m = this.minuteKey(accountId, minute);
          const d = this.dayKey(accountId, Math.floor((minute * MINUTE) / DAY));
          pipeline
            .hincrby(m, `${keyId}:${outcome}`, n)
            .hincrby(m, `${ACCOUNT_FIELD}:${outcome}`, n)
            .expire(m, MINUTE_TTL_SECONDS)
            .hincrby(d, `${keyId}:${outcome}`, n)
            .hincrby(d, `${ACCOUNT_FIELD}:${outcome}`, n)
            .expire(d, DAY_TTL_SECONDS);
        },
      );
    this.flushing = this.flushing
      .then(write)
      .then((replies) => {
        const failed = replies.flat().find(([err]) => err !== null);
        if (failed) throw failed[0];
      })
      .then(
        () => undefined,
        (err: unknown) =>
          this.logger.warn({ err: err instanceof Error ? err.message : String(err) }, 'usage not recorded'),
      );
    return this.flushing;
  }

  /** Last write on shutdown. */
  async close(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.flush();
  }

  /** The last 60 minutes and the last 30 days (oldest first) for one key, or the account. */
  async series(accountId: string, keyId?: string, now = Date.now()): Promise<UsageSeries> {
    const subject = keyId ?? ACCOUNT_FIELD;
    const minuteStarts = Array.from({ length: 60 }, (_, i) => (Math.floor(now / MINUTE) - 59 + i) * MINUTE);
    const dayStarts = Array.from({ length: 30 }, (_, i) => (Math.floor(now / DAY) - 29 + i) * DAY);
    const fields = USAGE_OUTCOMES.map((o) => `${subject}:${o}`);
    const p = this.redis.pipeline();
    for (const at of minuteStarts) p.hmget(this.minuteKey(accountId, at / MINUTE), ...fields);
    for (const at of dayStarts) p.hmget(this.dayKey(accountId, at / DAY), ...fields);
    const results = (await p.exec()) ?? [];
    const bucket = (at: number, i: number): UsageBucket => {
      const [err, values] = results[i] ?? [null, []];
      const b = empty(at);
      if (err || !Array.isArray(values)) return b;
      USAGE_OUTCOMES.forEach((o, j) => {
        const v: unknown = values[j];
        b[o] = typeof v === 'string' ? Number(v) : 0;
      });
      return b;
    };
    return {
      minutes: minuteStarts.map((at, i) => bucket(at, i)),
      days: dayStarts.map((at, i) => bucket(at, minuteStarts.length + i)),
    };
  }
}
