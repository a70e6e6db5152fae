import { AppError, type InternalTokenCache } from '@signal/service-kit';
import type { RequestHandler } from 'express';
import { MAX_FORWARDED_BYTES, forward, forwardedBytes, fromNodeRequest, type Upstream } from './upstream';

/**
 * An Express route streamed to a service as the account in `res.locals.accountId` (the
 * dashboard session's); the headers already set here win over the service's.
 */
export function proxyTo(upstream: Upstream, tokens: InternalTokenCache, timeoutMs: number): RequestHandler {
  return async (req, res, next) => {
    const accountId: unknown = res.locals.accountId;
    const requestId: unknown = res.locals.requestId;
    if (typeof accountId !== 'string' || typeof requestId !== 'string')
      return next(new AppError('UNAUTHORIZED'));
    const request = fromNodeRequest(req);
    if (forwardedBytes(request, req.originalUrl) > MAX_FORWARDED_BYTES)
      return next(
        new AppError('PAYLOAD_TOO_LARGE', 'The request target and headers are too large to pass on.'),
      );
    const outcome = await forward(
      request,
      res,
      {
        upstream,
        path: req.originalUrl,
        accountId,
        requestId,
        clientIp: req.ip ?? '',
        answerHeaders: [],
        ownHeaderNames: new Set(res.getHeaderNames()),
        timeoutMs,
      },
      tokens.get(upstream.audience, accountId),
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
