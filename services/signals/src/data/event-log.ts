import { RedisScript, clusterOf, type RedisClient } from '@signal/service-kit';
import {
  logEntryFields,
  parseLogEntry,
  type AppendOutcome,
  type LogEntry,
  type ReadEntry,
} from '../domain/live-stream';

/**
 * Appends an event once. A redelivered bus message (the broker hands it out again after a
 * consumer died, or a replica that failed its acknowledgement) finds its event id's mark and adds
 * nothing; every replica's feeder takes messages from one queue, so this is what makes the log
 * exactly-once. The mark is set after XADD, not before it: Redis does not undo a script's earlier
 * writes when a later command fails, and a mark without its entry would drop the event on retry.
 * XADD trims by time (`MINID ~`), by whole blocks, so the log keeps at least the retention.
 */
const APPEND = new RedisScript(`
local seen = redis.call('GET', KEYS[2])
if not seen and KEYS[3] then seen = redis.call('GET', KEYS[3]) end
if seen then return {0, seen} end
local id = redis.call('XADD', KEYS[1], 'MINID', '~', ARGV[2], '*', unpack(ARGV, 3))
redis.call('SET', KEYS[2], id, 'EX', ARGV[1])
if KEYS[3] then redis.call('SET', KEYS[3], id, 'EX', ARGV[1]) end
return {1, id}
`);

type RawEntries = Array<[id: string, fields: string[]]>;

function readEntries(raw: RawEntries): ReadEntry[] {
  return raw.map(([id, fields]) => ({ id, entry: parseLogEntry(id, fields) }));
}

/** The live stream's event log: a Redis Stream under REDIS_PREFIX, trimmed by time. */
export class EventLog {
  readonly key: string;

  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
    private readonly retentionMs: number,
  ) {
    this.key = `${prefix}signal-events:stream`;
  }

  /**
   * The append script's mark for an event: tagged with the log's whole name (which has no tag of
   * its own), so mark and log share one Redis Cluster slot.
   */
  private seenKey(eventId: string): string {
    return `${this.prefix}signal-events:seen:{${this.key}}:${eventId}`;
  }

  /**
   * The mark's name before Redis Cluster support (release eb2b570 and earlier). On one Redis
   * server the append reads and writes it beside the tagged mark, so replicas of either version
   * appending side by side during a rolling upgrade (or a rollback) still append each event once:
   * without it, an event the old replica appended is appended again by the new one, and every
   * stream client receives it twice. No release before Redis Cluster support ran on a cluster, so
   * a cluster never needs it. Marks live for the log's retention: drop this once the release
   * before it is out of the rollback window (docs/versioning.md).
   */
  private legacySeenKey(eventId: string): string[] {
    return clusterOf(this.redis) ? [] : [`${this.prefix}signal-events:seen:${eventId}`];
  }

  /** Appends each event unless it was appended before; one round trip for all of them, in order. */
  async append(entries: Array<Omit<LogEntry, 'id'>>, now = Date.now()): Promise<AppendOutcome[]> {
    const minId = `${Math.max(0, now - this.retentionMs)}-0`;
    const ttlSeconds = Math.ceil(this.retentionMs / 1000);
    const outcomes = await APPEND.runEach(
      this.redis,
      entries.map((entry) => ({
        keys: [this.key, this.seenKey(entry.eventId), ...this.legacySeenKey(entry.eventId)],
        args: [ttlSeconds, minId, ...logEntryFields(entry)],
      })),
    );
    return outcomes.map((outcome): AppendOutcome => {
      if (!outcome.ok) return outcome;
      const value = outcome.value;
      if (!Array.isArray(value) || typeof value[1] !== 'string')
        return { ok: false, error: new Error('unexpected reply from the append script') };
      return { ok: true, id: value[1], added: value[0] === 1 };
    });
  }

  /** Up to `count` entries after `id` (exclusive), oldest first. */
  async after(id: string, count: number): Promise<ReadEntry[]> {
    return readEntries(await this.redis.xrange(this.key, `(${id}`, '+', 'COUNT', count));
  }

  /** Does the log hold an entry with this id? */
  async holds(id: string): Promise<boolean> {
    return (await this.redis.xrange(this.key, id, id, 'COUNT', 1)).length === 1;
  }

  /** The oldest entry's id, or undefined for an empty log. */
  async first(): Promise<string | undefined> {
    return (await this.redis.xrange(this.key, '-', '+', 'COUNT', 1))[0]?.[0];
  }

  /** The newest entry's id, or undefined for an empty log. */
  async last(): Promise<string | undefined> {
    return (await this.redis.xrevrange(this.key, '+', '-', 'COUNT', 1))[0]?.[0];
  }

  /**
   * Waits up to `blockMs` for entries after `id` on `connection` (a connection of its own: XREAD
   * BLOCK holds it for the whole wait).
   */
  async waitAfter(connection: RedisClient, id: string, count: number, blockMs: number): Promise<ReadEntry[]> {
    const reply = await connection.xread('COUNT', count, 'BLOCK', blockMs, 'STREAMS', this.key, id);
    return reply ? readEntries(reply.flatMap(([, entries]) => entries)) : [];
  }
}
