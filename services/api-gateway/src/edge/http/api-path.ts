import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  currentTraceId,
  errorResponse,
  pathOfTarget,
  quotedForMessage,
  requestContext,
  requestIdOf,
  writeAccessLine,
  type Logger,
} from '@signal/service-kit';
import { usageOwnerOf, windowOf, type AuthResult } from '../domain/authenticate.use-case';
import { refusalOf } from './auth-refusal';
import { outcomeOf, type UsageLedger } from '../domain/usage';
import type { ClientIp } from './client-ip';
import { KeyPathMetrics } from './key-path-metrics';
import { pushRateLimitHeaders } from './rate-limit-headers';
import { STREAMING, bringsBody, relay, type Refusal, type RelayDeps } from './relay';
import type { LiveStreamListener } from '../../stream/http/live-streams';
import { routeLabelOf, serviceRouteOf, type ServiceName } from './service-routes';
import type { Upstream } from '../../http/upstream';

export interface ApiPathDeps extends RelayDeps {
  /** The auth pipeline (the bench passes one that admits every request as one account). */
  authenticate: (authorization: string | undefined, ip: string) => Promise<AuthResult>;
  upstreams: Record<ServiceName, Upstream>;
  usage?: UsageLedger;
  clientIp: ClientIp;
  /** Security headers prepared once: [name, value, …]. */
  securityHeaders: string[];
  logger: Logger;
}

/** What the key path prepares once: nothing else is built per request but the request's own. */
interface KeyPath {
  deps: ApiPathDeps;
  /** The names of the headers the gateway sets itself: the service's values of these give way. */
  ownHeaderNames: ReadonlySet<string>;
  metrics: KeyPathMetrics;
}

/**
 * One request on the key path, as it goes. A live stream outlives the code that admitted it:
 * this object is what stays of the request until the stream ends (then it records the request),
 * in place of a waiting async function with its promises and closures.
 */
class KeyRequest implements LiveStreamListener {
  readonly method: string;
  readonly url: string;
  /** The metrics label of the request's route. */
  route = 'unmatched';
  /** Whose usage the request counts as (none: no credential to count it against). */
  usageOf: { accountId: string; keyId: string } | undefined = undefined;

  constructor(
    private readonly path: KeyPath,
    readonly req: IncomingMessage,
    readonly res: ServerResponse,
    readonly requestId: string,
    /** The response's headers so far: [name, value, …]. */
    readonly head: string[],
    private readonly started: bigint,
    private readonly traceId: string | undefined,
  ) {
    this.url = req.url ?? '/';
    this.method = req.method ?? 'GET';
  }

  /** The live stream the feed served ended: the request is recorded with what its client got. */
  liveStreamEnded(served: { status: number; overflowed: boolean }): void {
    if (served.overflowed) this.path.metrics.slowReader();
    this.record(served.status);
  }

  /** What the request came to: its metrics, its access line, its usage. */
  record(status: number): void {
    const { deps, metrics } = this.path;
    metrics.observe(this.method, this.route, status, this.started);
    writeAccessLine(deps.logger, {
      method: this.method,
      path: pathOfTarget(this.url),
      status,
      started: this.started,
      requestId: this.requestId,
      traceId: this.traceId,
    });
    if (deps.usage && this.usageOf)
      deps.usage.count(this.usageOf.accountId, this.usageOf.keyId, outcomeOf(status));
  }
}

/**
 * The API-key path (every /v1 route the services serve), on node:http without Express: one
 * auth pipeline call (at most one Redis round trip for a known key), then the relay to the
 * owning service on undici. Headers are prepared once; nothing else runs per request.
 * Everything else (login, account, dashboard, docs, health) stays on the Express app.
 */
export function apiPath(deps: ApiPathDeps) {
  const ownHeaderNames = new Set<string>(['x-request-id', 'cache-control']);
  for (let i = 0; i < deps.securityHeaders.length; i += 2)
    ownHeaderNames.add(deps.securityHeaders[i]!.toLowerCase());
  const path: KeyPath = { deps, ownHeaderNames, metrics: new KeyPathMetrics() };
  return {
    /** Serves one request of this path; never throws, never leaves a request without a response. */
    handle(req: IncomingMessage, res: ServerResponse): void {
      const started = process.hrtime.bigint();
      const requestId = requestIdOf(req.headers['x-request-id']);
      const traceId = currentTraceId();
      requestContext.run({ requestId }, () => void serve(path, req, res, requestId, started, traceId));
    },
  };
}

/**
 * Authenticates the request, relays it if admitted, and records what it came to (a live stream,
 * once it ends: see `KeyRequest`).
 */
async function serve(
  path: KeyPath,
  req: IncomingMessage,
  res: ServerResponse,
  requestId: string,
  started: bigint,
  traceId?: string,
): Promise<void> {
  const { deps } = path;
  const head = deps.securityHeaders.slice();
  head.push('X-Request-Id', requestId);
  const r = new KeyRequest(path, req, res, requestId, head, started, traceId);
  const { url, method } = r;
  const target = serviceRouteOf(url);
  if (target) r.route = routeLabelOf(url, target.prefix);
  const ip = deps.clientIp(req.socket.remoteAddress, req.headers['x-forwarded-for']);
  const authorization = typeof req.headers.authorization === 'string' ? req.headers.authorization : undefined;
  // A request refused with its body unread ends its connection: what is left of the body cannot
  // be told from a next request (and is not waited for).
  const close = bringsBody(req);
  let status: number;
  let result: AuthResult | undefined;
  try {
    result = await deps.authenticate(authorization, ip);
    const who = usageOwnerOf(result);
    if (who) r.usageOf = { accountId: who.accountId, keyId: who.keyId };
    path.metrics.countDecision(decisionOf(result));
    const window = windowOf(result);
    if (window) pushRateLimitHeaders(head, window);
    if (!result.ok) {
      if (result.code === 'TOO_MANY_IN_FLIGHT') path.metrics.busyAccount();
      status = sendError(r, { close, ...refusalOf(result, authorization) });
    } else if (!target) {
      status = sendError(r, {
        code: 'NOT_FOUND',
        close,
        message: `No route for ${method} ${quotedForMessage(pathOfTarget(url))}`,
      });
    } else {
      const upstream = deps.upstreams[target.service];
      // The admitted key is the relay's caller as it is (its account, caps, expiry, place in flight).
      const relayed = await relay(
        deps,
        {
          via: 'key',
          req,
          res,
          upstream,
          url,
          requestId,
          clientIp: ip,
          head,
          ownHeaderNames: path.ownHeaderNames,
          refuse: (refusal) => {
            if (refusal.cause !== undefined)
              deps.logger.error(
                { err: refusal.cause, code: refusal.code, upstream: upstream.name },
                'request failed',
              );
            return sendError(r, refusal);
          },
          streamListener: r,
        },
        result,
      );
      // A live stream the feed serves now: recorded when it ends.
      if (relayed === STREAMING) return;
      if (relayed.slowReader) path.metrics.slowReader();
      status = relayed.status;
    }
  } catch (err) {
    deps.logger.error({ err, code: 'INTERNAL_ERROR' }, 'request failed');
    status = res.headersSent ? 500 : sendError(r, { code: 'INTERNAL_ERROR' });
    if (res.headersSent) res.destroy();
  } finally {
    if (result?.ok) result.release();
  }
  r.record(status);
}

/** Responds with the error envelope and the headers so far; the status sent. */
function sendError(r: KeyRequest, refusal: Refusal): number {
  const { status, body } = errorResponse(
    {
      code: refusal.code,
      message: refusal.message,
      retryAfter: refusal.retryAfter,
      details: refusal.details,
    },
    r.requestId,
  );
  if (r.res.destroyed) return status;
  const { head } = r;
  if (refusal.retryAfter !== undefined) head.push('Retry-After', String(refusal.retryAfter));
  if (refusal.close) head.push('Connection', 'close');
  head.push(
    'Content-Type',
    'application/json; charset=utf-8',
    'Content-Length',
    String(Buffer.byteLength(body)),
  );
  r.res.writeHead(status, head);
  r.res.end(body);
  return status;
}

/** The limiter decision a result stands for (the ratelimit_decisions_total label). */
function decisionOf(result: AuthResult): string {
  if (result.ok) return 'allowed';
  return result.code.toLowerCase();
}
