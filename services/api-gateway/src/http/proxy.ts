import type { IncomingHttpHeaders } from 'node:http';
import { PassThrough, type Readable } from 'node:stream';
import { AppError, signInternalToken } from '@signal/service-kit';
import type { Request, RequestHandler, Response } from 'express';
import { Pool } from 'undici';

const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'host',
]);

/** Request headers worth passing on; everything else (Authorization, X-Internal-*, cookies) stays here. */
const FORWARDED_REQUEST_HEADERS = [
  'accept',
  'accept-encoding',
  'content-type',
  'content-length',
  'idempotency-key',
  'user-agent',
];

export interface Upstream {
  name: string;
  /** JWT audience the service accepts. */
  audience: string;
  pool: Pool;
}

export function createUpstream(name: string, url: string, connections: number): Upstream {
  const pool = new Pool(new URL(url).origin, {
    connections,
    pipelining: 1,
    keepAliveTimeout: 30_000,
    connectTimeout: 2000,
  });
  return { name, audience: name, pool };
}

/** Re-uses an internal token for the same (service, account) until shortly before it expires. */
export class InternalTokenCache {
  private readonly tokens = new Map<string, { token: string; until: number }>();
  constructor(
    private readonly secret: string,
    private readonly ttlSeconds = 30,
  ) {}

  get(audience: string, accountId: string, now = Date.now()): string {
    const k = `${audience}\u0000${accountId}`;
    const hit = this.tokens.get(k);
    if (hit && hit.until > now) return hit.token;
    const token = signInternalToken(this.secret, audience, accountId, this.ttlSeconds);
    if (this.tokens.size > 50_000) this.tokens.clear();
    this.tokens.set(k, { token, until: now + (this.ttlSeconds - 10) * 1000 });
    return token;
  }
}

function errorCode(err: unknown): string {
  const e = err as { code?: string; cause?: { code?: string } };
  return e?.code ?? e?.cause?.code ?? '';
}

function upstreamError(err: unknown, name: string): AppError {
  const code = errorCode(err);
  if (code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT') {
    return new AppError('GATEWAY_TIMEOUT', `The ${name} service did not answer in time.`, { cause: err });
  }
  return new AppError('SERVICE_UNAVAILABLE', `The ${name} service is unavailable. Retry shortly.`, {
    cause: err,
    retryAfter: 1,
  });
}

function requestHeaders(req: Request, token: string, requestId: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of FORWARDED_REQUEST_HEADERS) {
    const v = req.headers[name];
    if (typeof v === 'string') out[name] = v;
  }
  out.authorization = `Bearer ${token}`;
  out['x-request-id'] = requestId;
  out['x-forwarded-for'] = req.ip ?? '';
  return out;
}

function copyResponseHeaders(
  res: Response,
  headers: IncomingHttpHeaders | Record<string, string | string[] | undefined>,
): void {
  for (const [name, value] of Object.entries(headers)) {
    const lower = name.toLowerCase();
    if (
      value === undefined ||
      HOP_BY_HOP.has(lower) ||
      lower === 'x-request-id' ||
      lower.startsWith('x-ratelimit')
    )
      continue;
    res.setHeader(name, value);
  }
}

/**
 * The client's body as undici should get it. undici destroys the body stream it was handed when
 * the service answers before taking all of it (a 415 or 404 on a large upload), and destroying
 * `req` itself cut the client's connection mid-body: the client's next request on that
 * keep-alive connection went unanswered (the "no answer within 10 s under load" of issue 14).
 * A pass-through takes that destroy instead, and the rest of the client's body is drained, as
 * Node does for a body nobody read.
 */
function upstreamBody(req: Request): Readable {
  const body = new PassThrough();
  req.pipe(body);
  req.once('error', (err) => body.destroy(err));
  body.once('close', () => {
    req.unpipe(body);
    if (!req.complete) req.resume();
  });
  return body;
}

/** Streams the request to the service with a fresh internal token and streams the answer back. */
export function proxyTo(upstream: Upstream, tokens: InternalTokenCache, timeoutMs: number): RequestHandler {
  return async (req, res, next) => {
    const accountId = res.locals.accountId as string;
    const requestId = res.locals.requestId as string;
    const hasBody = req.method !== 'GET' && req.method !== 'HEAD';
    let answer;
    try {
      answer = await upstream.pool.request({
        method: req.method as 'GET',
        path: req.originalUrl,
        headers: requestHeaders(req, tokens.get(upstream.audience, accountId), requestId),
        body: hasBody ? upstreamBody(req) : undefined,
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
      });
    } catch (err) {
      return next(upstreamError(err, upstream.name));
    }
    res.status(answer.statusCode);
    copyResponseHeaders(res, answer.headers);
    try {
      for await (const chunk of answer.body) res.write(chunk);
      res.end();
    } catch (err) {
      if (!res.headersSent) return next(upstreamError(err, upstream.name));
      res.destroy(err as Error);
    }
  };
}
