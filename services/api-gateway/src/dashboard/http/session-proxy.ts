import { AppError } from '@signal/service-kit';
import type { RequestHandler, Response } from 'express';
import type { PlanCaps } from '../../accounts/domain/plan-caps';
import { relay, type RelayDeps } from '../../edge/http/relay';
import type { Upstream } from '../../http/upstream';

const numberOf = (v: unknown): number | undefined => (typeof v === 'number' ? v : undefined);

/** The session's plan caps the account-plan step left on the response. */
function capsOf(res: Response): PlanCaps | undefined {
  const v: unknown = res.locals.planCaps;
  if (typeof v !== 'object' || v === null) return undefined;
  const keys = 'keys' in v ? numberOf(v.keys) : undefined;
  const webhooks = 'webhooks' in v ? numberOf(v.webhooks) : undefined;
  const streams = 'streams' in v ? numberOf(v.streams) : undefined;
  return keys !== undefined && webhooks !== undefined && streams !== undefined
    ? { keys, webhooks, streams }
    : undefined;
}

/** The session the account-plan step left on the response: a live stream ends with it. */
function sessionOf(res: Response): { sessionId: string; issuedAt: number } | undefined {
  const v: unknown = res.locals.streamSession;
  if (typeof v !== 'object' || v === null) return undefined;
  const sessionId = 'sessionId' in v && typeof v.sessionId === 'string' ? v.sessionId : undefined;
  const issuedAt = 'issuedAt' in v ? numberOf(v.issuedAt) : undefined;
  return sessionId !== undefined && issuedAt !== undefined ? { sessionId, issuedAt } : undefined;
}

/**
 * An Express route sent on to a service through the relay, as the account in `res.locals.accountId`
 * (the dashboard session's); the headers already set here win over the service's, and a refusal
 * goes to the error handler like any of the router's.
 */
export function proxyTo(upstream: Upstream, options: RelayDeps): RequestHandler {
  return async (req, res, next) => {
    const accountId: unknown = res.locals.accountId;
    const requestId: unknown = res.locals.requestId;
    if (typeof accountId !== 'string' || typeof requestId !== 'string')
      return next(new AppError('UNAUTHORIZED'));
    const caps = capsOf(res);
    const session = sessionOf(res);
    await relay(
      options,
      {
        via: 'session',
        req,
        res,
        upstream,
        url: req.originalUrl,
        requestId,
        clientIp: req.ip ?? '',
        head: [],
        ownHeaderNames: new Set(res.getHeaderNames()),
        refuse: (refusal) => {
          if (refusal.close) res.setHeader('Connection', 'close');
          const error = new AppError(refusal.code, refusal.message, {
            details: refusal.details,
            retryAfter: refusal.retryAfter,
            cause: refusal.cause,
          });
          next(error);
          return error.status;
        },
      },
      {
        accountId,
        caps,
        // A session's stream ends when the session ends: logged out, revoked, retired by a
        // renewal or expired.
        ...(session ? { session } : {}),
        expiresAt: numberOf(res.locals.credentialExpiresAt) ?? null,
      },
    );
  };
}
