import { DeviceCookies } from './device-cookies';
import {
  EMAIL_POLICY,
  LocalLoginAttempts,
  NETWORK_POLICY,
  PAIR_POLICY,
  reserveLogin,
  waitAfter,
  type LoginOrigin,
} from './login-throttle';

const VICTIM = 'victim@example.com';

/** `n` failed attempts: each reserved and never taken back; how many were refused. */
async function fail(
  attempts: LocalLoginAttempts,
  email: string,
  origin: LoginOrigin,
  n: number,
  now: number,
) {
  let refused = 0;
  for (let i = 0; i < n; i++) if (!(await reserveLogin(attempts, email, origin, now)).ok) refused += 1;
  return refused;
}

describe('login throttle rules', () => {
  it('when an attempt stamped with an earlier clock reserves after one stamped later, within the free failures, then it is not held', async () => {
    const attempts = new LocalLoginAttempts();
    const origin = { ip: '198.51.100.7' };
    // Two attempts of one network at once (one per gateway): the later-stamped reserves first.
    expect((await reserveLogin(attempts, VICTIM, origin, 1_000_050)).ok).toBe(true);
    expect((await reserveLogin(attempts, VICTIM, origin, 1_000_000)).ok).toBe(true);
  });

  it('when one network keeps failing for an email, then after 5 free failures that network waits for it', async () => {
    const attempts = new LocalLoginAttempts();
    expect(await fail(attempts, VICTIM, { ip: '198.51.100.1' }, 6, 0)).toBe(0);
    const next = await reserveLogin(attempts, VICTIM, { ip: '198.51.100.1' }, 0);
    expect(next).toEqual({ ok: false, waitMs: 1000 });
  });

  it('when guesses for an email come from many networks, then a network that failed for it waits and one that did not is judged', async () => {
    const attempts = new LocalLoginAttempts();
    for (let n = 1; n <= 12; n++) await fail(attempts, VICTIM, { ip: `192.0.2.${n}` }, 1, 0);
    // The email is past its 10 free failures: a network that failed for it waits for the email.
    expect((await reserveLogin(attempts, VICTIM, { ip: '192.0.2.1' }, 0)).ok).toBe(false);
    // A network with no failures for this email is never held by the others'.
    expect((await reserveLogin(attempts, VICTIM, { ip: '203.0.113.50' }, 0)).ok).toBe(true);
  });

  it('when a network fails for many other emails, then an email it has not failed for is judged and one it has waits', async () => {
    const attempts = new LocalLoginAttempts();
    await fail(attempts, 'typo@example.com', { ip: '198.51.100.9' }, 1, 0);
    for (let i = 0; i < 25; i++) await fail(attempts, `other-${i}@example.com`, { ip: '198.51.100.9' }, 1, 0);
    expect((await reserveLogin(attempts, VICTIM, { ip: '198.51.100.9' }, 0)).ok).toBe(true);
    expect((await reserveLogin(attempts, 'typo@example.com', { ip: '198.51.100.9' }, 0)).ok).toBe(false);
  });

  it("when an email and its network are both waiting, then the browser with the email's device cookie is judged by its own failures only", async () => {
    const attempts = new LocalLoginAttempts();
    const devices = new DeviceCookies('device-secret');
    const cookie = devices.issue(VICTIM);
    const deviceId = devices.deviceFor(cookie, VICTIM);
    expect(deviceId).toBeDefined();
    await fail(attempts, VICTIM, { ip: '198.51.100.1' }, 30, 0);
    expect((await reserveLogin(attempts, VICTIM, { ip: '198.51.100.1' }, 0)).ok).toBe(false);
    const own = await reserveLogin(attempts, VICTIM, { ip: '198.51.100.1', deviceId }, 0);
    expect(own.ok).toBe(true);
    // Its own mistakes still count: 5 free (the one above included), then it waits too.
    expect(await fail(attempts, VICTIM, { ip: '198.51.100.1', deviceId }, 5, 0)).toBe(0);
    expect((await reserveLogin(attempts, VICTIM, { ip: '198.51.100.1', deviceId }, 0)).ok).toBe(false);
  });

  it('when the email waits longer than the network that is refused, then the refusal names the longer wait, and after it the attempt is judged', async () => {
    const attempts = new LocalLoginAttempts();
    const guesser = { ip: '198.51.100.20' };
    // Six failures from one network (its pair waits 1 s), ten more from ten others: the email,
    // at 16 failures, waits 32 s.
    await fail(attempts, VICTIM, guesser, 6, 0);
    for (let n = 1; n <= 10; n++) await fail(attempts, VICTIM, { ip: `192.0.2.${n}` }, 1, 0);
    expect(await reserveLogin(attempts, VICTIM, guesser, 0)).toEqual({ ok: false, waitMs: 32_000 });
    // Past the pair's own second the email still refuses, with what is left of its wait.
    expect(await reserveLogin(attempts, VICTIM, guesser, 1_000)).toEqual({ ok: false, waitMs: 31_000 });
    expect((await reserveLogin(attempts, VICTIM, guesser, 32_000)).ok).toBe(true);
  });

  it('when an attempt is refused for the email, then it moves no wait of its network: after the wait it was told, it is judged', async () => {
    const attempts = new LocalLoginAttempts();
    const guesser = { ip: '198.51.100.21' };
    // The guesser's pair waits until 1,000 (6 failures at 0); five other networks fail at 500,
    // and the email, at 11 failures, waits until 1,500.
    await fail(attempts, VICTIM, guesser, 6, 0);
    for (let n = 1; n <= 5; n++) await fail(attempts, VICTIM, { ip: `192.0.2.${n}` }, 1, 500);
    expect(await reserveLogin(attempts, VICTIM, guesser, 1_000)).toEqual({ ok: false, waitMs: 500 });
    expect((await reserveLogin(attempts, VICTIM, guesser, 1_500)).ok).toBe(true);
  });

  it('when a success follows, then it clears the device or the pair and takes back its share of the others', async () => {
    const attempts = new LocalLoginAttempts();
    await fail(attempts, VICTIM, { ip: '198.51.100.1' }, 6, 0);
    expect((await reserveLogin(attempts, VICTIM, { ip: '198.51.100.1' }, 0)).ok).toBe(false);
    const later = await reserveLogin(attempts, VICTIM, { ip: '198.51.100.1' }, 1000);
    if (!later.ok) throw new Error('the wait was over');
    await later.succeeded();
    expect(await fail(attempts, VICTIM, { ip: '198.51.100.1' }, 5, 1000)).toBe(0);
  });
});

describe('device cookies', () => {
  const devices = new DeviceCookies('device-secret');

  it('when a cookie is shown for the email it was issued for, then it proves its device, whatever the case of the email', () => {
    const cookie = devices.issue(VICTIM);
    expect(devices.deviceFor(cookie, 'Victim@Example.com')).toBe(cookie.split('.')[0]);
    expect(devices.deviceFor(devices.issue(VICTIM, cookie.split('.')[0]), VICTIM)).toBe(cookie.split('.')[0]);
  });

  it('when a cookie is for another email, tampered with, signed with another secret or malformed, then it proves nothing', () => {
    const cookie = devices.issue(VICTIM);
    const [id, sig] = cookie.split('.') as [string, string];
    expect(devices.deviceFor(cookie, 'someone-else@example.com')).toBeUndefined();
    // Its last character changed (to one it is not: a fixed 'A' is the same one time in 64).
    const tampered = `${sig.slice(0, -1)}${sig.endsWith('A') ? 'B' : 'A'}`;
    expect(devices.deviceFor(`${id}.${tampered}`, VICTIM)).toBeUndefined();
    expect(devices.deviceFor(`${'A'.repeat(22)}.${sig}`, VICTIM)).toBeUndefined();
    expect(devices.deviceFor(new DeviceCookies('another-secret').issue(VICTIM), VICTIM)).toBeUndefined();
    for (const junk of ['', '.', id, `${id}.`, 'x.y'])
      expect(devices.deviceFor(junk, VICTIM)).toBeUndefined();
  });
});

describe('login waits', () => {
  it('when failures pile up, then the first few are free and each further one doubles the wait, up to 15 minutes', () => {
    const waits = Array.from({ length: 9 }, (_, i) => waitAfter(i + 1, PAIR_POLICY));
    expect(waits).toEqual([0, 0, 0, 0, 0, 1000, 2000, 4000, 8000]);
    expect(waitAfter(40, PAIR_POLICY)).toBe(15 * 60_000);
    expect(waitAfter(10, EMAIL_POLICY)).toBe(0);
    expect(waitAfter(11, EMAIL_POLICY)).toBe(1000);
    expect(waitAfter(20, NETWORK_POLICY)).toBe(0);
    expect(waitAfter(21, NETWORK_POLICY)).toBe(1000);
  });
});
