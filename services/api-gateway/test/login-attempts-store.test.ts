import { randomBytes } from 'node:crypto';
import { connectRedis, deleteKeysMatching, type RedisClient } from '@signal/service-kit';
import { infraUrls, silentLogger } from '@signal/test-kit';
import { LoginAttemptStore } from '../src/sessions/data/login-attempts.store';
import {
  LocalLoginAttempts,
  loginSubjects,
  reserveLogin,
  type LoginAttempts,
} from '../src/sessions/domain/login-throttle';

/**
 * The login throttle's counts in Redis (what every gateway shares) and in one process (what a
 * gateway uses while Redis is away) hold to the same rules, at explicit times.
 */
let redis: RedisClient;
const prefix = `t:las:${randomBytes(4).toString('hex')}:`;

beforeAll(async () => {
  redis = await connectRedis(infraUrls().redisUrl, silentLogger, 3000);
});
afterAll(async () => {
  await deleteKeysMatching(redis, `${prefix}*`);
  redis.disconnect();
});

const stores: Array<[string, () => LoginAttempts]> = [
  ['in Redis', () => new LoginAttemptStore(redis, `${prefix}${randomBytes(3).toString('hex')}:`)],
  ['in the process', () => new LocalLoginAttempts()],
];

describe.each(stores)('login attempts %s', (_, storeOf) => {
  it("when the owner logs in from another network while its email waits after guesses, then the email's wait is not lengthened", async () => {
    const attempts = storeOf();
    const email = 'owner@example.com';
    // 13 guesses from 13 networks at 0 ms: past the email's 10 free failures, a wait of 4 s.
    for (let i = 0; i < 13; i++) {
      const guess = await reserveLogin(attempts, email, { ip: `198.51.100.${i + 1}` }, 0);
      expect(guess.ok).toBe(true);
    }
    const emailSubject = loginSubjects(email, { ip: '203.0.113.1' }).email;
    expect(await attempts.standing(emailSubject, 2_000)).toEqual({ failures: 13, waitMs: 2_000 });

    // The owner, from a network with no failures for it, logs in at 2 s.
    const owner = await reserveLogin(attempts, email, { ip: '203.0.113.1' }, 2_000);
    if (!owner.ok) throw new Error('a network with no failures for the email is judged by its pair');
    await owner.succeeded();
    expect(await attempts.standing(emailSubject, 2_000)).toEqual({ failures: 13, waitMs: 2_000 });

    // A guess after the success still earns its wait from its own attempt.
    expect((await reserveLogin(attempts, email, { ip: '198.51.100.1' }, 5_000)).ok).toBe(true);
    expect(await attempts.standing(emailSubject, 5_000)).toEqual({ failures: 14, waitMs: 8_000 });
  });
});
