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

export type LoginResult =
  | { ok: true; accountId: string }
  | { ok: false; code: 'UNAUTHORIZED' }
  | { ok: false; code: 'RATE_LIMITED'; retryAfter: number }
  | { ok: false; code: 'UNAVAILABLE' };

/**
 * Story: the attempt is counted as a failure against the email and the client network before
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
  if (!reserved.ok) return { ok: false, code: 'RATE_LIMITED', retryAfter: Math.ceil(reserved.waitMs / 1000) };
  const account = await deps.accounts.findAccountByEmail(email.trim().toLowerCase());
  const ok = await deps.passwords.verify(password, account?.password_hash ?? null);
  if (!account || !ok) return { ok: false, code: 'UNAUTHORIZED' };
  await Promise.all([deps.attempts.clear(subjects.email), deps.attempts.release(subjects.network)]);
  if (deps.passwords.needsRehash(account.password_hash)) {
    await deps.accounts.setPasswordHash(account._id, await deps.passwords.hash(password));
  }
  return { ok: true, accountId: account._id };
}

export type PasswordChangeResult = { ok: true } | Exclude<LoginResult, { ok: true }>;

/**
 * Story: the current password is checked as a login would be (throttled the same way) →
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
  if (!account) return { ok: false, code: 'UNAUTHORIZED' };
  const login = await passwordLogin(deps, account.email, currentPassword, ip, now);
  if (!login.ok) return login;
  try {
    await deps.sessions.revokeAll(accountId, now);
  } catch {
    return { ok: false, code: 'UNAVAILABLE' };
  }
  await deps.accounts.setPasswordHash(accountId, await deps.passwords.hash(newPassword));
  return { ok: true };
}
