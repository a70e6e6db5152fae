import { AppError, newId } from '@signal/service-kit';
import { createHmac, randomUUID, timingSafeEqual } from 'node:crypto';
import type Redis from 'ioredis';
import jwt from 'jsonwebtoken';
import { z } from 'zod';
import type { Plan } from '../data/account.model';
import { EmailTakenError } from '../data/account.repository';
import type { AccountDeps } from './accounts.use-cases';
import { hashPassword, verifyPassword } from './password';

/**
 * Dashboard sessions: a signed JWT (HS256, its own audience) in an HttpOnly cookie, a CSRF token
 * derived from the session id (HMAC, so nothing to store), and logout as a Redis deny-list entry
 * that lives exactly as long as the token would.
 */
export const SESSION_COOKIE = '__Host-signal_session';
const AUDIENCE = 'dashboard-cookie';

const claimsSchema = z.object({ sub: z.string().min(1), jti: z.string().min(1), exp: z.number() });

export interface DashboardSession {
  accountId: string;
  sessionId: string;
  expiresAt: number;
}

export class SessionStore {
  constructor(
    private readonly secret: string,
    private readonly ttlSeconds: number,
    private readonly redis: Redis,
    private readonly prefix: string,
  ) {}

  issue(accountId: string): { token: string; session: DashboardSession } {
    const sessionId = randomUUID();
    const token = jwt.sign({}, this.secret, {
      algorithm: 'HS256',
      audience: AUDIENCE,
      subject: accountId,
      jwtid: sessionId,
      expiresIn: this.ttlSeconds,
    });
    return { token, session: { accountId, sessionId, expiresAt: Date.now() + this.ttlSeconds * 1000 } };
  }

  get ttl(): number {
    return this.ttlSeconds;
  }

  async verify(token: string): Promise<DashboardSession> {
    let claims: z.infer<typeof claimsSchema>;
    try {
      claims = claimsSchema.parse(
        jwt.verify(token, this.secret, { algorithms: ['HS256'], audience: AUDIENCE }),
      );
    } catch {
      throw new AppError('UNAUTHORIZED', 'Your dashboard session has expired; log in again.');
    }
    const revoked = await this.redis.exists(this.revokedKey(claims.jti)).catch((err: unknown) => {
      throw new AppError('SERVICE_UNAVAILABLE', undefined, { cause: err, retryAfter: 1 });
    });
    if (revoked) throw new AppError('UNAUTHORIZED', 'You have logged out; log in again.');
    return { accountId: claims.sub, sessionId: claims.jti, expiresAt: claims.exp * 1000 };
  }

  async revoke(session: DashboardSession): Promise<void> {
    const seconds = Math.max(1, Math.ceil((session.expiresAt - Date.now()) / 1000));
    await this.redis.set(this.revokedKey(session.sessionId), '1', 'EX', seconds);
  }

  /** Synchronizer token bound to the session: HMAC of its id, checked on every unsafe method. */
  csrfToken(session: DashboardSession): string {
    return createHmac('sha256', this.secret).update(`csrf:${session.sessionId}`).digest('base64url');
  }

  checkCsrf(session: DashboardSession, given: string | undefined): boolean {
    if (!given) return false;
    const expected = Buffer.from(this.csrfToken(session));
    const actual = Buffer.from(given);
    return actual.length === expected.length && timingSafeEqual(actual, expected);
  }

  private revokedKey(sessionId: string): string {
    return `${this.prefix}dashboard:logout:${sessionId}`;
  }
}

export async function signUp(
  deps: AccountDeps,
  email: string,
  password: string,
  plan: Plan,
): Promise<{ id: string; email: string; plan: Plan }> {
  const id = newId('acc');
  try {
    await deps.repository.insertAccount({
      _id: id,
      email: email.toLowerCase(),
      password_hash: await hashPassword(password),
      plan,
      created_at: new Date(),
    });
  } catch (err) {
    // Says no more than "taken": the same answer as the operator CLI gives.
    if (err instanceof EmailTakenError) throw new AppError('CONFLICT', 'An account with this email exists.');
    throw err;
  }
  await deps.limiter.setPlan(id, plan.per_minute, plan.per_day);
  return { id, email: email.toLowerCase(), plan };
}

export async function checkCredentials(deps: AccountDeps, email: string, password: string): Promise<string> {
  const account = await deps.repository.findAccountByEmail(email.toLowerCase());
  const ok = await verifyPassword(password, account?.password_hash ?? null);
  if (!account || !ok) throw new AppError('UNAUTHORIZED', 'Invalid email or password.');
  return account._id;
}
