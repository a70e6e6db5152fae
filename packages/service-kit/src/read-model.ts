import { randomUUID } from 'node:crypto';
import type { Connection } from 'mongoose';
import type { Logger } from './logger';
import { metrics } from './metrics';
import type { RedisClient } from './redis';
import { isDuplicateKeyError } from './mongo';
import { RedisScript } from './redis-script';

/** Marks a rebuild finished, unless Redis lost the model meanwhile (its `building` mark is gone). */
const FINISH_BUILD = new RedisScript(`
if redis.call('GET', KEYS[1] .. 'building') ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1] .. 'ready', ARGV[2])
redis.call('DEL', KEYS[1] .. 'building')
return 1
`);

/**
 * Deletes the model's keys but the rebuild lock (ARGV[2]) in one script, so each writer's script
 * runs wholly before or wholly after it. A clear in steps (SCAN, then DEL, batch by batch) lets a
 * write land between two batches: its state record (`b`, `c`) survives while its set entries or
 * counters are gone, the rebuild's version-guarded re-apply takes it as applied, and the model
 * stays short of the source for good. The scan's cost grows with the node's keyspace and is paid
 * once per rebuild; on a cluster the script runs on the node of the model's slot, and every key
 * the pattern matches carries the model's hash tag.
 */
const CLEAR = new RedisScript(`
local cursor, deleted = '0', 0
repeat
  local reply = redis.call('SCAN', cursor, 'MATCH', ARGV[1], 'COUNT', 1000)
  cursor = reply[1]
  for _, key in ipairs(reply[2]) do
    if key ~= ARGV[2] then
      redis.call('UNLINK', key)
      deleted = deleted + 1
    end
  end
until cursor == '0'
return deleted
`);

/**
 * The life of a read model that a service keeps in Redis beside its MongoDB source of truth:
 * a `ready` mark that exists only while the model is complete (Redis losing its data — restart,
 * flush, failover — loses the mark too), and a rebuild that streams the source once under a
 * lock, version-guarded so that writes arriving meanwhile stay correct, then sets the mark
 * unless the data was lost again during the rebuild.
 */
export class RedisReadModel {
  constructor(
    readonly redis: RedisClient,
    /** Ends with ':' and carries the model's hash tag, e.g. `p:signals:{timeline}:`. */
    readonly prefix: string,
    /**
     * Identity of the source database (see `sourceEpoch`): the `ready` mark holds it, so a model
     * built from another database sharing this Redis and prefix (or from a wiped one) is never
     * taken for complete.
     */
    readonly epoch: string,
    private readonly logger: Logger,
    private readonly lockMs = 30_000,
  ) {}

  /** The model's name for metrics: its hash tag (`timeline`, `agg`). */
  get name(): string {
    return /\{([^}]+)\}/.exec(this.prefix)?.[1] ?? 'model';
  }

  async isReady(): Promise<boolean> {
    const ready = (await this.redis.get(`${this.prefix}ready`)) === this.epoch;
    metrics.readModelReady().set({ model: this.name }, ready ? 1 : 0);
    return ready;
  }

  /** Records how long after the source write (ms) the model reflected it. */
  observeLag(sourceWrittenAt: number): void {
    metrics.readModelLag().observe({ model: this.name }, Math.max(0, Date.now() - sourceWrittenAt) / 1000);
  }

  /**
   * Rebuilds from `source` (batches of the source of truth) through `apply` (version-guarded).
   * Returns false when another process holds the rebuild lock.
   */
  async rebuild<T>(
    source: () => AsyncIterable<T[]>,
    apply: (batch: T[]) => Promise<void>,
    progress?: (done: number) => void,
  ): Promise<boolean> {
    for (;;) {
      const token = `${Date.now()}-${Math.random().toString(36).slice(2)}`;
      const locked = await this.redis.set(`${this.prefix}lock`, token, 'PX', this.lockMs, 'NX');
      if (locked !== 'OK') return false;
      // Whatever is there was lost in part or built from another source: start empty.
      await this.clearKeys(`${this.prefix}lock`);
      await this.redis.set(`${this.prefix}building`, token);
      this.logger.info({ model: this.prefix }, 'read model: rebuilding from MongoDB');
      let done = 0;
      try {
        for await (const batch of source()) {
          await applyWithRetries(() => apply(batch));
          done += batch.length;
          progress?.(done);
          await this.redis.set(`${this.prefix}lock`, token, 'PX', this.lockMs, 'XX');
        }
        const finished = await FINISH_BUILD.run(this.redis, [this.prefix], [token, this.epoch]);
        if (finished === 1) {
          this.logger.info({ model: this.prefix, items: done }, 'read model: ready');
          return true;
        }
        this.logger.warn({ model: this.prefix }, 'read model: Redis lost it during the rebuild; again');
      } finally {
        await this.redis.del(`${this.prefix}lock`).catch(() => undefined);
      }
    }
  }

  /** Drops the whole model (tests, `--fresh` rebuilds). */
  async clear(): Promise<void> {
    await this.clearKeys('');
  }

  private async clearKeys(keep: string): Promise<void> {
    await CLEAR.run(this.redis, [this.prefix], [`${globEscape(this.prefix)}*`, keep]);
  }
}

/** The prefix as a SCAN pattern's literal part. */
const globEscape = (text: string): string => text.replace(/[*?[\]\\]/g, '\\$&');

/**
 * A batch of a rebuild that failed (Redis too busy to respond within its command timeout, say)
 * is tried again a few times before the rebuild gives up: giving up starts over from an empty
 * model, which under the same load fails again, so the rebuild would never finish.
 */
async function applyWithRetries(apply: () => Promise<void>, attempts = 5): Promise<void> {
  for (let i = 1; ; i++) {
    try {
      await apply();
      return;
    } catch (err) {
      if (i >= attempts) throw err;
      await new Promise((r) => setTimeout(r, 500 * 2 ** (i - 1)));
    }
  }
}

/**
 * The source database's identity for its read models: a random value stored once in the
 * database itself, so a new or wiped database gets a new one.
 */
export async function sourceEpoch(connection: Connection, model: string): Promise<string> {
  const meta = connection.collection<{ _id: string; epoch: string }>('read_model_epochs');
  const candidate = randomUUID();
  await meta
    .updateOne({ _id: model }, { $setOnInsert: { epoch: candidate } }, { upsert: true })
    .catch((err: unknown) => {
      // Two replicas starting at once both upsert: the one that lost the race reads the winner's.
      if (!isDuplicateKeyError(err)) throw err;
    });
  const stored = await meta.findOne({ _id: model });
  return stored?.epoch ?? candidate;
}
