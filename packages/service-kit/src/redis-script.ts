import { createHash } from 'node:crypto';
import { Cluster } from 'ioredis';
import { pipelineEach, type RedisClient } from './redis';

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
 * On a Cluster each call runs on the node of its first key, and every key the script touches
 * (those it builds from KEYS[1] too) must share that key's hash tag.
 */
export class RedisScript {
  readonly sha: string;

  constructor(readonly lua: string) {
    this.sha = createHash('sha1').update(lua).digest('hex');
  }

  async run(redis: RedisClient, keys: string[], args: ScriptArg[]): Promise<unknown> {
    try {
      return await redis.evalsha(this.sha, keys.length, ...keys, ...args);
    } catch (err) {
      if (!isNoScript(err)) throw err;
      return redis.eval(this.lua, keys.length, ...keys, ...args);
    }
  }

  /**
   * Many calls in one write, each with its own outcome (one failing call fails only itself); the
   * script is loaded again once if Redis forgot it.
   */
  async runEach(
    redis: RedisClient,
    calls: ScriptCall[],
  ): Promise<Array<{ ok: true; value: unknown } | { ok: false; error: unknown }>> {
    const outcomes: Array<{ ok: true; value: unknown } | { ok: false; error: unknown }> = [];
    let todo = calls.map((_, i) => i);
    for (let attempt = 0; todo.length > 0; attempt++) {
      const results = await pipelineEach(
        redis,
        todo,
        (i) => calls[i]!.keys[0] ?? '',
        (pipeline, i) =>
          pipeline.evalsha(this.sha, calls[i]!.keys.length, ...calls[i]!.keys, ...calls[i]!.args),
      );
      const forgotten: number[] = [];
      todo.forEach((call, n) => {
        const [err, value] = results[n]?.[0] ?? [new Error('no reply from the pipeline'), undefined];
        // Only the calls Redis refused for want of the script run again (the others ran: once).
        if (err && isNoScript(err) && attempt === 0) forgotten.push(call);
        else outcomes[call] = err ? { ok: false, error: err } : { ok: true, value };
      });
      if (forgotten.length > 0) await this.load(redis);
      todo = forgotten;
    }
    return outcomes;
  }

  /** Loads the script where its calls run: the server, or every master of a Cluster. */
  private async load(redis: RedisClient): Promise<void> {
    const servers = redis instanceof Cluster ? redis.nodes('master') : [redis];
    await Promise.all(servers.map((server) => server.script('LOAD', this.lua)));
  }

  /** Many calls in one round trip; the first error fails the batch (each call is idempotent). */
  async runMany(redis: RedisClient, calls: ScriptCall[]): Promise<unknown[]> {
    const outcomes = await this.runEach(redis, calls);
    return outcomes.map((outcome) => {
      if (!outcome.ok) throw outcome.error;
      return outcome.value;
    });
  }
}
