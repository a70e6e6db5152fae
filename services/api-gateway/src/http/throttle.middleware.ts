import { AppError } from '@signal/service-kit';
import type { Request, RequestHandler, Response } from 'express';
import type { RequestThrottle, ThrottleDecision } from '../domain/throttle';
import { setRateLimitHeaders } from './rate-limit-headers';

/** A throttle's decision on an Express response: the headers, and a 429 when over the limit. */
export function applyThrottle(res: Response, decision: ThrottleDecision): AppError | undefined {
  setRateLimitHeaders(res, decision.rate);
  return decision.limited
    ? new AppError('RATE_LIMIT_EXCEEDED', undefined, { retryAfter: decision.retryAfter })
    : undefined;
}

/** Counts every request of a route against the client's IP group (login, account, docs, dashboard). */
export function ipGuard(guard: RequestThrottle): RequestHandler {
  return async (req: Request, res, next) => {
    try {
      next(applyThrottle(res, await guard.count(req.ip ?? '')));
    } catch (err) {
      next(err);
    }
  };
}
