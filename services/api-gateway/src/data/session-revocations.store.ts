import type Redis from 'ioredis';
import type { Session, SessionRevocations } from '../domain/sessions';

/**
 * Revoked sessions in Redis: `session:revoked:<id>` per logout and `session:valid-after:<acc>`
 * per password change, each expiring when every token it could refuse has expired anyway.
 * One round trip per check.
 */
export class SessionRevocationStore implements SessionRevocations {
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

  async isRevoked(session: Session): Promise<boolean> {
    const [revoked, validAfter] = await this.redis.mget(
      this.revokedKey(session.sessionId),
      this.validAfterKey(session.accountId),
    );
    return revoked !== null || (validAfter !== null && session.issuedAt < Number(validAfter));
  }

  async revoke(sessionId: string, ttlSeconds: number): Promise<void> {
    await this.redis.set(this.revokedKey(sessionId), '1', 'EX', ttlSeconds);
  }

  async revokeAllBefore(accountId: string, issuedBefore: number, ttlSeconds: number): Promise<void> {
    await this.redis.set(this.validAfterKey(accountId), String(issuedBefore), 'EX', ttlSeconds);
  }
}
