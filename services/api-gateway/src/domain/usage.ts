import { USAGE_OUTCOMES, type UsageBucket, type UsageOutcome } from '@signal/contracts';
import type Redis from 'ioredis';

const MINUTE = 60_000;
const DAY = 86_400_000;
/** Minute buckets are kept an hour (plus slack), day buckets 30 days (plus slack). */
const MINUTE_TTL_SECONDS = 3_900;
const DAY_TTL_SECONDS = 31 * 86_400;
export const ACCOUNT_FIELD = '*';

export function outcomeOf(status: number): UsageOutcome {
  if (status === 401) return 'unauthorized';
  if (status === 429) return 'rate_limited';
  if (status >= 500) return 'server_error';
  return 'served';
}

export interface UsageSeries {
  minutes: UsageBucket[];
  days: UsageBucket[];
}

const empty = (at: number): UsageBucket => ({
  at: new Date(at).toISOString(),
  served: 0,
  unauthorized: 0,
  rate_limited: 0,
  server_error: 0,
});

/**
 * Requests per key and per account by outcome, in Redis hashes: one per account and UTC minute
 * (kept 1 h) and one per account and UTC day (kept 30 d); fields `<keyId|*>:<outcome>`.
 * One pipelined round trip per request, sent after the response has finished.
 */
export class UsageStore {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
  ) {}

  private minuteKey(accountId: string, bucket: number): string {
    return `${this.prefix}usage:{${accountId}}:m:${bucket}`;
  }
  private dayKey(accountId: string, bucket: number): string {
    return `${this.prefix}usage:{${accountId}}:d:${bucket}`;
  }

  async record(accountId: string, keyId: string, outcome: UsageOutcome, now = Date.now()): Promise<void> {
    const m = this.minuteKey(accountId, Math.floor(now / MINUTE));
    const d = this.dayKey(accountId, Math.floor(now / DAY));
    await this.redis
      .pipeline()
      .hincrby(m, `${keyId}:${outcome}`, 1)
      .hincrby(m, `${ACCOUNT_FIELD}:${outcome}`, 1)
      .expire(m, MINUTE_TTL_SECONDS)
      .hincrby(d, `${keyId}:${outcome}`, 1)
      .hincrby(d, `${ACCOUNT_FIELD}:${outcome}`, 1)
      .expire(d, DAY_TTL_SECONDS)
      .exec();
  }

  /** The last 60 minutes and the last 30 days (oldest first) for one key, or the account (`*`). */
  async series(accountId: string, subject: string = ACCOUNT_FIELD, now = Date.now()): Promise<UsageSeries> {
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
