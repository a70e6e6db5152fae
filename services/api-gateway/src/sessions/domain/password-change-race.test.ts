import type { PasswordAccounts } from '../../accounts/domain/ports';
import type { PasswordHasher } from '../../accounts/domain/password';
import { PasswordWork } from '../../accounts/domain/password-work';
import type { Account } from '../../accounts/domain/records';
import { DeviceCookies } from './device-cookies';
import { LocalLoginAttempts } from './login-throttle';
import { changePassword, passwordLogin, type PasswordLoginDeps } from './password-login.use-case';
import { SessionStore, type Session, type SessionRef, type SessionRevocations } from './sessions';

/** The revocations' rules as the Redis store keeps them, in memory (a port, not Redis). */
class MemoryRevocations implements SessionRevocations {
  private readonly endsAt = new Map<string, number>();
  private readonly validAfter = new Map<string, number>();
  constructor(private readonly clock: () => number) {}
  async isRevoked(session: Session): Promise<boolean> {
    const ends = this.endsAt.get(session.sessionId);
    const after = this.validAfter.get(session.accountId);
    return (ends !== undefined && ends <= this.clock()) || (after !== undefined && session.issuedAt < after);
  }
  async revoke(session: SessionRef): Promise<void> {
    this.endsAt.set(session.sessionId, 1);
  }
  async retire(session: SessionRef, endsAt: number): Promise<boolean> {
    if (this.endsAt.has(session.sessionId)) return false;
    this.endsAt.set(session.sessionId, endsAt);
    return true;
  }
  async revokeAllBefore(accountId: string, issuedBefore: number): Promise<void> {
    this.validAfter.set(accountId, issuedBefore);
  }
}

/** `h:<password>`; `old:<password>` is a hash at an older cost. The next hash can be held. */
class HeldHasher implements PasswordHasher {
  private held: Promise<void> | undefined;
  private release: () => void = () => undefined;
  /** The next `hash` waits until `let()` is called. */
  holdNext(): void {
    this.held = new Promise<void>((resolve) => (this.release = resolve));
  }
  let(): void {
    this.release();
  }
  async hash(password: string): Promise<string> {
    const held = this.held;
    this.held = undefined;
    if (held) await held;
    return `h:${password}`;
  }
  async verify(password: string, stored: string | null): Promise<boolean> {
    return stored === `h:${password}` || stored === `old:${password}`;
  }
  needsRehash(stored: string | null): boolean {
    return stored?.startsWith('old:') ?? false;
  }
}

const EMAIL = 'owner@example.com';

function system(storedHash: string) {
  const account: Account = {
    _id: 'acc_race',
    email: EMAIL,
    password_hash: storedHash,
    plan: { per_minute: 60, per_day: 10_000 },
    created_at: new Date(),
  };
  const accounts: PasswordAccounts = {
    findAccount: async (id) => (id === account._id ? { ...account } : null),
    findAccountByEmail: async (email) => (email === EMAIL ? { ...account } : null),
    setPasswordHash: async (_id, hash, replacing) => {
      if (replacing !== undefined && account.password_hash !== replacing) return false;
      account.password_hash = hash;
      return true;
    },
  };
  let now = Date.now();
  const clock = () => now;
  const passwords = new HeldHasher();
  const sessions = new SessionStore(
    'a-test-secret-of-enough-length-0123456789',
    900,
    new MemoryRevocations(clock),
  );
  const deps: PasswordLoginDeps = {
    accounts,
    passwords,
    work: new PasswordWork({ running: 4, waiting: 10, waitingPerClient: 10 }),
    attempts: new LocalLoginAttempts(),
    sessions,
    devices: new DeviceCookies('a-device-secret-of-enough-length-0123456789'),
  };
  /** Lets `ms` pass on the clock every part reads, and the work already started settle. */
  const pass = async (ms: number) => {
    now += ms;
    await new Promise((resolve) => setImmediate(resolve));
  };
  return { account, deps, passwords, sessions, clock, pass };
}

describe('a password change beside a login with the old password', () => {
  it('when a login checks the old password while the change makes the new hash, then the session it gets ends with the change', async () => {
    const { deps, passwords, sessions, clock, pass } = system('h:old');
    const asking = sessions.issue('api', 'acc_race', clock()).session;
    await pass(10);
    passwords.holdNext(); // the change's new hash takes its time
    const change = changePassword(deps, asking, 'old', 'new-password', clock);
    await pass(10);
    // Meanwhile a login with the old password: the stored hash is still the old one.
    const login = await passwordLogin(deps, EMAIL, 'old', { ip: '198.51.100.9' }, clock);
    expect(login.ok).toBe(true);
    if (!login.ok) return;
    const { token } = sessions.issue('api', login.value.accountId, login.value.sessionIssuedAt);
    await pass(10);
    passwords.let();
    expect(await change).toEqual({ ok: true, value: undefined });
    expect(await sessions.verify('api', token)).toMatchObject({ ok: false, code: 'UNAUTHORIZED' });
    // After the change, the old password opens nothing and the new one does.
    await pass(10);
    expect((await passwordLogin(deps, EMAIL, 'old', { ip: '198.51.100.9' }, clock)).ok).toBe(false);
    const fresh = await passwordLogin(deps, EMAIL, 'new-password', { ip: '198.51.100.9' }, clock);
    expect(fresh.ok).toBe(true);
    if (!fresh.ok) return;
    const after = sessions.issue('api', fresh.value.accountId, fresh.value.sessionIssuedAt);
    expect((await sessions.verify('api', after.token)).ok).toBe(true);
  });

  it('when a login stores its old password again at today’s cost while a change stores the new one, then the new one stays', async () => {
    const { account, deps, passwords, pass, clock } = system('old:old');
    passwords.holdNext(); // the login's rehash of the old password takes its time
    const login = passwordLogin(deps, EMAIL, 'old', { ip: '198.51.100.9' }, clock);
    await pass(10);
    // The change lands first (another gateway): the stored hash is the new password's.
    await deps.accounts.setPasswordHash(account._id, 'h:new-password');
    passwords.let();
    expect((await login).ok).toBe(true);
    expect(account.password_hash).toBe('h:new-password');
  });
});
