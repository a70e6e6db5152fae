import { SIGNAL_TYPES, type SignalType } from '@signal/contracts';
import { RedisReadModel, RedisScript, type Logger } from '@signal/service-kit';
import type Redis from 'ioredis';
import type { GroupRow } from './projection.repository';
import type { ProjectedSignal } from './projection.model';

/**
 * Statistics kept incrementally in Redis, so no request aggregates anything.
 *
 * Per signal type: counters (count, winners, ROI sum) for all time, per UTC hour and per UTC day
 * of `created_at`; a sorted set of ids by `created_at` (to read a period's partial edge hour
 * exactly); ROI sorted sets for all time and per day (so `best_roi` stays exact when a ROI
 * falls: the maximum is read, never kept as a running max). Each signal's last applied state
 * sits in one hash, and a write applies the difference between it and the new snapshot,
 * version-guarded: redelivered and reordered events change nothing.
 * ROI sums are integers of 1/10,000 percent (HINCRBY is exact; floats would drift).
 * Every key carries the hash tag `{stats}`: one Redis Cluster slot for the scripts.
 */
const ROI_SCALE = 10_000;
const HOUR = 3_600_000;
const DAY = 86_400_000;

const APPLY = new RedisScript(`
local p = KEYS[1]
local id, ver, typ, cms, win, roi = ARGV[1], tonumber(ARGV[2]), ARGV[3], tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local function add(t, ms, dn, dw, dr)
  local n = p .. 'n:' .. t
  for _, b in ipairs({'a', 'h' .. math.floor(ms / ${HOUR}), 'd' .. math.floor(ms / ${DAY})}) do
    if dn ~= 0 then redis.call('HINCRBY', n, b .. ':n', dn) end
    if dw ~= 0 then redis.call('HINCRBY', n, b .. ':w', dw) end
    if dr ~= 0 then redis.call('HINCRBY', n, b .. ':r', dr) end
  end
end
local old = redis.call('HGET', p .. 'c', id)
if old then
  local ov, otyp, ocms, ow, oroi = string.match(old, '^(%d+)|([^|]*)|([^|]*)|([^|]*)|(.*)$')
  if tonumber(ov) >= ver then return 0 end
  ocms = tonumber(ocms)
  if otyp == typ and math.floor(ocms / ${HOUR}) == math.floor(cms / ${HOUR}) then
    add(typ, cms, 0, win - tonumber(ow), roi - tonumber(oroi))
  else
    -- Type or time moved (the domain never does this; a bad event must not corrupt counts).
    add(otyp, ocms, -1, -tonumber(ow), -tonumber(oroi))
    add(typ, cms, 1, win, roi)
    redis.call('ZREM', p .. 'ct:' .. otyp, id)
    redis.call('ZREM', p .. 'ra:' .. otyp, id)
    redis.call('ZREM', p .. 'rd:' .. otyp .. ':' .. math.floor(ocms / ${DAY}), id)
  end
else
  add(typ, cms, 1, win, roi)
end
redis.call('ZADD', p .. 'ct:' .. typ, cms, id)
redis.call('ZADD', p .. 'ra:' .. typ, roi, id)
redis.call('ZADD', p .. 'rd:' .. typ .. ':' .. math.floor(cms / ${DAY}), roi, id)
redis.call('HSET', p .. 'c', id, ver .. '|' .. typ .. '|' .. cms .. '|' .. win .. '|' .. roi)
return 1
`);

/**
 * One type's figures for created_at > cutoff (cutoff '' = all time): {count, winners, roiSum,
 * best or false}. Whole hours and days come from the bucket counters; the partial edge hour is
 * read signal by signal; best_roi is the top of each whole day's ROI set, and for the edge day
 * the highest ROI whose signal is inside the period. nil while the model is incomplete.
 */
const PERIOD = new RedisScript(`
local p, typ = KEYS[1], ARGV[1]
if redis.call('GET', p .. 'ready') ~= ARGV[4] then return false end
local n = p .. 'n:' .. typ
if ARGV[2] == '' then
  local v = redis.call('HMGET', n, 'a:n', 'a:w', 'a:r')
  local top = redis.call('ZRANGE', p .. 'ra:' .. typ, 0, 0, 'REV', 'WITHSCORES')
  return {tonumber(v[1] or 0), tonumber(v[2] or 0), tonumber(v[3] or 0), top[2] or false}
end
local cutoff, nowMs = tonumber(ARGV[2]), tonumber(ARGV[3])
local count, wins, roi, best = 0, 0, 0, nil
local function better(x) x = tonumber(x); if x and (best == nil or x > best) then best = x end end
-- The edge hour: only signals strictly after the cutoff.
local edgeHour = math.floor(cutoff / ${HOUR})
local edgeKey, edgeMax, offset = p .. 'ct:' .. typ, (edgeHour + 1) * ${HOUR} - 1, 0
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
-- Whole hours after the edge up to the last hour that can hold a signal (now + 1 h covers the
-- small future tolerance of created_at): hour counters up to a day boundary, then day counters.
local lastHour = math.floor(nowMs / ${HOUR}) + 1
local h = edgeHour + 1
local fields = {}
while h <= lastHour do
  if h % 24 == 0 and h + 23 <= lastHour then
    local d = h / 24
    fields[#fields + 1] = 'd' .. d .. ':n'; fields[#fields + 1] = 'd' .. d .. ':w'; fields[#fields + 1] = 'd' .. d .. ':r'
    h = h + 24
  else
    fields[#fields + 1] = 'h' .. h .. ':n'; fields[#fields + 1] = 'h' .. h .. ':w'; fields[#fields + 1] = 'h' .. h .. ':r'
    h = h + 1
  end
end
local v = redis.call('HMGET', n, unpack(fields))
for i = 1, #v, 3 do
  count = count + tonumber(v[i] or 0); wins = wins + tonumber(v[i + 1] or 0); roi = roi + tonumber(v[i + 2] or 0)
end
-- best_roi: whole days after the edge day from their tops; the edge day from its top down,
-- skipping signals at or before the cutoff (the edge hour's own were seen above).
local edgeDay = math.floor(cutoff / ${DAY})
for d = edgeDay + 1, math.floor(nowMs / ${DAY}) + 1 do
  local top = redis.call('ZRANGE', p .. 'rd:' .. typ .. ':' .. d, 0, 0, 'REV', 'WITHSCORES')
  better(top[2])
end
local dayKey = p .. 'rd:' .. typ .. ':' .. edgeDay
local from = 0
while true do
  local chunk = redis.call('ZRANGE', dayKey, from, from + 99, 'REV', 'WITHSCORES')
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
  from = from + 100
end
return {count, wins, roi, best and tostring(best) or false}
`);

export class StatsAggregates {
  readonly prefix: string;
  readonly model: RedisReadModel;

  constructor(
    readonly redis: Redis,
    keyPrefix: string,
    /** The stats database's identity (service-kit `sourceEpoch`). */
    epoch: string,
    logger: Logger,
  ) {
    this.prefix = `${keyPrefix}stats:{agg}:`;
    this.model = new RedisReadModel(redis, this.prefix, epoch, logger);
  }

  /** Version-guarded, pipelined; returns how many changed anything. */
  async apply(signals: ProjectedSignal[]): Promise<number> {
    let changed = 0;
    for (let i = 0; i < signals.length; i += 1000) {
      const results = await APPLY.runMany(
        this.redis,
        signals.slice(i, i + 1000).map((s) => ({
          keys: [this.prefix],
          args: [
            s._id,
            s.version,
            s.type,
            new Date(s.created_at).getTime(),
            s.is_winner,
            Math.round(s.roi * ROI_SCALE),
          ],
        })),
      );
      changed += results.filter((r) => r === 1).length;
    }
    return changed;
  }

  /**
   * Rows per type and the best ROI for created_at > since, or undefined while the model is
   * incomplete. One pipelined round trip for all types.
   */
  async figures(
    type: SignalType | undefined,
    since: Date | undefined,
    now = Date.now(),
  ): Promise<{ rows: GroupRow[]; bestRoi: number | undefined } | undefined> {
    const types = type ? [type] : [...SIGNAL_TYPES];
    const replies = await PERIOD.runMany(
      this.redis,
      types.map((t) => ({
        keys: [this.prefix],
        args: [t, since ? String(since.getTime()) : '', now, this.model.epoch],
      })),
    );
    const rows: GroupRow[] = [];
    let bestRoi: number | undefined;
    for (const [i, reply] of replies.entries()) {
      if (!Array.isArray(reply)) return undefined;
      const t = types[i];
      const [count, winners, roiSum, best] = reply;
      if (!t || Number(count) === 0) continue;
      rows.push({
        _id: t,
        total: Number(count),
        winners: Number(winners),
        roi_sum: Number(roiSum) / ROI_SCALE,
      });
      if (typeof best === 'string') {
        const b = Number(best) / ROI_SCALE;
        if (bestRoi === undefined || b > bestRoi) bestRoi = b;
      }
    }
    return { rows, bestRoi };
  }
}
