import { createHash, createPrivateKey, createPublicKey, timingSafeEqual, type KeyObject } from 'node:crypto';
import type { RequestHandler } from 'express';
import jwt from 'jsonwebtoken';
import { z } from 'zod';
import { AppError } from './app-error';

/**
 * Gateway → service tokens are signed by the gateway alone with an ECDSA P-256 key (ES256);
 * every service holds only the public key. A service (or anyone who reads its environment)
 * can check tokens but can mint none — not for another service, not even for itself — and the
 * public key is no secret. One shared HMAC secret would let any service forge tokens for all
 * the others; one secret per audience would still let each forge its own and multiply the
 * secrets to distribute. jsonwebtoken's ES256 (no added dependency).
 */
const ALGORITHM = 'ES256' as const;
export const INTERNAL_ISSUER = 'api-gateway';
export const INTERNAL_TOKEN_TTL_SECONDS = 60;
/** Clock skew tolerated between the gateway and a service. */
const SKEW_SECONDS = 5;

function isP256(key: KeyObject): boolean {
  return key.asymmetricKeyType === 'ec' && key.asymmetricKeyDetails?.namedCurve === 'prime256v1';
}

/** A PEM, or the base64 of the DER (one line: what fits an env file), to its key object. */
function keyFromEnv(value: string, kind: 'private' | 'public'): KeyObject {
  const text = value.replace(/\\n/g, '\n').trim();
  if (text.startsWith('-----BEGIN'))
    return kind === 'private' ? createPrivateKey(text) : createPublicKey(text);
  const der = Buffer.from(text, 'base64');
  return kind === 'private'
    ? createPrivateKey({ key: der, format: 'der', type: 'pkcs8' })
    : createPublicKey({ key: der, format: 'der', type: 'spki' });
}

function keySchema(kind: 'private' | 'public') {
  return z.string({ error: 'is required' }).transform((value, ctx) => {
    try {
      const key = keyFromEnv(value, kind);
      if (isP256(key)) return key;
    } catch {
      // reported below, without echoing the value
    }
    ctx.addIssue({
      code: 'custom',
      message: `must be an ECDSA P-256 ${kind} key (${kind === 'private' ? 'PKCS#8' : 'SPKI'} PEM, or its DER in base64)`,
    });
    return z.NEVER;
  });
}

/** Config fields: the gateway's signing key, and the key every service checks tokens with. */
export const internalKeyEnv = {
  privateKey: () => keySchema('private'),
  publicKey: () => keySchema('public'),
};

/** The public half of a signing key, as services are configured with it (base64 DER). */
export function publicKeyForEnv(privateKey: KeyObject): string {
  return createPublicKey(privateKey).export({ format: 'der', type: 'spki' }).toString('base64');
}

/**
 * What the account's plan allows, as the gateway knows it, carried in the token so a service
 * enforces the plan without a store of plans of its own. Every field is optional: a service
 * falls back to its own configured default for a limit the token does not carry. A limit this
 * service does not know (a newer gateway's) is dropped, not refused, so the gateway can be
 * deployed first.
 */
export const internalLimitsSchema = z.object({
  /** Webhook subscriptions the account may hold. */
  webhooks: z.number().int().nonnegative().optional(),
});
export type InternalLimits = z.infer<typeof internalLimitsSchema>;

/** The `limits` claim, or nothing when no limit is set (a token without the claim means "defaults"). */
function limitsClaim(limits: InternalLimits | undefined): { limits?: InternalLimits } {
  if (!limits) return {};
  const set = Object.fromEntries(Object.entries(limits).filter(([, v]) => v !== undefined));
  return Object.keys(set).length > 0 ? { limits: set } : {};
}

/** A short-lived token the gateway forwards instead of the client's API key. */
export function signInternalToken(
  privateKey: KeyObject,
  audience: string,
  accountId: string,
  ttlSeconds = 30,
  limits?: InternalLimits,
): string {
  return jwt.sign(limitsClaim(limits), privateKey, {
    algorithm: ALGORITHM,
    issuer: INTERNAL_ISSUER,
    audience,
    subject: accountId,
    expiresIn: Math.min(ttlSeconds, INTERNAL_TOKEN_TTL_SECONDS),
  });
}

/** The cache key part of a set of limits: the same limits in any field order give the same key. */
function limitsKey(limits: InternalLimits | undefined): string {
  const claim = limitsClaim(limits).limits;
  if (!claim) return '';
  return JSON.stringify(Object.entries(claim).sort(([a], [b]) => a.localeCompare(b)));
}

/**
 * Issues internal tokens; re-uses one for the same (service, account, limits) until shortly
 * before it expires, so a caller signs (ES256) once per account and service every 20 s, not per
 * request. The limits are part of the key: a plan changed mid-way gets a token of its own at
 * once, never the previous plan's.
 */
export class InternalTokenCache {
  private readonly tokens = new Map<string, { token: string; until: number }>();
  constructor(
    private readonly sign: (
      audience: string,
      accountId: string,
      ttlSeconds: number,
      limits?: InternalLimits,
    ) => string,
    private readonly ttlSeconds = 30,
  ) {}

  get(audience: string, accountId: string, limits?: InternalLimits, now = Date.now()): string {
    const k = `${audience}\u0000${accountId}\u0000${limitsKey(limits)}`;
    const hit = this.tokens.get(k);
    if (hit && hit.until > now) return hit.token;
    const token = this.sign(audience, accountId, this.ttlSeconds, limits);
    if (this.tokens.size > 50_000) this.tokens.clear();
    this.tokens.set(k, { token, until: now + (this.ttlSeconds - 10) * 1000 });
    return token;
  }
}

const BEARER = /^Bearer\s+(\S+)\s*$/i;

/** The credential of an `Authorization: Bearer <credential>` header: the one parser of it. */
export function bearerToken(header: string | undefined): string | undefined {
  return header ? BEARER.exec(header)?.[1] : undefined;
}

const claimsSchema = z.object({
  sub: z.string().min(1),
  exp: z.number(),
  limits: internalLimitsSchema.optional(),
});

/** What a valid internal token says. */
export interface InternalClaims {
  accountId: string;
  expiresAt: number;
  /** Absent when the token carries none: the service's defaults apply. */
  limits?: InternalLimits;
}

/**
 * The account a token speaks for, or undefined. Refused: another audience or issuer, another
 * algorithm, no `exp`, expired, or living longer than the gateway ever issues.
 */
export function verifyInternalToken(
  publicKey: KeyObject,
  audience: string,
  token: string,
  now = Date.now(),
): InternalClaims | undefined {
  try {
    const parsed = claimsSchema.safeParse(
      jwt.verify(token, publicKey, { algorithms: [ALGORITHM], issuer: INTERNAL_ISSUER, audience }),
    );
    if (!parsed.success) return undefined;
    const { sub, exp, limits } = parsed.data;
    if (exp * 1000 > now + (INTERNAL_TOKEN_TTL_SECONDS + SKEW_SECONDS) * 1000) return undefined;
    return { accountId: sub, expiresAt: exp * 1000, ...(limits ? { limits } : {}) };
  } catch {
    return undefined;
  }
}

/**
 * Services refuse any call without a valid gateway token for *this* service, so a service
 * reached directly leaks nothing. Sets `res.locals.accountId`, and `res.locals.limits` (the
 * plan's limits the token carries; `{}` when it carries none). A token checked once is
 * remembered until it expires: the gateway re-uses each for a while, so a signature is
 * verified about once per account and 20 s, not once per request.
 */
export function requireInternalAuth(
  publicKey: KeyObject,
  audience: string,
  maxRemembered = 10_000,
): RequestHandler {
  const verified = new Map<string, InternalClaims>();
  return (req, res, next) => {
    const token = bearerToken(req.header('authorization'));
    if (!token) return next(new AppError('UNAUTHORIZED', 'Missing internal credentials.'));
    const now = Date.now();
    let claims = verified.get(token);
    if (!claims || claims.expiresAt <= now) {
      claims = verifyInternalToken(publicKey, audience, token, now);
      if (!claims) {
        verified.delete(token);
        return next(new AppError('UNAUTHORIZED', 'Invalid internal credentials.'));
      }
      if (verified.size >= maxRemembered) verified.clear();
      verified.set(token, claims);
    }
    res.locals.accountId = claims.accountId;
    res.locals.limits = claims.limits ?? {};
    next();
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
