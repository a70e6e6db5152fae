import type { SignalDetail, SignalSnapshot, SignalStatus, SignalType } from '@signal/contracts';
import { RedisReadModel, RedisScript, type Logger, type RedisClient } from '@signal/service-kit';
import type { SignalReadIndex, TimelinePage, TimelineQuery, TimelineWriter } from '../domain/ports';
import { decodeDetail, encodeBody } from './timeline-body';

/**
 * The read side of signals: a timeline index in Redis that the signals service keeps from its
 * own writes, so list and detail reads never touch the document store's query engine.
 *
 * One sorted set per filter combination — all, each type, each status, each type×status —
 * with member = signal id and score = created_at in ms. Redis orders equal scores by member,
 * and ids are ULIDs of created_at, so rank order is exactly `created_at desc, id desc`.
 * Detail bodies sit in one hash beside them. Every key carries the hash tag `{timeline}`, so
 * the scripts' keys (some derived inside the script from the prefix: the old status set)
 * stay on one Redis Cluster slot.
 */

/** Applies one snapshot if it is newer than the stored one; a status change moves sets atomically. */
const APPLY = new RedisScript(`
local p, id, ver, typ, st, score, body = KEYS[1], ARGV[1], tonumber(ARGV[2]), ARGV[3], ARGV[4], ARGV[5], ARGV[6]
local old = redis.call('HGET', p .. 'b', id)
if old then
  local ov, ost = string.match(old, '^(%d+)|(%a+)|')
  if ov and tonumber(ov) >= ver then return 0 end
  if ost and ost ~= st then
    redis.call('ZREM', p .. 's:' .. ost, id)
    redis.call('ZREM', p .. 'ts:' .. typ .. ':' .. ost, id)
    redis.call('ZADD', p .. 's:' .. st, score, id)
    redis.call('ZADD', p .. 'ts:' .. typ .. ':' .. st, score, id)
  end
else
  redis.call('ZADD', p .. 'all', score, id)
  redis.call('ZADD', p .. 't:' .. typ, score, id)
  redis.call('ZADD', p .. 's:' .. st, score, id)
  redis.call('ZADD', p .. 'ts:' .. typ .. ':' .. st, score, id)
end
redis.call('HSET', p .. 'b', id, body)
return 1
`);

/**
 * One page in one round trip: total (ZCARD, or ZCOUNT above \`since\`), the start rank (from
 * the page number, or from the cursor's rank), then ids by rank and their bodies. \`since\` is a
 * rank window — the newest \`total\` ranks — never a score scan with an offset.
 * Returns nil while the index is not complete for this database (never built, lost, or another
 * database's: the \`ready\` mark holds the source's epoch, ARGV[7]).
 */
const PAGE = new RedisScript(`
local p = KEYS[1]
if redis.call('GET', p .. 'ready') ~= ARGV[7] then return false end
local key = p .. ARGV[1]
local total
if ARGV[2] ~= '' then total = redis.call('ZCOUNT', key, '(' .. ARGV[2], '+inf') else total = redis.call('ZCARD', key) end
local start, limit = tonumber(ARGV[3]), tonumber(ARGV[4])
local cursor, cursorScore = ARGV[5], ARGV[6]
if cursor ~= '' then
  local r = redis.call('ZREVRANK', key, cursor)
  if r then
    start = r + 1
  else
    -- The cursor's signal left this set (its status moved): count what orders before it.
    start = redis.call('ZCOUNT', key, '(' .. cursorScore, '+inf')
    for _, m in ipairs(redis.call('ZRANGE', key, cursorScore, cursorScore, 'BYSCORE')) do
      if m > cursor then start = start + 1 end
    end
  end
  -- A cursor older than \`since\` lies past the window: its page is the one after the last.
  start = math.min(start, total)
end
local out = {total, start}
if start < total then
  local ids = redis.call('ZRANGE', key, start, math.min(start + limit, total) - 1, 'REV')
  if #ids > 0 then
    local bodies = redis.call('HMGET', p .. 'b', unpack(ids))
    for i = 1, #ids do
      out[#out + 1] = ids[i]
      out[#out + 1] = bodies[i] or ''
    end
  end
end
return out
`);

export function setName(type?: SignalType, status?: SignalStatus): string {
  if (type && status) return `ts:${type}:${status}`;
  if (type) return `t:${type}`;
  if (status) return `s:${status}`;
  return 'all';
}

export class TimelineIndex implements SignalReadIndex, TimelineWriter {
  readonly prefix: string;
  /** Completeness mark and rebuild protocol. */
  readonly model: RedisReadModel;

  constructor(
    readonly redis: RedisClient,
    keyPrefix: string,
    /** The signals database's identity (service-kit `sourceEpoch`). */
    epoch: string,
    logger: Logger,
  ) {
    this.prefix = `${keyPrefix}signals:{timeline}:`;
    this.model = new RedisReadModel(redis, this.prefix, epoch, logger);
  }

  private applyCall(s: SignalSnapshot) {
    return {
      keys: [this.prefix],
      args: [s.id, s.version, s.type, s.performance.status, Date.parse(s.created_at), encodeBody(s)],
    };
  }

  /** Version-guarded: an older or repeated snapshot changes nothing. Pipelined: one round trip. */
  async apply(snapshots: SignalSnapshot[]): Promise<void> {
    for (let i = 0; i < snapshots.length; i += 1000) {
      await APPLY.runMany(
        this.redis,
        snapshots.slice(i, i + 1000).map((s) => this.applyCall(s)),
      );
    }
  }

  /** undefined while the index is incomplete: the caller reads from MongoDB. */
  async page(q: TimelineQuery): Promise<TimelinePage | undefined> {
    const reply = await PAGE.run(
      this.redis,
      [this.prefix],
      [
        setName(q.type, q.status),
        q.sinceMs === undefined ? '' : String(q.sinceMs),
        q.start,
        q.limit,
        q.cursorId ?? '',
        q.cursorMs ?? 0,
        this.model.epoch,
      ],
    );
    if (!Array.isArray(reply)) return undefined;
    const [total, start, ...pairs] = reply;
    const rows: SignalDetail[] = [];
    for (let i = 0; i + 1 < pairs.length; i += 2) {
      const id = pairs[i];
      const body = pairs[i + 1];
      if (typeof id !== 'string' || typeof body !== 'string') continue;
      const detail = decodeDetail(id, body);
      if (detail) rows.push(detail);
    }
    return { total: Number(total), start: Number(start), rows };
  }

  /** The detail from the index; `missing` when the index is complete and has no such signal. */
  async get(id: string): Promise<SignalDetail | 'missing' | undefined> {
    const [ready, body] = await Promise.all([
      this.redis.get(`${this.prefix}ready`),
      this.redis.hget(`${this.prefix}b`, id),
    ]);
    if (ready !== this.model.epoch) return undefined;
    return body ? decodeDetail(id, body) : 'missing';
  }

  /** Index memory and size, for the benchmark's bytes-per-signal figure. */
  async size(): Promise<number> {
    return this.redis.zcard(`${this.prefix}all`);
  }
}
