import { pipelineEach, type RedisClient } from '@signal/service-kit';
import {
  announceChange,
  type CredentialChanges,
  type EndedSessions,
  type SessionEnding,
  type StreamSession,
} from '../../stream/domain/open-streams';
import type { Session, SessionRef, SessionRevocations } from '../domain/sessions';

/** A logout's `endsAt`: refused from the epoch on, told apart from a renewal's retirement time. */
const LOGGED_OUT = '1';

/**
 * Revoked sessions in Redis: `session:revoked:<id>` per logout or renewal (the moment, in ms,
 * from which it is refused; a logout's is 1) and `session:valid-after:<acc>` per password
 * change, each expiring when every token it could refuse has expired anyway. One round trip
 * per check: two GETs sent together (not one MGET: the session's key and the account's are in
 * different Redis Cluster slots).
 */
export class SessionRevocationStore implements SessionRevocations, EndedSessions {
  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
    /** Told of each session ended now, so that every gateway checks that account's streams. */
    private readonly changes?: Pick<CredentialChanges, 'announce'>,
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
    return ended(session, endsAt, validAfter, now) !== undefined;
  }

  /**
   * The open streams' sessions, checked together: one pipeline per Redis node (a session's key
   * and its account's are in different Cluster slots).
   */
  async endedAmong(sessions: ReadonlyArray<StreamSession>, now: number): Promise<SessionEnding[]> {
    if (sessions.length === 0) return [];
    const keys = sessions.flatMap((s) => [this.revokedKey(s.sessionId), this.validAfterKey(s.accountId)]);
    const replies = await pipelineEach(
      this.redis,
      keys,
      (key) => key,
      (pipeline, key) => pipeline.get(key),
    );
    const value = (i: number): string | null => {
      const reply = replies[i]?.[0];
      if (!reply) return null;
      if (reply[0]) throw reply[0];
      return typeof reply[1] === 'string' ? reply[1] : null;
    };
    return sessions.map((s, i) => ended(s, value(2 * i), value(2 * i + 1), now));
  }

  async retire(session: SessionRef, endsAt: number, ttlSeconds: number): Promise<boolean> {
    const retired =
      (await this.redis.set(this.revokedKey(session.sessionId), String(endsAt), 'EX', ttlSeconds, 'NX')) ===
      'OK';
    // A renewal's retirement ends later (its grace): the periodic check ends its streams then.
    if (retired && endsAt <= Date.now()) await announceChange(this.changes, session.accountId);
    return retired;
  }

  async revoke(session: SessionRef, ttlSeconds: number): Promise<void> {
    await this.redis.set(this.revokedKey(session.sessionId), LOGGED_OUT, 'EX', ttlSeconds);
    await announceChange(this.changes, session.accountId);
  }

  async revokeAllBefore(accountId: string, issuedBefore: number, ttlSeconds: number): Promise<void> {
    await this.redis.set(this.validAfterKey(accountId), String(issuedBefore), 'EX', ttlSeconds);
    await announceChange(this.changes, accountId);
  }
}

/**
 * Ended by a password change after it was issued or by a logout (`endsAt` 1), or retired, its
 * `endsAt` reached: by a renewal, which leaves its user signed in with the successor (a password
 * change's own session, retired so, is ended by the change's cutoff first).
 */
function ended(
  session: { issuedAt: number },
  endsAt: string | null,
  validAfter: string | null,
  now: number,
): SessionEnding {
  if (validAfter !== null && session.issuedAt < Number(validAfter)) return 'ended';
  if (endsAt === null || Number(endsAt) > now) return undefined;
  return endsAt === LOGGED_OUT ? 'ended' : 'renewed';
}
