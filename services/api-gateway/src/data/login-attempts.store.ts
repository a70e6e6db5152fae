import type Redis from 'ioredis';
import { waitAfter, type LoginAttempts, type LoginSubject } from '../domain/login-throttle';

/**
 * One hash per subject (`failures`, `until` in ms), expiring `memoryMs` after the last failure.
 * A failure is counted atomically (HINCRBY) and its wait computed from the new count, so
 * concurrent failures on several gateways each add one.
 */
export class LoginAttemptStore implements LoginAttempts {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
  ) {}

  private key(s: LoginSubject): string {
    return `${this.prefix}login:{${s.key}}`;
  }

  async waitMs(subjects: LoginSubject[], now: number): Promise<number> {
    const pipeline = this.redis.pipeline();
    for (const s of subjects) pipeline.hget(this.key(s), 'until');
    const results = (await pipeline.exec()) ?? [];
    let wait = 0;
    for (const [err, value] of results) {
      if (err) throw err;
      if (typeof value === 'string') wait = Math.max(wait, Number(value) - now);
    }
    return wait;
  }

  async failed(subjects: LoginSubject[], now: number): Promise<void> {
    for (const s of subjects) {
      const key = this.key(s);
      const failures = await this.redis.hincrby(key, 'failures', 1);
      await this.redis
        .multi()
        .hset(key, 'until', now + waitAfter(failures, s.policy))
        .pexpire(key, s.policy.memoryMs)
        .exec();
    }
  }

  async succeeded(subject: LoginSubject): Promise<void> {
    await this.redis.del(this.key(subject));
  }
}
