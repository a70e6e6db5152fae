import { fail, succeed, type Result } from '@signal/service-kit';
import type { Account } from '../../accounts/domain/records';
import { loginSubjects, reserveAll, type LoginAttempts } from './login-throttle';
import type { PasswordHasher } from '../../accounts/domain/password';
import type { SessionStore } from './sessions';

/** Port: what logging in and changing a password need of the accounts (data/account.repository.ts). */
export interface PasswordAccounts {
  findAccount(id: string): Promise<Account | null>;
  findAccountByEmail(email: string): Promise<Account | null>;
  setPasswordHash(id: string, passwordHash: string): Promise<void>;
}

export interface PasswordLoginDeps {
  accounts: PasswordAccounts;
  passwords: PasswordHasher;
  attempts: LoginAttempts;
  sessions: SessionStore;
}

/** Why a login fails: the password, waiting after failures, or a store that does not respond. */
export type LoginFailure = 'UNAUTHORIZED' | 'RATE_LIMIT_EXCEEDED' | 'SERVICE_UNAVAILABLE';

export type LoginResult = Result<{ accountId: string }, LoginFailure>;

const tooManyFailures = (waitMs: number) =>
  fail('RATE_LIMIT_EXCEEDED', 'Too many failed logins: wait retry_after seconds.', {
    retryAfter: Math.ceil(waitMs / 1000),
  });

/**
 * The attempt is counted as a failure against the email and the client network before
 * anything else (refused without looking when either is waiting after failures) → check the
 * password at its stored cost (unknown emails spend the same) → a failure stays counted → a
 * success takes the network's count back, clears the email's and upgrades a hash made at an
 * older cost.
 */
export async function passwordLogin(
  deps: PasswordLoginDeps,
  email: string,
  password: string,
  ip: string,
  now = Date.now(),
): Promise<LoginResult> {
  const subjects = loginSubjects(email, ip);
  const reserved = await reserveAll(deps.attempts, [subjects.email, subjects.network], now);
  if (!reserved.ok) return tooManyFailures(reserved.waitMs);
  const account = await deps.accounts.findAccountByEmail(email.trim().toLowerCase());
  const ok = await deps.passwords.verify(password, account?.password_hash ?? null);
  if (!account || !ok) return fail('UNAUTHORIZED', 'Invalid email or password.');
  await Promise.all([deps.attempts.clear(subjects.email), deps.attempts.release(subjects.network)]);
  if (deps.passwords.needsRehash(account.password_hash)) {
    await deps.accounts.setPasswordHash(account._id, await deps.passwords.hash(password));
  }
  return succeed({ accountId: account._id });
}

export type PasswordChangeResult = Result<void, LoginFailure>;

const wrongPassword = () => fail('UNAUTHORIZED', 'The current password is wrong.');

/**
 * The current password is checked as a login would be (throttled the same way) →
 * every session of the account so far is revoked (first: if that cannot happen the password
 * stays as it was) → the new password is stored. The caller issues the client a new session.
 */
export async function changePassword(
  deps: PasswordLoginDeps,
  accountId: string,
  currentPassword: string,
  newPassword: string,
  ip: string,
  now = Date.now(),
): Promise<PasswordChangeResult> {
  const account = await deps.accounts.findAccount(accountId);
  if (!account) return wrongPassword();
  const login = await passwordLogin(deps, account.email, currentPassword, ip, now);
  if (!login.ok) return login.code === 'UNAUTHORIZED' ? wrongPassword() : login;
  try {
    await deps.sessions.revokeAll(accountId, now);
  } catch (cause) {
    return fail('SERVICE_UNAVAILABLE', undefined, { retryAfter: 1, cause });
  }
  await deps.accounts.setPasswordHash(accountId, await deps.passwords.hash(newPassword));
  return succeed(undefined);
}
