import { AppError } from '@signal/service-kit';
import type { RequestHandler } from 'express';
import { authenticate, type AuthDeps } from '../domain/authenticate.use-case';
import { retryAfterSeconds, tightestWindow, type LimitDecision } from '../domain/rate-limiter';

/** API-key routes: authenticate + count, then expose the rate-limit headers on the response. */
export function apiKeyAuth(deps: AuthDeps): RequestHandler {
  return async (req, res, next) => {
    try {
      const result = await authenticate(deps, req.header('authorization'), req.ip ?? 'unknown');
      for (const [k, v] of Object.entries(result.headers)) res.setHeader(k, v);
      res.locals.accountId = result.accountId;
      res.locals.keyId = result.keyId;
      next();
    } catch (err) {
      next(err);
    }
  };
}

/** Routes without an API key (login, account API, docs): the per-IP guard and its headers. */
export function ipRateLimit(deps: AuthDeps): RequestHandler {
  return async (req, res, next) => {
    const subject = {
      subject: `ip:${req.ip ?? 'unknown'}`,
      perMinute: deps.ipPerMinute,
      perDay: Number.MAX_SAFE_INTEGER,
    };
    let decision: LimitDecision;
    try {
      decision = await deps.limiter.check(subject);
    } catch {
      decision = deps.fallback.check(subject);
    }
    if (decision.outcome === 'revoked') return next();
    const w = tightestWindow(decision.minute, decision.day);
    res.setHeader('X-RateLimit-Limit', String(w.limit));
    res.setHeader('X-RateLimit-Remaining', String(Math.max(0, w.limit - w.used)));
    res.setHeader('X-RateLimit-Reset', String(Math.ceil(w.resetAt)));
    if (decision.outcome === 'limited') {
      return next(
        new AppError('RATE_LIMIT_EXCEEDED', undefined, {
          retryAfter: retryAfterSeconds(decision.minute, decision.day),
        }),
      );
    }
    next();
  };
}
