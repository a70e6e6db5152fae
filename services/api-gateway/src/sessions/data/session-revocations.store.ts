import type Redis from 'ioredis';
import type { EndedSessions, StreamSession } from '../../edge/domain/open-streams';
import type { Session, SessionRevocations } from '../domain/sessions';

/**
 * Revoked sessions in Redis: `session:revoked:<id>` per logout or renewal (the moment, in ms,
 * from which it is refused; a logout's is 1) and `session:valid-after:<acc>` per password
 * change, each expiring when every token it could refuse has expired anyway. One round trip
 * per check.
 */
export class SessionRevocationStore implements SessionRevocations, EndedSessions {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
  ) {}

  private revokedKey(sessionId: string): string {
    return `${this.prefix}session:revoked:${sessionId}`;
  }
  private validAfterKey(accountId: string): string {
    return `${this.prefix}session:valid-after:${accountId}`;
  }

  async isRevoked(session: Session, now = Date.now()): Promise<boolean> {
    const [endsAt, validAfter] = await this.redis.mget(
      this.revokedKey(session.sessionId),
      this.validAfterKey(session.accountId),
    );
    return ended(session, endsAt ?? null, validAfter ?? null, now);
  }

  /** The open streams' sessions, checked together: one round trip. */
  async endedAmong(sessions: ReadonlyArray<StreamSession>, now: number): Promise<boolean[]> {
    if (sessions.length === 0) return [];
    const keys = sessions.flatMap((s) => [this.revokedKey(s.sessionId), this.validAfterKey(s.accountId)]);
    const values = await this.redis.mget(...keys);
    return sessions.map((s, i) => ended(s, values[2 * i] ?? null, values[2 * i + 1] ?? null, now));
  }

  async retire(sessionId: string, endsAt: number, ttlSeconds: number): Promise<boolean> {
    return (
      (await this.redis.set(this.revokedKey(sessionId), String(endsAt), 'EX', ttlSeconds, 'NX')) === 'OK'
    );
  }

  async revoke(sessionId: string, ttlSeconds: number): Promise<void> {
    await this.redis.set(this.revokedKey(sessionId), '1', 'EX', ttlSeconds);
  }

  async revokeAllBefore(accountId: string, issuedBefore: number, ttlSeconds: number): Promise<void> {
    await this.redis.set(this.validAfterKey(accountId), String(issuedBefore), 'EX', ttlSeconds);
  }
}

/** Ended by a logout or renewal (`endsAt` reached) or by a password change after it was issued. */
function ended(
  session: { issuedAt: number },
  endsAt: string | null,
  validAfter: string | null,
  now: number,
): boolean {
  return (
    (endsAt !== null && Number(endsAt) <= now) ||
    (validAfter !== null && session.issuedAt < Number(validAfter))
  );
}
