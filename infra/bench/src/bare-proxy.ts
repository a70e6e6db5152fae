import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { hashApiKey } from '@signal/api-gateway/dist/accounts/domain/api-key';
import { RateLimitStore } from '@signal/api-gateway/dist/edge/data/rate-limit.store';
import { rateView } from '@signal/api-gateway/dist/edge/domain/rate-limit';
import { rateLimitHeaders } from '@signal/api-gateway/dist/edge/http/rate-limit-headers';
import { bearerToken, connectRedis, createLogger } from '@signal/service-kit';
import { Pool, type Dispatcher } from 'undici';
import { internalTokensFromEnv, requiredEnv } from './proxy-env';

/**
 * The gateway bench's scenario (f): the platform's floor for a proxy on node:http and undici —
 * what any gateway built on them pays per request before it does anything of its own. A
 * node:http server whose every request goes to the service through an undici Pool's
 * `dispatch` (keep-alive, one request per connection at a time, as the gateway's pool), with
 * the internal token the service needs (cached, as the gateway caches it), the response's
 * status and headers (less connection-level ones) written as they came and its body streamed
 * back. No API key, no limits, no usage, no request id, no logs or metrics: (b) and (d) against
 * (f) is what the gateway's own code costs, and (f) against (p) how far below the Express build
 * the platform alone goes. Environment: PORT, SIGNALS_URL, INTERNAL_JWT_PRIVATE_KEY,
 * BENCH_ACCOUNT_ID.
 *
 * With BENCH_LIMITER=1 (and REDIS_URL, REDIS_PREFIX, API_KEY_PEPPER, BENCH_API_KEY) it is
 * scenario (r): the floor plus what the spec and the architecture require of every request with
 * an API key, and nothing else — the key found in memory by its keyed hash (HMAC-SHA-256 with the
 * pepper), the one atomic limiter call (both windows and the revoked set in one Redis script run,
 * through the gateway's `RateLimitStore` and Redis client, awaited before the request goes on)
 * and the X-RateLimit-* headers on the response. No store, in-flight bound, usage, request id,
 * security headers, logs or metrics: (r) against (p) is the lowest CPU b/p a gateway that meets
 * the spec can reach on this platform, and (b) against (r) what the rest of ours costs.
 */
const accountId = requiredEnv('BENCH_ACCOUNT_ID');
let limiter: RateLimitStore | undefined;
const pepper = process.env.API_KEY_PEPPER ?? '';
/** The keys (r) knows, by their keyed hash, as the gateway's key cache holds them: the bench's one. */
const knownKeys = new Map<string, string>();
/** Limits no bench run reaches: every request is admitted, as the bench account's plan admits them. */
const subject = { subject: accountId, perMinute: 1_000_000_000, perDay: 1_000_000_000 };
const tokens = internalTokensFromEnv();
const pool = new Pool(new URL(requiredEnv('SIGNALS_URL')).origin, {
  connections: 64,
  pipelining: 1,
  keepAliveTimeout: 30_000,
  keepAliveMaxTimeout: 60_000,
});

/** Connection-level response headers, which are the hop's own and never passed on. */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'upgrade', 'trailer', 'te']);

/** One relayed response: the service's head (after `own`, the proxy's own headers), then its body. */
class Relay implements Dispatcher.DispatchHandler {
  constructor(
    private readonly res: ServerResponse,
    private readonly own: string[] = [],
  ) {}

  onRequestStart(): void {
    // Nothing to keep: a client that leaves mid-response gets the rest written to a closed socket.
  }

  onResponseStart(
    _c: Dispatcher.DispatchController,
    status: number,
    headers: Record<string, string | string[] | undefined>,
  ): void {
    const head = this.own;
    for (const name in headers) {
      if (HOP_BY_HOP.has(name)) continue;
      const value = headers[name];
      if (typeof value === 'string') head.push(name, value);
      else if (value !== undefined) for (const v of value) head.push(name, v);
    }
    this.res.writeHead(status, head);
  }

  onResponseData(_c: Dispatcher.DispatchController, chunk: Buffer): void {
    this.res.write(chunk);
  }

  onResponseEnd(): void {
    this.res.end();
  }

  onResponseError(_c: Dispatcher.DispatchController, err: Error): void {
    if (this.res.headersSent) {
      this.res.destroy(err);
      return;
    }
    this.res.writeHead(502, ['content-type', 'text/plain']);
    this.res.end('bad gateway');
  }
}

const server = createServer((req, res) => {
  if (req.url === '/readyz') {
    res.writeHead(200, ['content-type', 'application/json']);
    res.end('{"ok":true}');
    return;
  }
  if (!limiter) {
    send(req, res, []);
    return;
  }
  // The key found by its keyed hash, as the gateway's key cache finds it.
  const key = bearerToken(req.headers.authorization);
  if (!key || knownKeys.get(hashApiKey(key, pepper)) !== accountId) {
    res.writeHead(401, ['content-type', 'text/plain']);
    res.end('no key');
    return;
  }
  limiter.checkKey(subject, 'bench-key').then(
    (decision) => {
      if (decision.outcome === 'allowed') {
        send(req, res, rateLimitHeaders(rateView(decision.minute, decision.day)));
      } else {
        res.writeHead(429, ['content-type', 'text/plain']);
        res.end('limited');
      }
    },
    () => {
      res.writeHead(503, ['content-type', 'text/plain']);
      res.end('redis unavailable');
    },
  );
});

void (async () => {
  if (process.env.BENCH_LIMITER === '1') {
    knownKeys.set(hashApiKey(requiredEnv('BENCH_API_KEY'), pepper), accountId);
    limiter = new RateLimitStore(
      await connectRedis(requiredEnv('REDIS_URL'), createLogger('bench-floor-limiter', 'warn')),
      process.env.REDIS_PREFIX ?? '',
    );
  }
  server.listen(Number(requiredEnv('PORT')), '127.0.0.1');
})();

/** The request, relayed to the service. */
function send(req: IncomingMessage, res: ServerResponse, own: string[]): void {
  const accept = req.headers.accept;
  pool.dispatch(
    {
      method: req.method ?? 'GET',
      path: req.url ?? '/',
      headers: [
        ...(accept ? ['accept', accept] : []),
        'authorization',
        `Bearer ${tokens.get('signals', accountId)}`,
      ],
    },
    new Relay(res, own),
  );
}
// An exit of its own on the bench's SIGTERM, so that --cpu-prof writes the profile.
process.once('SIGTERM', () => process.exit(0));
