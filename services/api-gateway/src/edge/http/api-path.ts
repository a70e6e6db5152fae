import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ErrorCode } from '@signal/contracts';
import {
  currentTraceId,
  errorResponse,
  isAppError,
  hasBody,
  metrics,
  quotedForMessage,
  requestContext,
  requestIdOf,
  writeAccessLine,
  type FieldProblem,
  type InternalTokenCache,
  type Logger,
} from '@signal/service-kit';
import type { AuthResult } from '../domain/authenticate.use-case';
import type { OpenStreams } from '../domain/open-streams';
import type { PlanCaps } from '../../accounts/domain/plan-caps';
import { outcomeOf, type UsageLedger } from '../domain/usage';
import type { ClientIp } from './client-ip';
import { STREAM_ROUTE, admitStream, streamRequestOf } from './live-streams';
import type { StreamFeed } from './stream-feed';
import { readCookie } from '../../http/cookies';
import { carriesSecrets } from './no-store.middleware';
import { rateLimitHeaders } from './rate-limit-headers';
import {
  MAX_FORWARDED_BYTES,
  bodyRefusal,
  forward,
  forwardedBytes,
  readClientBody,
  serviceUnavailable,
  streamRequestHeaders,
  type Upstream,
} from './upstream';

export interface ApiPathDeps {
  /** The auth pipeline (the bench passes one that admits every request as one account). */
  authenticate: (authorization: string | undefined, ip: string) => Promise<AuthResult>;
  upstreams: { signals: Upstream; stats: Upstream; webhooks: Upstream };
  tokens: InternalTokenCache;
  timeoutMs: number;
  /** Bytes of a response held for a client that is not reading before its connection is cut. */
  maxHeldBytes: number;
  usage?: UsageLedger;
  clientIp: ClientIp;
  /** Security headers prepared once: [name, value, …]. */
  securityHeaders: string[];
  logger: Logger;
  /** Live streams open through this process (their cap, revocation and shutdown). */
  streams: OpenStreams;
  /** A live stream with no bytes from the service this long is dead (heartbeats keep it alive). */
  streamIdleMs: number;
  /** The process's one subscription to the service's stream, which streams from now share. */
  feed: StreamFeed;
}

/**
 * The service's token for the account: the webhooks service's carries the plan's subscription
 * cap (it enforces it); the others need no limits, and their tokens stay one per account.
 */
export function tokenFor(
  tokens: InternalTokenCache,
  upstream: Upstream,
  accountId: string,
  caps: PlanCaps | undefined,
): string {
  return upstream.name === 'webhooks' && caps
    ? tokens.get(upstream.audience, accountId, { webhooks: caps.webhooks })
    : tokens.get(upstream.audience, accountId);
}

const SERVICE = 'api-gateway';
const UPSTREAM_ROUTE = /^\/v1\/(signals|stats|webhooks)(?=[/?]|$)/i;

type Refusal = Exclude<AuthResult, { ok: true }>;

const REFUSAL: Record<Refusal['code'], ErrorCode> = {
  UNAUTHORIZED: 'UNAUTHORIZED',
  KEY_EXPIRED: 'KEY_EXPIRED',
  RATE_LIMITED: 'RATE_LIMIT_EXCEEDED',
  TOO_MANY_IN_FLIGHT: 'RATE_LIMIT_EXCEEDED',
  UNAVAILABLE: 'SERVICE_UNAVAILABLE',
};

/** What the error response says of a refused credential, beyond its code's default message. */
function refusalDetails(
  result: Refusal,
  authorization: string | undefined,
): { message?: string; retryAfter?: number } {
  switch (result.code) {
    case 'TOO_MANY_IN_FLIGHT':
      return {
        message: `This account already has ${result.limit} requests in progress, the most one gateway serves at once; retry when one completes.`,
        retryAfter: result.retryAfter,
      };
    case 'RATE_LIMITED':
    case 'UNAVAILABLE':
      return { retryAfter: result.retryAfter };
    case 'UNAUTHORIZED':
      if (result.revoked) return { message: 'This API key was revoked; create a new one in the dashboard.' };
      // The key alone, without its scheme: the commonest first mistake, so it is named.
      return authorization !== undefined && /^\s*sk_/.test(authorization)
        ? {
            message:
              'The Authorization header needs the Bearer scheme: send `Authorization: Bearer <API key>`.',
          }
        : {};
    default:
      return {};
  }
}

/** The limiter decision a result stands for (the ratelimit_decisions_total label). */
function decisionOf(result: AuthResult): string {
  if (result.ok) return 'allowed';
  return result.code.toLowerCase();
}

/**
 * The API-key path (every /v1 route the services serve), on node:http without Express: one
 * auth pipeline call (at most one Redis round trip for a known key), then the request sent to
 * its service on undici. Headers are prepared once; nothing else runs per request. Everything
 * else (login, account, dashboard, docs, health) stays on the Express app.
 */
export function apiPath(deps: ApiPathDeps) {
  const ownHeaderNames = new Set<string>(['x-request-id', 'cache-control']);
  for (let i = 0; i < deps.securityHeaders.length; i += 2)
    ownHeaderNames.add(deps.securityHeaders[i]!.toLowerCase());
  const durations = new Map<string, { observe(seconds: number): void }>();
  const decisions = new Map<string, { inc(): void }>();
  const slowReaders = metrics.fairnessRefusals().labels('slow_reader');
  const busyAccounts = metrics.fairnessRefusals().labels('account_in_flight');
  const observe = (method: string, route: string, status: number, started: bigint) => {
    const k = `${method} ${route} ${status}`;
    let child = durations.get(k);
    if (!child) {
      child = metrics.httpDuration().labels(SERVICE, method, route, String(status));
      durations.set(k, child);
    }
    child.observe(Number(process.hrtime.bigint() - started) / 1e9);
  };
  const countDecision = (decision: string) => {
    let child = decisions.get(decision);
    if (!child) {
      child = metrics.rateLimitDecisions().labels(decision);
      decisions.set(decision, child);
    }
    child.inc();
  };

  const sendError = (
    res: ServerResponse,
    head: string[],
    code: ErrorCode,
    requestId: string,
    /** `close`: the request's body is unread, so the connection ends with this response. */
    extra: { message?: string; retryAfter?: number; close?: boolean; details?: FieldProblem[] } = {},
  ): number => {
    const { close, ...described } = extra;
    const { status, body } = errorResponse({ code, ...described }, requestId);
    if (res.destroyed) return status;
    if (extra.retryAfter !== undefined) head.push('Retry-After', String(extra.retryAfter));
    if (close) head.push('Connection', 'close');
    head.push(
      'Content-Type',
      'application/json; charset=utf-8',
      'Content-Length',
      String(Buffer.byteLength(body)),
    );
    res.writeHead(status, head);
    res.end(body);
    return status;
  };

  /** An admitted request on its way to its service. */
  interface Admitted {
    req: IncomingMessage;
    res: ServerResponse;
    upstream: Upstream;
    /** Path and query as the client sent them. */
    url: string;
    path: string;
    /** The response's headers so far: [name, value, …]. */
    head: string[];
    auth: Extract<AuthResult, { ok: true }>;
    requestId: string;
    ip: string;
  }

  /**
   * A live stream: a slot of the account's cap (429 naming it when all are taken), then the
   * stream sent on until either side ends it, the key is revoked or expires, or the gateway
   * shuts down. Its place among the account's requests in flight is freed once admitted: open
   * streams are bounded by their own cap.
   */
  async function openStream(a: Admitted): Promise<number> {
    const { auth } = a;
    const admission = await admitStream(
      deps.streams,
      { accountId: auth.accountId, keyId: auth.keyId, expiresAt: auth.expiresAt },
      auth.caps.streams,
      deps.streamIdleMs,
    );
    auth.release();
    if (!admission.ok)
      return sendError(a.res, a.head, admission.code, a.requestId, {
        message: admission.message,
        retryAfter: admission.retryAfter,
      });
    try {
      let how: ReturnType<typeof streamRequestOf>;
      try {
        how = streamRequestOf(a.url, a.req.headers['last-event-id']);
      } catch (err) {
        if (!isAppError(err)) throw err;
        a.head.push('Cache-Control', 'no-store');
        return sendError(a.res, a.head, err.code, a.requestId, {
          message: err.message,
          details: err.details,
        });
      }
      a.head.push('Cache-Control', 'no-store');
      const served = await deps.feed.open(
        a.res,
        { headers: a.head, ownHeaderNames },
        how,
        admission.control,
        () => ({
          path: a.url,
          headers: streamRequestHeaders(
            a.req.headers,
            tokenFor(deps.tokens, a.upstream, auth.accountId, auth.caps),
            a.requestId,
            a.ip,
          ),
          timeoutMs: deps.timeoutMs,
        }),
      );
      if (served.ok) {
        if (served.overflowed) slowReaders.inc();
        return served.status;
      }
      return sendError(a.res, a.head, 'SERVICE_UNAVAILABLE', a.requestId, {
        message: serviceUnavailable(a.upstream.name),
        retryAfter: 1,
      });
    } finally {
      await admission.closed();
    }
  }

  /** Sends an admitted request on to its service; the status the client got. */
  async function sendOn(a: Admitted): Promise<number> {
    const { req, res, upstream, head, requestId } = a;
    const method = req.method ?? 'GET';
    let body: Buffer | undefined;
    // GET and HEAD go on without a body (a client's body on them is read and dropped).
    if (method !== 'GET' && method !== 'HEAD' && hasBody(req.headers)) {
      const read = await readClientBody(req, res);
      if (!read.ok) {
        if (read.code === 'ABORTED') return 499;
        return sendError(res, head, 'PAYLOAD_TOO_LARGE', requestId, {
          close: true,
          message: 'The request body is larger than any route takes (64 KiB).',
        });
      }
      body = read.body;
    }
    // Secrets are never stored by a cache on the way (the service's own Cache-Control gives way
    // to the gateway's); nor are live streams (openStream).
    if (carriesSecrets(a.path)) head.push('Cache-Control', 'no-store');
    const outcome = await forward(
      res,
      {
        upstream,
        method,
        path: a.url,
        headers: req.headers,
        body,
        requestId,
        clientIp: a.ip,
        responseHeaders: head,
        ownHeaderNames,
        timeoutMs: deps.timeoutMs,
        maxHeldBytes: deps.maxHeldBytes,
      },
      tokenFor(deps.tokens, upstream, a.auth.accountId, a.auth.caps),
    );
    if (outcome.ok) {
      if (outcome.cutSlowReader) slowReaders.inc();
      return outcome.status;
    }
    deps.logger.error({ err: outcome.cause, code: outcome.code, upstream: upstream.name }, 'request failed');
    return sendError(res, head, outcome.code, requestId, {
      message: outcome.message,
      retryAfter: outcome.code === 'SERVICE_UNAVAILABLE' ? 1 : undefined,
    });
  }

  async function serve(
    req: IncomingMessage,
    res: ServerResponse,
    requestId: string,
    started: bigint,
    traceId?: string,
  ) {
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const path = q === -1 ? url : url.slice(0, q);
    const method = req.method ?? 'GET';
    const upstreamName = UPSTREAM_ROUTE.exec(path)?.[1]?.toLowerCase();
    const upstream =
      upstreamName === 'signals' || upstreamName === 'stats' || upstreamName === 'webhooks'
        ? deps.upstreams[upstreamName]
        : undefined;
    const route = upstream ? `/v1/${upstream.name}` : 'unmatched';
    const ip = deps.clientIp(req.socket.remoteAddress, req.headers['x-forwarded-for']);
    const authorization = req.headers.authorization;
    const head = deps.securityHeaders.slice();
    head.push('X-Request-Id', requestId);
    // A request refused with its body unread ends its connection (`close`): what is left of the
    // body cannot be told from a next request (and is not waited for).
    const unreadBody = method !== 'GET' && method !== 'HEAD' && hasBody(req.headers);
    const bodyProblem = unreadBody ? bodyRefusal(req.headers) : undefined;
    let status: number;
    let result: AuthResult | undefined;
    try {
      result = await deps.authenticate(typeof authorization === 'string' ? authorization : undefined, ip);
      countDecision(decisionOf(result));
      if (result.ok || result.code !== 'UNAVAILABLE') head.push(...rateLimitHeaders(result.rate));
      if (!result.ok) {
        if (result.code === 'TOO_MANY_IN_FLIGHT') busyAccounts.inc();
        status = sendError(res, head, REFUSAL[result.code], requestId, {
          close: unreadBody,
          ...refusalDetails(result, typeof authorization === 'string' ? authorization : undefined),
        });
      } else if (!upstream) {
        status = sendError(res, head, 'NOT_FOUND', requestId, {
          close: unreadBody,
          message: `No route for ${method} ${quotedForMessage(path)}`,
        });
      } else if (forwardedBytes(req, url) > MAX_FORWARDED_BYTES) {
        status = sendError(res, head, 'PAYLOAD_TOO_LARGE', requestId, {
          close: unreadBody,
          message: 'The request target and headers are too large to pass on.',
        });
      } else if (bodyProblem) {
        status = sendError(res, head, bodyProblem, requestId, {
          close: unreadBody,
          message:
            bodyProblem === 'PAYLOAD_TOO_LARGE'
              ? 'The request body is larger than any route takes (64 KiB).'
              : 'Request bodies must be JSON (Content-Type: application/json).',
        });
      } else {
        const admitted: Admitted = { req, res, upstream, url, path, head, auth: result, requestId, ip };
        status =
          method === 'GET' && STREAM_ROUTE.test(path) ? await openStream(admitted) : await sendOn(admitted);
      }
    } catch (err) {
      deps.logger.error({ err, code: 'INTERNAL_ERROR' }, 'request failed');
      status = res.headersSent ? 500 : sendError(res, head, 'INTERNAL_ERROR', requestId);
      if (res.headersSent) res.destroy();
    } finally {
      if (result?.ok) result.release();
    }
    observe(method, route, status, started);
    writeAccessLine(deps.logger, { method, path, status, started, requestId, traceId });
    if (deps.usage && result) {
      const who = result.ok ? result : result.code !== 'UNAVAILABLE' ? result.owner : undefined;
      if (who) deps.usage.count(who.accountId, who.keyId, outcomeOf(status));
    }
  }

  return {
    /** Serves one request of this path; never throws, never leaves a request without a response. */
    handle(req: IncomingMessage, res: ServerResponse): void {
      const started = process.hrtime.bigint();
      const requestId = requestIdOf(req.headers['x-request-id']);
      const traceId = currentTraceId();
      requestContext.run({ requestId }, () => void serve(req, res, requestId, started, traceId));
    },
  };
}

const EXPRESS_ROUTES = /^\/v1\/(auth|account|dashboard)(?=[/?]|$)/i;
const API_ROUTES = /^\/v1(?=[/?]|$)/i;

/**
 * Which requests take the API-key path: every method but OPTIONS on /v1, except the account,
 * login and dashboard routes, and except dashboard-session requests (a session cookie and no
 * Authorization header) to the services' routes, which the dashboard's Express router serves.
 */
export function takesApiPath(
  method: string,
  url: string,
  headers: { authorization?: string | string[]; cookie?: string | string[] },
  sessionCookie: string,
): boolean {
  if (method === 'OPTIONS' || !API_ROUTES.test(url) || EXPRESS_ROUTES.test(url)) return false;
  if (headers.authorization !== undefined) return true;
  const cookie = typeof headers.cookie === 'string' ? headers.cookie : undefined;
  return !(UPSTREAM_ROUTE.test(url) && readCookie(cookie, sessionCookie) !== undefined);
}
