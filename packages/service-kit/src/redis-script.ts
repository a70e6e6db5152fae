import { createHash } from 'node:crypto';
import type Redis from 'ioredis';

export type ScriptArg = string | number;
export interface ScriptCall {
  keys: string[];
  args: ScriptArg[];
}

const isNoScript = (err: unknown): boolean => err instanceof Error && err.message.startsWith('NOSCRIPT');

/**
 * A Lua script run by its SHA, loaded again by itself when Redis forgot it (restart, flush,
 * failover). Kept here rather than ioredis `defineCommand` because that adds untyped methods
 * to the client; this stays typed and also runs many calls in one pipelined round trip.
 */
export class RedisScript {
  readonly sha: string;

  constructor(readonly lua: string) {
    this.sha = createHash('sha1').update(lua).digest('hex');
  }

  async run(redis: Redis, keys: string[], args: ScriptArg[]): Promise<unknown> {
    try {
      return await redis.evalsha(this.sha, keys.length, ...keys, ...args);
    } catch (err) {
      if (!isNoScript(err)) throw err;
      return redis.eval(this.lua, keys.length, ...keys, ...args);
    }
  }

  /** Many calls in one round trip; the first error fails the batch (each call is idempotent). */
  async runMany(redis: Redis, calls: ScriptCall[]): Promise<unknown[]> {
    if (calls.length === 0) return [];
    for (let attempt = 0; ; attempt++) {
      const pipeline = redis.pipeline();
      for (const c of calls) pipeline.evalsha(this.sha, c.keys.length, ...c.keys, ...c.args);
      const results = (await pipeline.exec()) ?? [];
      const failed = results.find(([err]) => err !== null)?.[0];
      if (!failed) return results.map(([, value]) => value);
      if (!isNoScript(failed) || attempt > 0) throw failed;
      await redis.script('LOAD', this.lua);
    }
  }
}
