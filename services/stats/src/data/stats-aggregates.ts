import { SIGNAL_TYPES, type SignalType } from '@signal/contracts';
import { RedisReadModel, RedisScript, type Logger, type RedisClient } from '@signal/service-kit';
import {
  MINUTE_MS,
  ROI_SCALE,
  aggregateDelta,
  aggregateEntry,
  bucketsOfMinute,
  dayOf,
  hourOf,
  minuteOf,
  periodPlan,
  type AggregateDelta,
  type AggregateEntry,
} from '../domain/aggregate-rules';
import type { AggregatesStore, GroupRow } from '../domain/ports';
import type { ProjectedSignal } from '../domain/projection';

/**
 * Statistics kept incrementally in Redis, so no request aggregates anything; the rules
 * (deltas, period buckets) are in domain/aggregate-rules.ts, this module stores and reads them.
 *
 * Per signal type: counters (count, winners, ROI sum) for all time and per UTC minute, ten
 * minutes, hour, quarter day and day of `created_at` (hash `n:<type>`, fields `a:n`,
 * `m<minute>:w`, `t<ten minutes>:n`, `h<hour>:w`, `q<quarter>:r`, `d<day>:r`, …); a
 * sorted set of ids by `created_at` (`ct:<type>`, to read a period's partial edge minute
 * exactly); ROI sorted sets for all time, per hour and per day (`ra:<type>`, `rh:<type>:<hour>`,
 * `rd:<type>:<day>`, so `best_roi` stays exact when a ROI falls: the maximum is read, never kept
 * as a running max), and the top of each hour's and day's ranking (hashes `htop:<type>`,
 * `dtop:<type>`), rewritten from the ranking whenever it changes. Each signal's last applied state sits in hash `c` as
 * `version|type|createdMs|winner|roi`.
 * A write reads the stored states, computes each delta, and applies it only if the state is
 * still the one it read (compare-and-set in one script; a concurrent writer makes it read
 * again), so redelivered, reordered and concurrent events all count once.
 * Every key carries the hash tag `{agg}`: one Redis Cluster slot for the scripts.
 */

/**
 * The key layout's name, part of the model's ready mark: aggregates kept in an earlier layout
 * (hour edges; or without ten-minute and quarter-day counters or ranking tops) are never read
 * as complete, and are rebuilt.
 */
const LAYOUT = 'minute-edges,five-units,ranking-tops';

/**
 * ARGV: id, expected state ('' = none), new state, type, createdMs, roi, day, hour, left type
 * ('' = none), left day, left hour, then triples (hash suffix, field, increment). Returns -1
 * when the stored state is no longer the expected one.
 */
const APPLY = new RedisScript(`
local p, id = KEYS[1], ARGV[1]
if (redis.call('HGET', p .. 'c', id) or '') ~= ARGV[2] then return -1 end
for i = 12, #ARGV, 3 do
  redis.call('HINCRBY', p .. ARGV[i], ARGV[i + 1], ARGV[i + 2])
end
local typ, cms, roi, day, hour = ARGV[4], ARGV[5], ARGV[6], ARGV[7], ARGV[8]
local ltyp, lday, lhour = ARGV[9], ARGV[10], ARGV[11]
-- The top of a day's or hour's ROI ranking, kept beside it (hash dtop:/htop:<type>, field =
-- the day or hour), so a period reads the tops of its later days and hours in one HMGET each.
local function retop(unit, t, bucket)
  local top = redis.call('ZRANGE', p .. 'r' .. unit .. ':' .. t .. ':' .. bucket, 0, 0, 'REV', 'WITHSCORES')
  if top[2] then redis.call('HSET', p .. unit .. 'top:' .. t, bucket, top[2])
  else redis.call('HDEL', p .. unit .. 'top:' .. t, bucket) end
end
if ltyp ~= '' then
  redis.call('ZREM', p .. 'ct:' .. ltyp, id)
  redis.call('ZREM', p .. 'ra:' .. ltyp, id)
  redis.call('ZREM', p .. 'rd:' .. ltyp .. ':' .. lday, id)
  redis.call('ZREM', p .. 'rh:' .. ltyp .. ':' .. lhour, id)
  retop('d', ltyp, lday)
  retop('h', ltyp, lhour)
end
redis.call('ZADD', p .. 'ct:' .. typ, cms, id)
redis.call('ZADD', p .. 'ra:' .. typ, roi, id)
redis.call('ZADD', p .. 'rd:' .. typ .. ':' .. day, roi, id)
redis.call('ZADD', p .. 'rh:' .. typ .. ':' .. hour, roi, id)
retop('d', typ, day)
retop('h', typ, hour)
redis.call('HSET', p .. 'c', id, ARGV[3])
return 1
`);

/**
 * The figures of some types for one period, in one call: per type {count, winners, roiSum, best
 * or false}, flattened; nil while the model is incomplete. ARGV: cutoff ('' = all time), epoch,
 * end of the edge minute, edge hour, then four comma-separated lists: the types, the counter
 * buckets (the period's whole minutes as the fewest aligned buckets), the later hours of the edge
 * day, the later days. The edge minute is read signal by signal; best_roi is the kept top of each
 * later hour's and day's ROI set, and for the edge hour the highest ROI whose signal is inside
 * the period. (One call with bucket names, not one call per type with every field name, which
 * at 30 days would be thousands of arguments per response. Each list is one argument, not one
 * argument per name: encoding arguments is a large part of what a response allocates.)
 */
const PERIOD = new RedisScript(`
local p = KEYS[1]
if redis.call('GET', p .. 'ready') ~= ARGV[2] then return false end
local function list(csv)
  local items = {}
  for item in string.gmatch(csv or '', '[^,]+') do items[#items + 1] = item end
  return items
end
local types = list(ARGV[5])
local out = {}
if ARGV[1] == '' then
  for _, typ in ipairs(types) do
    local v = redis.call('HMGET', p .. 'n:' .. typ, 'a:n', 'a:w', 'a:r')
    local top = redis.call('ZRANGE', p .. 'ra:' .. typ, 0, 0, 'REV', 'WITHSCORES')
    out[#out + 1] = tonumber(v[1] or 0); out[#out + 1] = tonumber(v[2] or 0)
    out[#out + 1] = tonumber(v[3] or 0); out[#out + 1] = top[2] or false
  end
  return out
end
local cutoff, edgeMax, edgeHour = tonumber(ARGV[1]), ARGV[3], ARGV[4]
local fields = {}
for bucket in string.gmatch(ARGV[6], '[^,]+') do
  fields[#fields + 1] = bucket .. ':n'; fields[#fields + 1] = bucket .. ':w'; fields[#fields + 1] = bucket .. ':r'
end
local hours, days = list(ARGV[7]), list(ARGV[8])
for _, typ in ipairs(types) do
  local count, wins, roi, best = 0, 0, 0, nil
  local function better(x) x = tonumber(x); if x and (best == nil or x > best) then best = x end end
  local edgeKey, offset = p .. 'ct:' .. typ, 0
  while true do
    local ids = redis.call('ZRANGE', edgeKey, '(' .. cutoff, edgeMax, 'BYSCORE', 'LIMIT', offset, 1000)
    if #ids == 0 then break end
    local states = redis.call('HMGET', p .. 'c', unpack(ids))
    for i = 1, #states do
      local w, r = string.match(states[i] or '', '^%d+|[^|]*|[^|]*|([^|]*)|(.*)$')
      if w then count = count + 1; wins = wins + tonumber(w); roi = roi + tonumber(r); better(r) end
    end
    offset = offset + #ids
  end
  if #fields > 0 then
    local v = redis.call('HMGET', p .. 'n:' .. typ, unpack(fields))
    for i = 1, #v, 3 do
      count = count + tonumber(v[i] or 0); wins = wins + tonumber(v[i + 1] or 0); roi = roi + tonumber(v[i + 2] or 0)
    end
  end
  if #hours > 0 then
    for _, top in ipairs(redis.call('HMGET', p .. 'htop:' .. typ, unpack(hours))) do
      if top then better(top) end
    end
  end
  if #days > 0 then
    for _, top in ipairs(redis.call('HMGET', p .. 'dtop:' .. typ, unpack(days))) do
      if top then better(top) end
    end
  end
  -- The edge hour's ranking from the top, skipping signals before the cutoff; a first small
  -- chunk, as the best of the later buckets usually ends it at once.
  local hourKey, from, size = p .. 'rh:' .. typ .. ':' .. edgeHour, 0, 10
  while true do
    local chunk = redis.call('ZRANGE', hourKey, from, from + size - 1, 'REV', 'WITHSCORES')
    if #chunk == 0 then break end
    if best ~= nil and tonumber(chunk[2]) <= best then break end
    local members = {}
    for i = 1, #chunk, 2 do members[#members + 1] = chunk[i] end
    local states = redis.call('HMGET', p .. 'c', unpack(members))
    local found = false
    for i = 1, #states do
      local cms = string.match(states[i] or '', '^%d+|[^|]*|([^|]*)|')
      if cms and tonumber(cms) > cutoff then better(chunk[i * 2]); found = true; break end
    end
    if found then break end
    from = from + size
    size = 100
  end
  out[#out + 1] = count; out[#out + 1] = wins; out[#out + 1] = roi
  out[#out + 1] = best and tostring(best) or false
end
return out
`);

/** Concurrent writers of one signal make a compare-and-set read again; this many times at most. */
const MAX_APPLY_ROUNDS = 10;

const encodeEntry = (e: AggregateEntry): string =>
  `${e.version}|${e.type}|${e.createdMs}|${e.winner}|${e.roi}`;

function decodeEntry(id: string, stored: string): AggregateEntry {
  const [version, type, createdMs, winner, roi] = stored.split('|');
  const known = SIGNAL_TYPES.find((t) => t === type);
  if (!known || roi === undefined || (winner !== '0' && winner !== '1'))
    throw new Error(`stats aggregates: unreadable state of ${id}`);
  return {
    version: Number(version),
    type: known,
    createdMs: Number(createdMs),
    winner: winner === '1' ? 1 : 0,
    roi: Number(roi),
  };
}

const COUNTER_FIELDS = [
  ['n', 'count'],
  ['w', 'winners'],
  ['r', 'roi'],
] as const;

interface EncodedPlan {
  edgeEnd: number;
  edgeHour: number;
  buckets: string;
  hours: string;
  days: string;
}

/**
 * A period's plan depends only on its edge minute and the current hour: each response within the
 * same minute reuses the lists instead of allocating them again.
 */
class PlanCache {
  private readonly plans = new Map<string, EncodedPlan>();

  get(cutoffMs: number, nowMs: number): EncodedPlan {
    const key = `${minuteOf(cutoffMs)}/${hourOf(nowMs)}`;
    let encoded = this.plans.get(key);
    if (!encoded) {
      const plan = periodPlan(cutoffMs, nowMs);
      encoded = {
        edgeEnd: (plan.edgeMinute + 1) * MINUTE_MS - 1,
        edgeHour: plan.edgeHour,
        buckets: plan.buckets.join(','),
        hours: plan.roiHours.join(','),
        days: plan.laterDays.join(','),
      };
      // Four periods, a minute each: a handful of live entries; the bound only stops growth.
      if (this.plans.size >= 64) this.plans.clear();
      this.plans.set(key, encoded);
    }
    return encoded;
  }
}

export class StatsAggregates implements AggregatesStore {
  readonly prefix: string;
  readonly model: RedisReadModel;
  private readonly plans = new PlanCache();

  constructor(
    readonly redis: RedisClient,
    keyPrefix: string,
    /** The stats database's identity (service-kit `sourceEpoch`). */
    epoch: string,
    logger: Logger,
  ) {
    this.prefix = `${keyPrefix}stats:{agg}:`;
    this.model = new RedisReadModel(redis, this.prefix, `${epoch}/${LAYOUT}`, logger);
  }

  /** Version-guarded and compare-and-set, pipelined per 1000 signals; returns how many changed anything. */
  async apply(signals: ProjectedSignal[]): Promise<number> {
    let changed = 0;
    for (let i = 0; i < signals.length; i += 1000)
      changed += await this.applyBatch(signals.slice(i, i + 1000));
    return changed;
  }

  private async applyBatch(signals: ProjectedSignal[]): Promise<number> {
    // The newest state of each signal in the batch is the only one that can count.
    const newest = new Map<string, AggregateEntry>();
    for (const s of signals) {
      const entry = aggregateEntry(s);
      const seen = newest.get(s._id);
      if (!seen || seen.version < entry.version) newest.set(s._id, entry);
    }
    let pending = [...newest.entries()];
    let changed = 0;
    for (let round = 0; pending.length > 0; round++) {
      if (round === MAX_APPLY_ROUNDS)
        throw new Error('stats aggregates: states kept changing under concurrent writers');
      const stored = await this.redis.hmget(`${this.prefix}c`, ...pending.map(([id]) => id));
      const calls: Array<{ id: string; next: AggregateEntry; args: Array<string | number> }> = [];
      for (const [k, [id, next]] of pending.entries()) {
        const raw = stored[k] ?? '';
        const delta = aggregateDelta(raw ? decodeEntry(id, raw) : undefined, next);
        if (delta.kind === 'changed') calls.push({ id, next, args: this.applyArgs(id, raw, next, delta) });
      }
      const results = await APPLY.runMany(
        this.redis,
        calls.map((c) => ({ keys: [this.prefix], args: c.args })),
      );
      changed += results.filter((r) => r === 1).length;
      pending = calls
        .filter((_, k) => results[k] === -1)
        .map((c): [string, AggregateEntry] => [c.id, c.next]);
    }
    return changed;
  }

  private applyArgs(
    id: string,
    expected: string,
    next: AggregateEntry,
    delta: Extract<AggregateDelta, { kind: 'changed' }>,
  ): Array<string | number> {
    const increments: Array<string | number> = [];
    for (const c of delta.counters)
      for (const bucket of ['a', ...bucketsOfMinute(c.minute)])
        for (const [field, figure] of COUNTER_FIELDS)
          if (c[figure] !== 0) increments.push(`n:${c.type}`, `${bucket}:${field}`, c[figure]);
    return [
      id,
      expected,
      encodeEntry(next),
      next.type,
      next.createdMs,
      next.roi,
      dayOf(next.createdMs),
      hourOf(next.createdMs),
      delta.left?.type ?? '',
      delta.left ? dayOf(delta.left.createdMs) : '',
      delta.left ? hourOf(delta.left.createdMs) : '',
      ...increments,
    ];
  }

  /**
   * Rows per type and the best ROI for created_at > since, or undefined while the model is
   * incomplete. One script call for all types.
   */
  async figures(
    type: SignalType | undefined,
    since: Date | undefined,
    now = Date.now(),
  ): Promise<{ rows: GroupRow[]; bestRoi: number | undefined } | undefined> {
    const types = type ? [type] : [...SIGNAL_TYPES];
    const reply = await PERIOD.run(this.redis, [this.prefix], this.periodArgs(types, since, now));
    if (!Array.isArray(reply)) return undefined;
    const rows: GroupRow[] = [];
    let bestRoi: number | undefined;
    for (const [i, t] of types.entries()) {
      const [count, winners, roiSum, best] = reply.slice(i * 4, i * 4 + 4);
      if (Number(count) === 0) continue;
      const b = typeof best === 'string' ? Number(best) / ROI_SCALE : undefined;
      rows.push({
        _id: t,
        total: Number(count),
        winners: Number(winners),
        roi_sum: Number(roiSum) / ROI_SCALE,
        ...(b !== undefined ? { best_roi: b } : {}),
      });
      if (b !== undefined && (bestRoi === undefined || b > bestRoi)) bestRoi = b;
    }
    return { rows, bestRoi };
  }

  private periodArgs(types: SignalType[], since: Date | undefined, now: number): Array<string | number> {
    const typeList = types.join(',');
    if (!since) return ['', this.model.epoch, '', '', typeList];
    const cutoffMs = since.getTime();
    const plan = this.plans.get(cutoffMs, now);
    return [
      cutoffMs,
      this.model.epoch,
      plan.edgeEnd,
      plan.edgeHour,
      typeList,
      plan.buckets,
      plan.hours,
      plan.days,
    ];
  }
}
