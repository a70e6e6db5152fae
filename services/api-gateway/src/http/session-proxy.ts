import { AppError, hasBody, type InternalTokenCache } from '@signal/service-kit';
import type { RequestHandler } from 'express';
import { MAX_FORWARDED_BYTES, forward, forwardedBytes, readClientBody, type Upstream } from './upstream';

export interface SessionProxyOptions {
  tokens: InternalTokenCache;
  timeoutMs: number;
  /** Bytes of a response held for a client that is not reading before its connection is cut. */
  maxHeldBytes: number;
}

/**
 * An Express route sent on to a service as the account in `res.locals.accountId` (the
 * dashboard session's); the headers already set here win over the service's.
 */
export function proxyTo(upstream: Upstream, options: SessionProxyOptions): RequestHandler {
  return async (req, res, next) => {
    const accountId: unknown = res.locals.accountId;
    const requestId: unknown = res.locals.requestId;
    if (typeof accountId !== 'string' || typeof requestId !== 'string')
      return next(new AppError('UNAUTHORIZED'));
    if (forwardedBytes(req, req.originalUrl) > MAX_FORWARDED_BYTES)
      return next(
        new AppError('PAYLOAD_TOO_LARGE', 'The request target and headers are too large to pass on.'),
      );
    const method = req.method;
    let body: Buffer | undefined;
    if (method !== 'GET' && method !== 'HEAD' && hasBody(req.headers)) {
      const read = await readClientBody(req, res);
      if (!read.ok) {
        if (read.code === 'ABORTED') return;
        res.setHeader('Connection', 'close');
        return next(
          new AppError('PAYLOAD_TOO_LARGE', 'The request body is larger than any route takes (64 KiB).'),
        );
      }
      body = read.body;
    }
    const outcome = await forward(
      res,
      {
        upstream,
        method,
        path: req.originalUrl,
        headers: req.headers,
        body,
        requestId,
        clientIp: req.ip ?? '',
        responseHeaders: [],
        ownHeaderNames: new Set(res.getHeaderNames()),
        timeoutMs: options.timeoutMs,
        maxHeldBytes: options.maxHeldBytes,
      },
      options.tokens.get(upstream.audience, accountId),
    );
    if (!outcome.ok)
      next(
        new AppError(outcome.code, outcome.message, {
          cause: outcome.cause,
          retryAfter: outcome.code === 'SERVICE_UNAVAILABLE' ? 1 : undefined,
        }),
      );
  };
}
