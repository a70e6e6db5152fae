import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ErrorCode } from '@signal/contracts';
import {
  currentTraceId,
  errorResponse,
  hasBody,
  metrics,
  quotedForMessage,
  requestContext,
  requestIdOf,
  writeAccessLine,
  type InternalTokenCache,
  type Logger,
} from '@signal/service-kit';
import type { AuthResult } from '../domain/authenticate.use-case';
import { outcomeOf, type UsageLedger } from '../domain/usage';
import type { ClientIp } from './client-ip';
import { readCookie } from './cookies';
import type { ApiAnswer, ApiRequest } from './exchange';
import { carriesSecrets } from './no-store.middleware';
import { rateLimitHeaders } from './rate-limit-headers';
import {
  MAX_FORWARDED_BYTES,
  bodyRefusal,
  forward,
  forwardedBytes,
  fromNodeRequest,
  type ForwardRequest,
  type Upstream,
} from './upstream';

export interface ApiPathDeps {
  /** The auth pipeline, or (benchmarks only) every request as one account. */
  authenticate: (authorization: string | undefined, ip: string) => Promise<AuthResult>;
  upstreams: { signals: Upstream; stats: Upstream; webhooks: Upstream };
  tokens: InternalTokenCache;
  timeoutMs: number;
  usage?: UsageLedger;
  clientIp: ClientIp;
  /** Security headers prepared once: [name, value, …]. */
  securityHeaders: string[];
  logger: Logger;
}

const SERVICE = 'api-gateway';
const UPSTREAM_ROUTE = /^\/v1\/(signals|stats|webhooks)(?=[/?]|$)/i;

const REFUSAL: Record<Exclude<AuthResult, { ok: true }>['code'], ErrorCode> = {
  UNAUTHORIZED: 'UNAUTHORIZED',
  KEY_EXPIRED: 'KEY_EXPIRED',
  RATE_LIMITED: 'RATE_LIMIT_EXCEEDED',
  UNAVAILABLE: 'SERVICE_UNAVAILABLE',
};

/** The limiter decision a result stands for (the ratelimit_decisions_total label). */
function decisionOf(result: AuthResult): string {
  if (result.ok) return 'allowed';
  return result.code.toLowerCase();
}

/**
 * The API-key path (every /v1 route the services answer), on node:http without Express: one
 * auth pipeline call (at most one Redis round trip for a known key), then the request streamed
 * to its service. Headers are prepared once; nothing else runs per request. Everything else
 * (login, account, dashboard, docs, health) stays on the Express app.
 */
export function apiPath(deps: ApiPathDeps) {
  const ownHeaderNames = new Set<string>(['x-request-id', 'cache-control']);
  for (let i = 0; i < deps.securityHeaders.length; i += 2)
    ownHeaderNames.add(deps.securityHeaders[i]!.toLowerCase());
  const durations = new Map<string, { observe(seconds: number): void }>();
  const decisions = new Map<string, { inc(): void }>();
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
    res: ApiAnswer,
    head: string[],
    code: ErrorCode,
    requestId: string,
    /** `close`: the request's body is unread, so the connection ends with this answer. */
    extra: { message?: string; retryAfter?: number; close?: boolean } = {},
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

  async function serve(
    req: ApiRequest,
    res: ApiAnswer,
    requestId: string,
    started: bigint,
    traceId?: string,
  ) {
    const url = req.url;
    const q = url.indexOf('?');
    const path = q === -1 ? url : url.slice(0, q);
    const method = req.method;
    const upstreamName = UPSTREAM_ROUTE.exec(path)?.[1]?.toLowerCase();
    const upstream =
      upstreamName === 'signals' || upstreamName === 'stats' || upstreamName === 'webhooks'
        ? deps.upstreams[upstreamName]
        : undefined;
    const route = upstream ? `/v1/${upstream.name}` : 'unmatched';
    const ip = deps.clientIp(req.remoteAddress, req.headers['x-forwarded-for']);
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
        status = sendError(res, head, REFUSAL[result.code], requestId, {
          close: unreadBody,
          retryAfter:
            result.code === 'RATE_LIMITED' || result.code === 'UNAVAILABLE' ? result.retryAfter : undefined,
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
        if (carriesSecrets(path)) head.push('Cache-Control', 'no-store');
        const f: ForwardRequest = {
          upstream,
          path: url,
          accountId: result.accountId,
          requestId,
          clientIp: ip,
          answerHeaders: head,
          ownHeaderNames,
          timeoutMs: deps.timeoutMs,
        };
        const outcome = await forward(req, res, f, deps.tokens.get(upstream.audience, result.accountId));
        if (outcome.ok) status = outcome.status;
        else {
          deps.logger.error(
            { err: outcome.cause, code: outcome.code, upstream: upstream.name },
            'request failed',
          );
          status = sendError(res, head, outcome.code, requestId, {
            message: outcome.message,
            retryAfter: outcome.code === 'SERVICE_UNAVAILABLE' ? 1 : undefined,
          });
        }
      }
    } catch (err) {
      deps.logger.error({ err, code: 'INTERNAL_ERROR' }, 'request failed');
      status = res.headersSent ? 500 : sendError(res, head, 'INTERNAL_ERROR', requestId);
      if (res.headersSent) res.destroy();
    }
    observe(method, route, status, started);
    writeAccessLine(deps.logger, { method, path, status, started, requestId, traceId });
    if (deps.usage && result) {
      const who = result.ok ? result : result.code !== 'UNAVAILABLE' ? result.owner : undefined;
      if (who) deps.usage.count(who.accountId, who.keyId, outcomeOf(status));
    }
  }

  /** Serves one request of this path; never throws, never leaves a request unanswered. */
  const serveRequest = (req: ApiRequest, res: ApiAnswer): void => {
    const started = process.hrtime.bigint();
    const requestId = requestIdOf(req.headers['x-request-id']);
    const traceId = currentTraceId();
    requestContext.run({ requestId }, () => void serve(req, res, requestId, started, traceId));
  };
  return {
    /** A request node:http parsed. */
    handle(req: IncomingMessage, res: ServerResponse): void {
      serveRequest(fromNodeRequest(req, res), res);
    },
    /** A request the raw front parsed (raw-front.ts). */
    serve: serveRequest,
  };
}

const EXPRESS_ROUTES = /^\/v1\/(auth|account|dashboard)(?=[/?]|$)/i;
const API_ROUTES = /^\/v1(?=[/?]|$)/i;

/**
 * Which requests take the API-key path: every method but OPTIONS on /v1, except the account,
 * login and dashboard routes, and except dashboard-session requests (a session cookie and no
 * Authorization header) to the services' routes, which the dashboard's Express router serves.
 * Asked by both fronts: node:http's listener and the raw front.
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
