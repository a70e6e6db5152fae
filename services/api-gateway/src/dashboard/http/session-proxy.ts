import { AppError, hasBody, type InternalTokenCache } from '@signal/service-kit';
import type { RequestHandler, Response } from 'express';
import type { OpenStreams } from '../../edge/domain/open-streams';
import type { PlanCaps } from '../../accounts/domain/plan-caps';
import { tokenFor } from '../../edge/http/api-path';
import { STREAM_ROUTE, admitStream, streamRequestOf } from '../../edge/http/live-streams';
import type { StreamFeed } from '../../edge/http/stream-feed';
import {
  MAX_FORWARDED_BYTES,
  forward,
  forwardedBytes,
  readClientBody,
  serviceUnavailable,
  streamRequestHeaders,
  type StreamControl,
  type Upstream,
} from '../../edge/http/upstream';

export interface SessionProxyOptions {
  tokens: InternalTokenCache;
  timeoutMs: number;
  /** Bytes of a response held for a client that is not reading before its connection is cut. */
  maxHeldBytes: number;
  /** Live streams open through this process (their cap and their end). */
  streams: OpenStreams;
  streamIdleMs: number;
  /** The process's one subscription to the service's stream, which streams from now share. */
  feed: StreamFeed;
}

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
    let stream: StreamControl | undefined;
    let closed: (() => Promise<void>) | undefined;
    if (method === 'GET' && STREAM_ROUTE.test(req.originalUrl.split('?')[0] ?? '')) {
      // A session's stream ends when the session ends: logged out, revoked, retired by a renewal
      // or expired.
      const session = sessionOf(res);
      const admission = await admitStream(
        options.streams,
        {
          accountId,
          ...(session ? { session } : {}),
          expiresAt: numberOf(res.locals.credentialExpiresAt) ?? null,
        },
        capsOf(res)?.streams ?? 0,
        options.streamIdleMs,
      );
      if (!admission.ok)
        return next(new AppError(admission.code, admission.message, { retryAfter: admission.retryAfter }));
      ({ control: stream, closed } = admission);
    }
    try {
      if (stream) {
        // Checked after the slot, as the service checked it when every stream was proxied.
        let how: ReturnType<typeof streamRequestOf>;
        try {
          how = streamRequestOf(req.originalUrl, req.headers['last-event-id']);
        } catch (err) {
          return next(err);
        }
        const served = await options.feed.open(
          res,
          { headers: [], ownHeaderNames: new Set(res.getHeaderNames()) },
          how,
          stream,
          () => ({
            path: req.originalUrl,
            headers: streamRequestHeaders(
              req.headers,
              tokenFor(options.tokens, upstream, accountId, capsOf(res)),
              requestId,
              req.ip ?? '',
            ),
            timeoutMs: options.timeoutMs,
          }),
        );
        if (!served.ok)
          next(new AppError('SERVICE_UNAVAILABLE', serviceUnavailable(upstream.name), { retryAfter: 1 }));
        return;
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
        tokenFor(options.tokens, upstream, accountId, capsOf(res)),
      );
      if (!outcome.ok)
        next(
          new AppError(outcome.code, outcome.message, {
            cause: outcome.cause,
            retryAfter: outcome.code === 'SERVICE_UNAVAILABLE' ? 1 : undefined,
          }),
        );
    } finally {
      await closed?.();
    }
  };
}
