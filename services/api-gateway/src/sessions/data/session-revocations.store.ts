import type { RedisClient } from '@signal/service-kit';
import type { Session, SessionRevocations } from '../domain/sessions';

/**
 * Revoked sessions in Redis: `session:revoked:<id>` per logout or renewal (the moment, in ms,
 * from which it is refused; a logout's is 1) and `session:valid-after:<acc>` per password
 * change, each expiring when every token it could refuse has expired anyway. One round trip
 * per check: two GETs sent together (not one MGET: the session's key and the account's are in
 * different Redis Cluster slots).
 */
export class SessionRevocationStore implements SessionRevocations {
  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
  ) {}

  private revokedKey(sessionId: string): string {
    return `${this.prefix}session:revoked:${sessionId}`;
  }
  private validAfterKey(accountId: string): string {
    return `${this.prefix}session:valid-after:${accountId}`;
  }

  async isRevoked(session: Session, now = Date.now()): Promise<boolean> {
    const [endsAt, validAfter] = await Promise.all([
      this.redis.get(this.revokedKey(session.sessionId)),
      this.redis.get(this.validAfterKey(session.accountId)),
    ]);
    return (
      (endsAt !== null && Number(endsAt) <= now) ||
      (validAfter !== null && session.issuedAt < Number(validAfter))
    );
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
