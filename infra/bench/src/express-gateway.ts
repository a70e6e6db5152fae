import { createHash } from 'node:crypto';
import { Agent } from 'node:http';
import { redisClient } from '@signal/service-kit';
import express, { type NextFunction, type Request, type Response } from 'express';
import { rateLimit } from 'express-rate-limit';
import { createProxyMiddleware } from 'http-proxy-middleware';
import { RedisStore, type RedisReply } from 'rate-limit-redis';
import { internalTokensFromEnv, requiredEnv } from './proxy-env';

/**
 * The gateway bench's scenario (p): the Express gateway a team would build instead of ours —
 * the API key looked up by its hash in Redis on every request, express-rate-limit with
 * rate-limit-redis for the minute and the day window, http-proxy-middleware (keep-alive) to the
 * service with an internal token. Environment: PORT, REDIS_URL, BENCH_PREFIX, SIGNALS_URL,
 * INTERNAL_JWT_PRIVATE_KEY; keys as `<prefix>pkey:<sha256 hex>` → JSON { accountId,
 * perMinute, perDay } (the bench writes them).
 */
const prefix = requiredEnv('BENCH_PREFIX');
const redis = redisClient(requiredEnv('REDIS_URL'));
const tokens = internalTokensFromEnv();

interface KeyRecord {
  accountId: string;
  perMinute: number;
  perDay: number;
}

const isKeyRecord = (v: unknown): v is KeyRecord =>
  typeof v === 'object' &&
  v !== null &&
  'accountId' in v &&
  typeof v.accountId === 'string' &&
  'perMinute' in v &&
  typeof v.perMinute === 'number' &&
  'perDay' in v &&
  typeof v.perDay === 'number';

const recordOf = (res: Response): KeyRecord => {
  const record: unknown = res.locals.key;
  if (!isKeyRecord(record)) throw new Error('no key record');
  return record;
};

async function authenticate(req: Request, res: Response, next: NextFunction): Promise<void> {
  const key = /^Bearer (.+)$/.exec(req.header('authorization') ?? '')?.[1];
  const raw = key ? await redis.get(`${prefix}pkey:${createHash('sha256').update(key).digest('hex')}`) : null;
  const record: unknown = raw ? JSON.parse(raw) : undefined;
  if (!isKeyRecord(record)) {
    res.status(401).json({ success: false, error: { code: 'UNAUTHORIZED', message: 'Invalid API key' } });
    return;
  }
  res.locals.key = record;
  next();
}

const sendCommand = async (command: string, ...args: string[]): Promise<RedisReply> => {
  const reply: unknown = await redis.call(command, ...args);
  if (typeof reply === 'number' || typeof reply === 'string') return reply;
  if (Array.isArray(reply)) return reply.map((x) => (typeof x === 'number' ? x : String(x)));
  return String(reply);
};

const window = (name: string, windowMs: number, limitOf: (k: KeyRecord) => number) =>
  rateLimit({
    windowMs,
    limit: (_req, res) => limitOf(recordOf(res)),
    keyGenerator: (_req, res) => recordOf(res).accountId,
    legacyHeaders: true,
    standardHeaders: false,
    store: new RedisStore({ sendCommand, prefix: `${prefix}${name}:` }),
  });

const app = express();
app.disable('x-powered-by');
app.get('/readyz', (_req, res) => {
  res.json({ ok: true });
});
app.use(authenticate);
app.use(window('rl-minute', 60_000, (k) => k.perMinute));
app.use(window('rl-day', 86_400_000, (k) => k.perDay));
app.use(
  createProxyMiddleware<Request, Response>({
    target: requiredEnv('SIGNALS_URL'),
    agent: new Agent({ keepAlive: true, maxSockets: 64 }),
    on: {
      proxyReq: (proxyReq, _req, res) => {
        proxyReq.setHeader('authorization', `Bearer ${tokens.get('signals', recordOf(res).accountId)}`);
      },
    },
  }),
);
app.listen(Number(requiredEnv('PORT')), '127.0.0.1');
