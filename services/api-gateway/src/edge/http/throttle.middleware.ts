import { AppError } from '@signal/service-kit';
import type { ErrorRequestHandler, Request, RequestHandler, Response } from 'express';
import { usageOwnerOf, windowOf, type AuthResult } from '../domain/authenticate.use-case';
import type { RateView } from '../domain/rate-limit';
import type { RequestThrottle, ThrottleDecision } from '../domain/throttle';
import { outcomeOf, type UsageLedger } from '../domain/usage';
import { refusalOf } from './auth-refusal';
import { setRateLimitHeaders } from './rate-limit-headers';

/** A throttle's decision on an Express response: the headers, and a 429 when over the limit. */
export function applyThrottle(res: Response, decision: ThrottleDecision): AppError | undefined {
  setRateLimitHeaders(res, decision.rate);
  return decision.limited
    ? new AppError('RATE_LIMIT_EXCEEDED', undefined, { retryAfter: decision.retryAfter })
    : undefined;
}

/**
 * The rate-limit headers of the client's IP group, counting nothing: for the public pages (the
 * dashboard's and the docs') and the files they load. Every response still carries the window
 * (docs/api.md), but a page is never refused for its address: behind one NAT, a client sending
 * junk keys made the login page itself a 429 for everyone there, logged in or not, and a user
 * reloading the dashboard spent the budget that throttles guessed credentials.
 */
export function rateHeadersOnly(guard: RequestThrottle): RequestHandler {
  return (req: Request, res, next) => {
    guard.peek(req.ip ?? '').then(
      (rate) => {
        setRateLimitHeaders(res, rate);
        next();
      },
      (err: unknown) => next(err),
    );
  };
}

/**
 * The rate-limit headers on the probes (`/healthz`, `/readyz`), counting nothing, as on the
 * public pages: the spec has every response carry them. A probe never waits on the store for
 * them (a liveness probe that waits restarts the gateway): after `withinMs`, or on an error, it
 * answers with the window as this process knows it, the one a Redis outage falls back on.
 */
export function rateHeadersOnProbes(guard: RequestThrottle, withinMs: number): RequestHandler {
  return (req: Request, res, next) => {
    let answered = false;
    const answer = (rate: RateView) => {
      if (answered) return;
      answered = true;
      clearTimeout(timer);
      setRateLimitHeaders(res, rate);
      next();
    };
    const locally = () => answer(guard.peekLocally(req.ip ?? ''));
    const timer = setTimeout(locally, withinMs);
    guard.peek(req.ip ?? '').then(answer, locally);
  };
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

/** A dashboard session on a request no route took: whose account it is, or none when it is not valid. */
export interface UnmatchedSession {
  accountOf(req: Request): Promise<string | undefined>;
  throttle: RequestThrottle;
}

/**
 * What no route took (a path outside the API): counted against the client's address, unless it
 * carries a credential, which is judged as the API path judges one — a valid key's 404 counts
 * against its account and carries its window, a refused one counts against the address (or is
 * the account's 429) — so a valid key is never refused for what others sent from its address.
 * A valid dashboard session cookie is judged by its session throttle, as on the dashboard's
 * routes; one that does not verify counts against the address like no credential.
 */
export function unmatchedRequest(
  guard: RequestThrottle,
  authenticate: (authorization: string | undefined, ip: string) => Promise<AuthResult>,
  usage?: UsageLedger,
  session?: UnmatchedSession,
): RequestHandler {
  const anonymous = ipGuard(guard);
  return async (req: Request, res, next) => {
    const authorization = req.headers.authorization;
    if (authorization === undefined) {
      if (!session) return anonymous(req, res, next);
      try {
        const accountId = await session.accountOf(req);
        if (accountId === undefined) return anonymous(req, res, next);
        return next(applyThrottle(res, await session.throttle.count(accountId)));
      } catch (err) {
        return next(err);
      }
    }
    try {
      const result = await authenticate(authorization, req.ip ?? '');
      const who = usageOwnerOf(result);
      if (who && usage)
        res.on('finish', () => usage.count(who.accountId, who.keyId, outcomeOf(res.statusCode)));
      const window = windowOf(result);
      if (window) setRateLimitHeaders(res, window);
      if (result.ok) {
        result.release();
        return next();
      }
      const { code, message, retryAfter } = refusalOf(result, authorization);
      next(new AppError(code, message, { retryAfter }));
    } catch (err) {
      next(err);
    }
  };
}

/**
 * A request whose credential failed (a bad session, a failed CSRF check): counted against its
 * client's address, with the headers; the failure's own error, or a 429 once the address is past
 * its limit.
 */
export async function refuseCredential(
  guard: RequestThrottle,
  req: Request,
  res: Response,
  failure: AppError,
): Promise<AppError> {
  return applyThrottle(res, await guard.count(req.ip ?? '')) ?? failure;
}

/**
 * A login attempt: counted against its client's address (the headers every response carries),
 * but never refused for it before the password is checked — a right password is judged by the
 * login throttle alone. `failed` turns a failed login into a 429 once the address is past its
 * limit.
 */
export function countLogin(guard: RequestThrottle): RequestHandler {
  return async (req, res, next) => {
    try {
      const decision = await guard.count(req.ip ?? '');
      setRateLimitHeaders(res, decision.rate);
      addressOverLimit.set(res, decision);
      next();
    } catch (err) {
      next(err);
    }
  };
}

const addressOverLimit = new WeakMap<Response, ThrottleDecision>();

/** The error for a failed login: its own, or a 429 when its address is past the guard's limit. */
export function failedLogin(res: Response, failure: AppError): AppError {
  const decision = addressOverLimit.get(res);
  return decision?.limited
    ? new AppError('RATE_LIMIT_EXCEEDED', undefined, { retryAfter: decision.retryAfter })
    : failure;
}

/**
 * An error response no throttle has counted (a body refused before its route looked at the
 * credential: a 415, a 413, broken JSON) counts against the client's address like any request
 * without a usable credential, so it carries the rate-limit headers every response carries.
 */
export function rateHeadersOnUncountedErrors(guard: RequestThrottle): ErrorRequestHandler {
  return (err: unknown, req, res, next) => {
    if (res.headersSent || res.hasHeader('X-RateLimit-Limit')) return next(err);
    guard.count(req.ip ?? '').then(
      (decision) => {
        setRateLimitHeaders(res, decision.rate);
        next(err);
      },
      () => next(err),
    );
  };
}
