import { pipelineEach, RedisScript, type ScriptCall, type RedisClient } from '@signal/service-kit';
import {
  DAY_MS,
  MINUTE_MS,
  type KeyDecision,
  type LimitSubject,
  type SharedLimiter,
  type WindowDecision,
  windowDecision,
} from '../domain/rate-limit';
import { announceChange, type CredentialChanges, type KeyState } from '../../stream/domain/open-streams';

/** How long a rolled key's end is kept: the longest overlap a roll gives (7 days), and a day. */
const KEY_ENDS_TTL_MS = 8 * 86_400_000;

/**
 * Both windows (minute and UTC day) are checked and, only if both have room, counted — in
 * one atomic Lua call, so concurrent requests on any number of gateway instances can never
 * overshoot and a rejected request counts against nothing. The revoked-key set is checked in
 * the same call, so a revocation applies to the very next request everywhere.
 * All keys of one account share the hash tag {acc} → one Redis Cluster slot.
 *
 * One call decides a batch: the checks of one account (same windows, same plan defaults) that
 * arrived in one iteration of the event loop, in arrival order, each exactly as if it had run
 * alone — the i-th check sees the counts the checks before it left. A busy key costs Redis one
 * script run per batch instead of one per request (Redis runs scripts one at a time, for every
 * gateway), and the gateway one command to encode and one reply to parse.
 * ARGV: per_minute, per_day (defaults when the account has no plan hash), the two TTLs, then
 * one key id per check ('' = a subject without a key, never revoked).
 * Reply: per_minute, per_day, then per check: outcome (1 allowed, 0 limited, -1 revoked),
 * minute count, day count.
 */
const CHECK = new RedisScript(`
local per_minute = tonumber(redis.call('HGET', KEYS[4], 'per_minute') or ARGV[1])
local per_day = tonumber(redis.call('HGET', KEYS[4], 'per_day') or ARGV[2])
local m = tonumber(redis.call('GET', KEYS[1]) or '0')
local d = tonumber(redis.call('GET', KEYS[2]) or '0')
local added = 0
local revoked = {}
local out = {per_minute, per_day}
for i = 5, #ARGV do
  local key = ARGV[i]
  local is_revoked = false
  if key ~= '' then
    is_revoked = revoked[key]
    if is_revoked == nil then
      is_revoked = redis.call('SISMEMBER', KEYS[3], key) == 1
      revoked[key] = is_revoked
    end
  end
  if is_revoked then
    out[#out + 1] = -1; out[#out + 1] = 0; out[#out + 1] = 0
  elseif m >= per_minute or d >= per_day then
    out[#out + 1] = 0; out[#out + 1] = m; out[#out + 1] = d
  else
    m = m + 1; d = d + 1; added = added + 1
    out[#out + 1] = 1; out[#out + 1] = m; out[#out + 1] = d
  end
end
if added > 0 then
  if redis.call('INCRBY', KEYS[1], added) == added then redis.call('PEXPIRE', KEYS[1], ARGV[3]) end
  if redis.call('INCRBY', KEYS[2], added) == added then redis.call('PEXPIRE', KEYS[2], ARGV[4]) end
end
return out
`);

const MINUTE_TTL = String(MINUTE_MS + 5000);
const DAY_TTL = String(DAY_MS + 60_000);
/** Checks per script call at most (a full batch is sent at once and the next one begins). */
const MAX_BATCH = 500;

function isReply(value: unknown, checks: number): value is number[] {
  return Array.isArray(value) && value.length === 2 + 3 * checks && value.every((v) => typeof v === 'number');
}

interface PendingCheck {
  keyId: string;
  resolve(decision: KeyDecision): void;
  reject(err: unknown): void;
}

/** The checks of one account and window pair waiting for the end of this event-loop iteration. */
interface Batch {
  keys: string[];
  perMinute: number;
  perDay: number;
  minuteWindow: number;
  dayWindow: number;
  checks: PendingCheck[];
}

export class RateLimitStore implements SharedLimiter {
  /**
   * The batches waiting for the end of this event-loop iteration, by subject: a subject has one,
   * or one per window pair and plan while a window turns or its plan changes. Looked up by the
   * subject's own string (no key built per request).
   */
  private readonly waiting = new Map<string, Batch[]>();
  private flushQueued = false;

  constructor(
    private readonly redis: RedisClient,
    private readonly prefix = '',
    /** Told of each revocation and roll, so that every gateway checks that account's streams now. */
    private readonly changes?: Pick<CredentialChanges, 'announce'>,
  ) {}

  private tag(subject: string): string {
    return `${this.prefix}{${subject}}`;
  }

  checkKey(s: LimitSubject, keyId: string, now = Date.now()): Promise<KeyDecision> {
    return this.enqueue(s, keyId, now);
  }

  /**
   * The windows as the subject's next request would find them, counting nothing: one read of both
   * counters (a subject without a key has no plan hash: its rates are the subject's).
   */
  async peek(s: LimitSubject, now = Date.now()): Promise<WindowDecision> {
    const tag = this.tag(s.subject);
    const [minute, day] = await this.redis.mget(
      `${tag}:m:${Math.floor(now / MINUTE_MS)}`,
      `${tag}:d:${Math.floor(now / DAY_MS)}`,
    );
    const m = Number(minute ?? 0);
    const d = Number(day ?? 0);
    return windowDecision(m < s.perMinute && d < s.perDay, s, m, d, now);
  }

  async count(s: LimitSubject, now = Date.now()): Promise<WindowDecision> {
    const decision = await this.enqueue(s, '', now);
    if (decision.outcome === 'revoked') throw new Error('a subject without a key cannot be revoked');
    return decision;
  }

  /**
   * Queues the check for the end of this event-loop iteration (setImmediate: after every
   * socket read of the iteration, so the requests that arrived together leave together; no
   * timer, no added wait).
   */
  private enqueue(s: LimitSubject, keyId: string, now: number): Promise<KeyDecision> {
    const minuteWindow = Math.floor(now / MINUTE_MS);
    const dayWindow = Math.floor(now / DAY_MS);
    let batches = this.waiting.get(s.subject);
    if (!batches) {
      batches = [];
      this.waiting.set(s.subject, batches);
    }
    let batch: Batch | undefined;
    for (const b of batches)
      if (
        b.minuteWindow === minuteWindow &&
        b.dayWindow === dayWindow &&
        b.perMinute === s.perMinute &&
        b.perDay === s.perDay
      ) {
        batch = b;
        break;
      }
    if (!batch) {
      const tag = this.tag(s.subject);
      batch = {
        keys: [`${tag}:m:${minuteWindow}`, `${tag}:d:${dayWindow}`, `${tag}:revoked`, `${tag}:plan`],
        perMinute: s.perMinute,
        perDay: s.perDay,
        minuteWindow,
        dayWindow,
        checks: [],
      };
      batches.push(batch);
    }
    const checks = batch.checks;
    const decided = new Promise<KeyDecision>((resolve, reject) => checks.push({ keyId, resolve, reject }));
    if (checks.length >= MAX_BATCH) {
      batches.splice(batches.indexOf(batch), 1);
      if (batches.length === 0) this.waiting.delete(s.subject);
      void this.decide(batch);
    } else if (!this.flushQueued) {
      this.flushQueued = true;
      setImmediate(() => this.flush());
    }
    return decided;
  }

  /**
   * The waiting batches: one account's alone in one script call; several accounts' in one write
   * (a pipeline of their calls). Chosen here rather than by ioredis auto-pipelining, which adds
   * CPU to each lone call (it queues every command for a later tick).
   */
  private flush(): void {
    this.flushQueued = false;
    const batches: Batch[] = [];
    for (const waiting of this.waiting.values()) for (const batch of waiting) batches.push(batch);
    this.waiting.clear();
    if (batches.length === 0) return;
    if (batches.length === 1) {
      void this.decide(batches[0]!);
      return;
    }
    CHECK.runEach(this.redis, batches.map(scriptCall)).then(
      (outcomes) =>
        batches.forEach((batch, i) => {
          const outcome = outcomes[i]!;
          if (outcome.ok) settle(batch, outcome.value);
          else rejectAll(batch, outcome.error);
        }),
      (err: unknown) => batches.forEach((batch) => rejectAll(batch, err)),
    );
  }

  /** One script call for the batch; every check of it gets its decision, or the call's error. */
  private async decide(batch: Batch): Promise<void> {
    try {
      const { keys, args } = scriptCall(batch);
      settle(batch, await CHECK.run(this.redis, keys, args));
    } catch (err) {
      rejectAll(batch, err);
    }
  }

  /**
   * Each key's state for the open streams' check: revoked, and the end a roll gave it. One
   * pipelined round trip (one per node of a Cluster), both reads of a key in its account's slot.
   */
  async statesAmong(keys: ReadonlyArray<{ accountId: string; keyId: string }>): Promise<KeyState[]> {
    const revokedSet = (k: { accountId: string }) => `${this.tag(k.accountId)}:revoked`;
    const results = await pipelineEach(this.redis, keys, revokedSet, (p, k) => {
      p.sismember(revokedSet(k), k.keyId);
      p.hget(`${this.tag(k.accountId)}:key_ends`, k.keyId);
    });
    return results.map(([revoked, ends]) => {
      for (const reply of [revoked, ends]) {
        const [err] = reply ?? [new Error('no reply from the pipeline')];
        if (err) throw err;
      }
      const endsAt = Number(ends?.[1]);
      return {
        revoked: revoked?.[1] === 1,
        endsAt: ends?.[1] != null && Number.isFinite(endsAt) ? endsAt : null,
      };
    });
  }

  async clearEnd(accountId: string, keyId: string): Promise<void> {
    await this.redis.hdel(`${this.tag(accountId)}:key_ends`, keyId);
  }

  async markRevoked(accountId: string, keyId: string): Promise<void> {
    await this.redis.sadd(`${this.tag(accountId)}:revoked`, keyId);
    await announceChange(this.changes, accountId);
  }

  /**
   * A rolled key's end, for the streams it has open (requests learn it from the key's record).
   * Kept as long as the longest overlap (7 days) from the last roll of the account.
   */
  async markEnd(accountId: string, keyId: string, at: Date): Promise<void> {
    const ends = `${this.tag(accountId)}:key_ends`;
    const replies = await this.redis
      .multi()
      .hset(ends, keyId, String(at.getTime()))
      .pexpire(ends, KEY_ENDS_TTL_MS)
      .exec();
    const failed = replies?.find(([err]) => err);
    if (!replies || failed) throw failed?.[0] ?? new Error('the transaction was discarded');
    await announceChange(this.changes, accountId);
  }

  async setPlan(accountId: string, perMinute: number, perDay: number): Promise<void> {
    await this.redis.hset(`${this.tag(accountId)}:plan`, { per_minute: perMinute, per_day: perDay });
  }
}

/** The script call that decides one batch. */
function scriptCall(batch: Batch): ScriptCall {
  return {
    keys: batch.keys,
    args: [batch.perMinute, batch.perDay, MINUTE_TTL, DAY_TTL, ...batch.checks.map((c) => c.keyId)],
  };
}

/** Every check of the batch fails with the call's error. */
function rejectAll(batch: Batch, err: unknown): void {
  for (const check of batch.checks) check.reject(err);
}

/** Every check of the batch gets its decision from the script's reply. */
function settle(batch: Batch, reply: unknown): void {
  const { checks } = batch;
  try {
    if (!isReply(reply, checks.length)) throw new Error('rate limit script returned an unexpected shape');
    const [perMinute = 0, perDay = 0] = reply;
    const minuteReset = ((batch.minuteWindow + 1) * MINUTE_MS) / 1000;
    const dayReset = ((batch.dayWindow + 1) * DAY_MS) / 1000;
    checks.forEach((check, i) => {
      const code = reply[2 + 3 * i];
      if (code === -1) return check.resolve({ outcome: 'revoked' });
      check.resolve({
        outcome: code === 1 ? 'allowed' : 'limited',
        minute: { limit: perMinute, used: reply[3 + 3 * i] ?? 0, resetAt: minuteReset },
        day: { limit: perDay, used: reply[4 + 3 * i] ?? 0, resetAt: dayReset },
      });
    });
  } catch (err) {
    rejectAll(batch, err);
  }
}
