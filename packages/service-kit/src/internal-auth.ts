import { timingSafeEqual, createHash } from 'node:crypto';
import type { RequestHandler } from 'express';
import jwt from 'jsonwebtoken';
import { AppError } from './app-error';

const ALGORITHM = 'HS256' as const;
export const INTERNAL_ISSUER = 'api-gateway';
export const INTERNAL_TOKEN_TTL_SECONDS = 60;

export interface InternalClaims {
  sub: string;
  aud: string;
  iss: string;
}

/** A short-lived token the gateway forwards instead of the client's API key. */
export function signInternalToken(
  secret: string,
  audience: string,
  accountId: string,
  ttlSeconds = 30,
): string {
  return jwt.sign({}, secret, {
    algorithm: ALGORITHM,
    issuer: INTERNAL_ISSUER,
    audience,
    subject: accountId,
    expiresIn: Math.min(ttlSeconds, INTERNAL_TOKEN_TTL_SECONDS),
  });
}

const BEARER = /^Bearer\s+(\S+)\s*$/i;

/** The credential of an `Authorization: Bearer <credential>` header: the one parser of it. */
export function bearerToken(header: string | undefined): string | undefined {
  return header ? BEARER.exec(header)?.[1] : undefined;
}

/**
 * Services refuse any call without a valid gateway token for *this* service, so a service
 * reached directly leaks nothing. Sets `res.locals.accountId`.
 */
export function requireInternalAuth(secret: string, audience: string): RequestHandler {
  return (req, res, next) => {
    const token = bearerToken(req.header('authorization'));
    if (!token) return next(new AppError('UNAUTHORIZED', 'Missing internal credentials.'));
    try {
      const claims = jwt.verify(token, secret, {
        algorithms: [ALGORITHM],
        issuer: INTERNAL_ISSUER,
        audience,
      }) as jwt.JwtPayload;
      if (typeof claims.sub !== 'string' || !claims.sub) throw new Error('no subject');
      res.locals.accountId = claims.sub;
      next();
    } catch {
      next(new AppError('UNAUTHORIZED', 'Invalid internal credentials.'));
    }
  };
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value).digest();
}

/** Ingestion and other machine callers present a static bearer credential of their own. */
export function requireStaticToken(expected: string): RequestHandler {
  const expectedDigest = digest(expected);
  return (req, _res, next) => {
    const token = bearerToken(req.header('authorization'));
    if (token && timingSafeEqual(digest(token), expectedDigest)) return next();
    next(new AppError('UNAUTHORIZED', 'Invalid or missing ingest token.'));
  };
}
