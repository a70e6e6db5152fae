import { createServer, type ServerResponse } from 'node:http';
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
 */
const accountId = requiredEnv('BENCH_ACCOUNT_ID');
const tokens = internalTokensFromEnv();
const pool = new Pool(new URL(requiredEnv('SIGNALS_URL')).origin, {
  connections: 64,
  pipelining: 1,
  keepAliveTimeout: 30_000,
  keepAliveMaxTimeout: 60_000,
});

/** Connection-level response headers, which are the hop's own and never passed on. */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'upgrade', 'trailer', 'te']);

/** One relayed response: the service's head, then its body as it comes. */
class Relay implements Dispatcher.DispatchHandler {
  constructor(private readonly res: ServerResponse) {}

  onRequestStart(): void {
    // Nothing to keep: a client that leaves mid-response gets the rest written to a closed socket.
  }

  onResponseStart(
    _c: Dispatcher.DispatchController,
    status: number,
    headers: Record<string, string | string[] | undefined>,
  ): void {
    const head: string[] = [];
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

createServer((req, res) => {
  if (req.url === '/readyz') {
    res.writeHead(200, ['content-type', 'application/json']);
    res.end('{"ok":true}');
    return;
  }
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
    new Relay(res),
  );
}).listen(Number(requiredEnv('PORT')), '127.0.0.1');
// An exit of its own on the bench's SIGTERM, so that --cpu-prof writes the profile.
process.once('SIGTERM', () => process.exit(0));
