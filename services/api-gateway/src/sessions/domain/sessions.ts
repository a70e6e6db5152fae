import { createHmac, randomUUID, timingSafeEqual } from 'node:crypto';
import jwt from 'jsonwebtoken';
import { fail, succeed, type Result } from '@signal/service-kit';
import { z } from 'zod';

/**
 * Account sessions, one store for both kinds: `api` (a bearer token from POST /v1/auth/login,
 * for scripts) and `cookie` (the dashboard's HttpOnly cookie, with a CSRF token derived from
 * the session id — HMAC, nothing to store). Each is a signed JWT (HS256, its own audience,
 * `exp` required) revocable two ways: one session (logout: a deny-list entry that lives as
 * long as the token would) or every session of an account issued before a moment (password
 * change).
 */
export const SESSION_COOKIE = '__Host-signal_session';

export type SessionKind = 'api' | 'cookie';
const AUDIENCE: Record<SessionKind, string> = { api: 'dashboard', cookie: 'dashboard-cookie' };

const claimsSchema = z.object({
  sub: z.string().min(1),
  jti: z.string().min(1),
  iat: z.number(),
  /** When it was issued, in ms (`iat` is in seconds: too coarse to order it against a revocation). */
  iat_ms: z.number().optional(),
  exp: z.number(),
});

export interface Session {
  kind: SessionKind;
  accountId: string;
  sessionId: string;
  /** Unix ms. */
  issuedAt: number;
  /** Unix ms. */
  expiresAt: number;
}

/** Which session, of which account (the account's open streams are checked when it ends). */
export type SessionRef = Pick<Session, 'accountId' | 'sessionId'>;

/** Port: revoked sessions, shared by every gateway (data/session-revocations.store.ts). */
export interface SessionRevocations {
  isRevoked(session: Session): Promise<boolean>;
  revoke(session: SessionRef, ttlSeconds: number): Promise<void>;
  /**
   * Ends a session at `endsAt` (Unix ms) unless it was already ended or retired; true when this
   * call retired it (so exactly one renewal replaces a session).
   */
  retire(session: SessionRef, endsAt: number, ttlSeconds: number): Promise<boolean>;
  /** Every session of the account issued before `issuedBefore` (Unix ms) is refused. */
  revokeAllBefore(accountId: string, issuedBefore: number, ttlSeconds: number): Promise<void>;
}

/** A session token's check: the session, UNAUTHORIZED saying why, or SERVICE_UNAVAILABLE. */
export type SessionCheck = Result<Session, 'UNAUTHORIZED' | 'SERVICE_UNAVAILABLE'>;

export class SessionStore {
  constructor(
    private readonly secret: string,
    readonly ttlSeconds: number,
    private readonly revocations: SessionRevocations,
    /**
     * How long a session replaced by a renewal keeps working: requests the browser sent with the
     * old cookie before it got the new one (a page's parallel calls) still succeed.
     */
    private readonly renewalGraceMs = 5000,
  ) {}

  issue(kind: SessionKind, accountId: string, issuedAt = Date.now()) {
    const sessionId = randomUUID();
    const token = jwt.sign({ iat: Math.floor(issuedAt / 1000), iat_ms: issuedAt }, this.secret, {
      algorithm: 'HS256',
      audience: AUDIENCE[kind],
      subject: accountId,
      jwtid: sessionId,
      expiresIn: this.ttlSeconds,
    });
    const session: Session = {
      kind,
      accountId,
      sessionId,
      issuedAt,
      expiresAt: (Math.floor(issuedAt / 1000) + this.ttlSeconds) * 1000,
    };
    return { token, session };
  }

  async verify(kind: SessionKind, token: string): Promise<SessionCheck> {
    let claims: z.infer<typeof claimsSchema>;
    try {
      claims = claimsSchema.parse(
        jwt.verify(token, this.secret, { algorithms: ['HS256'], audience: AUDIENCE[kind] }),
      );
    } catch (err) {
      // Only a token that was once valid has expired; anything else is not a session of ours.
      const message =
        err instanceof jwt.TokenExpiredError
          ? 'Your session has expired; log in again.'
          : 'Invalid session token; log in again.';
      return fail('UNAUTHORIZED', message);
    }
    const session: Session = {
      kind,
      accountId: claims.sub,
      sessionId: claims.jti,
      issuedAt: claims.iat_ms ?? claims.iat * 1000,
      expiresAt: claims.exp * 1000,
    };
    try {
      if (await this.revocations.isRevoked(session))
        return fail('UNAUTHORIZED', 'This session has ended; log in again.');
    } catch {
      return fail('SERVICE_UNAVAILABLE', undefined, { retryAfter: 1 });
    }
    return succeed(session);
  }

  /**
   * Sliding sessions: past half its life a session is replaced by a new one, and the old one
   * ends `renewalGraceMs` later. Undefined when it is not due, or when a concurrent request
   * already replaced it (that request's response carries the new cookie).
   */
  async renew(session: Session, now = Date.now()): Promise<{ token: string; session: Session } | undefined> {
    if (session.expiresAt - now > (this.ttlSeconds * 1000) / 2) return undefined;
    const ttl = Math.max(1, Math.ceil((session.expiresAt - now) / 1000));
    // A password change that ended it after its request was checked: no successor. Read after
    // `now`, so a cutoff set after this read is later than the successor's issue time too.
    if (await this.revocations.isRevoked(session)) return undefined;
    if (!(await this.revocations.retire(session, now + this.renewalGraceMs, ttl))) return undefined;
    return this.issue(session.kind, session.accountId, now);
  }

  /** Logout: this session only. */
  revoke(session: Session): Promise<void> {
    return this.revocations.revoke(session, Math.max(1, Math.ceil((session.expiresAt - Date.now()) / 1000)));
  }

  /** Whether a session that was valid when its request came has ended since. */
  hasEnded(session: Session): Promise<boolean> {
    return this.revocations.isRevoked(session);
  }

  /**
   * Ends this session now, once: false when it had ended already (a logout, a renewal, a
   * password change). Atomic across gateways: of two requests ending one session, one gets true.
   */
  async endOnce(session: Session, now = Date.now()): Promise<boolean> {
    if (await this.hasEnded(session)) return false;
    const ttl = Math.max(1, Math.ceil((session.expiresAt - now) / 1000));
    return this.revocations.retire(session, now, ttl);
  }

  /** Every session of the account issued so far (a password change), whatever its kind. */
  async revokeAll(accountId: string, now = Date.now()): Promise<void> {
    await this.revocations.revokeAllBefore(accountId, now, this.ttlSeconds + 60);
  }

  /** Synchronizer token bound to the session: HMAC of its id, checked on every unsafe method. */
  csrfToken(session: Session): string {
    return createHmac('sha256', this.secret).update(`csrf:${session.sessionId}`).digest('base64url');
  }

  checkCsrf(session: Session, given: string | undefined): boolean {
    if (!given) return false;
    const expected = Buffer.from(this.csrfToken(session));
    const actual = Buffer.from(given);
    return actual.length === expected.length && timingSafeEqual(actual, expected);
  }
}
