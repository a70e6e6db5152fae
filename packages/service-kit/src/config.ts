import { ConnectionString } from 'mongodb-connection-string-url';
import { z } from 'zod';
import { parseRedisUrl } from './redis';

/**
 * Parses the environment once at start-up. A bad value stops the process with one clear
 * line per variable (trigger.dev's `Env.parse`), never a stack trace.
 */
export function parseConfig<S extends z.ZodType>(
  serviceName: string,
  schema: S,
  env: NodeJS.ProcessEnv = process.env,
): z.infer<S> {
  const result = schema.safeParse(env);
  if (result.success) return result.data;
  const lines = result.error.issues.map((i) => `  ${i.path.join('.') || '(env)'}: ${i.message}`);
  process.stderr.write(`${serviceName}: invalid configuration\n${lines.join('\n')}\n`);
  process.exit(1);
}

/** Env building blocks shared by every service. */
export const env = {
  port: (fallback: number) => z.coerce.number().int().min(0).max(65535).default(fallback),
  /**
   * A URL whose scheme is one of `protocols`. `mongodb`/`mongodb+srv` values are checked as
   * MongoDB connection strings (seed lists, SRV, options), which WHATWG URL parsing refuses.
   */
  url: (protocols: string[]) =>
    z.string({ error: 'is required' }).superRefine((value, ctx) => {
      const problem = urlProblem(value, protocols);
      if (problem) ctx.addIssue({ code: 'custom', message: problem });
    }),
  /**
   * A comma-separated list of URLs (e.g. several brokers), each checked as `url`; parsed into
   * the array of its items in order.
   */
  urlList: (protocols: string[]) =>
    z
      .string({ error: 'is required' })
      .superRefine((value, ctx) => {
        const problem = urlListProblem(value, protocols);
        if (problem) ctx.addIssue({ code: 'custom', message: problem });
      })
      .transform(splitList),
  /** `redis://`, `rediss://`, a Unix socket `unix:///path/redis.sock`, a Sentinel URL `redis-sentinel://h1:26379,h2:26379/masterName` or a Cluster `redis-cluster://h1:6379,h2:6379` (see `parseRedisUrl`). */
  redisUrl: () =>
    z.string({ error: 'is required' }).superRefine((value, ctx) => {
      try {
        parseRedisUrl(value);
      } catch (err) {
        const reason = err instanceof Error ? err.message : 'unparsable';
        ctx.addIssue({
          code: 'custom',
          message: `must be a Redis URL (redis://host:6379, unix:///path/redis.sock, redis-sentinel://host1:26379,host2:26379/masterName or redis-cluster://host1:6379,host2:6379): ${reason}`,
        });
      }
    }),
  secret: (minLength = 32) =>
    z.string({ error: 'is required' }).min(minLength, `must be at least ${minLength} characters`),
  int: (fallback: number, min = 0, max = Number.MAX_SAFE_INTEGER) =>
    z.coerce.number().int().min(min).max(max).default(fallback),
  bool: (fallback: boolean) =>
    z
      .enum(['true', 'false', '1', '0'])
      .default(fallback ? 'true' : 'false')
      .transform((v) => v === 'true' || v === '1'),
  logLevel: () => z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  nodeEnv: () => z.enum(['development', 'test', 'production']).default('development'),
};

const MONGO_SCHEMES = new Set(['mongodb', 'mongodb+srv']);
/** `host`, `host:port`, `[v6]:port` or a percent-encoded socket path (`%2Ftmp%2Fm.sock`). */
const MONGO_HOST = /^(?:\[[0-9A-Fa-f:.]+(?:%[\w.-]+)?\]|[A-Za-z0-9._~%-]+)(?::(\d{1,5}))?$/;

/** Splits a comma-separated list, trimming items and dropping empty ones. */
function splitList(value: string): string[] {
  return value
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item.length > 0);
}

function urlListProblem(value: string, protocols: string[]): string | undefined {
  const items = splitList(value);
  if (items.length === 0) return 'must be a URL or a comma-separated list of URLs';
  for (const [i, item] of items.entries()) {
    const problem = urlProblem(item, protocols);
    if (problem) return items.length === 1 ? problem : `item ${i + 1} of ${items.length} ${problem}`;
  }
  return undefined;
}

/**
 * Why `value` is not an acceptable URL, or undefined. Messages never echo the value (it may
 * hold credentials).
 */
function urlProblem(value: string, protocols: string[]): string | undefined {
  const scheme = /^([A-Za-z][A-Za-z0-9+.-]*):\/\//.exec(value)?.[1]?.toLowerCase();
  if (scheme === undefined) return 'must be a URL';
  if (!protocols.includes(scheme)) return `must start with ${protocols.join(' or ')}:`;
  if (MONGO_SCHEMES.has(scheme)) return mongoProblem(value);
  if (!z.url().safeParse(value).success) return 'must be a URL';
  return new URL(value).hostname === '' ? 'must be a URL with a host' : undefined;
}

function mongoProblem(value: string): string | undefined {
  const expected =
    'must be a URL: a MongoDB connection string such as mongodb://host1:27017,host2:27017/db?replicaSet=rs0';
  // Checked before parsing: mongodb-connection-string-url 7 rejects a second "@" with a bare
  // "Invalid connection string", which does not tell the operator what to fix.
  const authority = value.slice(value.indexOf('://') + 3).split(/[/?]/, 1)[0] ?? '';
  if (authority.split('@').length > 2)
    return `${expected} (an "@" in the credentials must be percent-encoded)`;
  let parsed: ConnectionString;
  try {
    parsed = new ConnectionString(value);
  } catch (err) {
    const reason = err instanceof Error ? err.message.split(value).join('the URL') : 'unparsable';
    return `${expected} (${reason})`;
  }
  for (const host of parsed.hosts) {
    const m = MONGO_HOST.exec(host);
    const port = m?.[1] === undefined ? undefined : Number(m[1]);
    if (!m || (port !== undefined && (port < 1 || port > 65535)))
      return `${expected} (a host is empty or not host[:port] with a port from 1 to 65535)`;
  }
  return undefined;
}
