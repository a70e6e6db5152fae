import { fail, succeed, type Result } from '@signal/service-kit';
import type { PasswordAccounts } from '../../accounts/domain/ports';
import { reserveLogin, sessionSubject, type LoginAttempts } from './login-throttle';
import type { DeviceCookies } from './device-cookies';
import type { PasswordHasher } from '../../accounts/domain/password';
import type { PasswordWork } from '../../accounts/domain/password-work';
import { clientGroup } from '../../edge/domain/throttle';
import type { Session, SessionStore } from './sessions';

export interface PasswordLoginDeps {
  accounts: PasswordAccounts;
  passwords: PasswordHasher;
  /** Whose turn it is to hash: the process's bound on password work. */
  work: PasswordWork;
  attempts: LoginAttempts;
  sessions: SessionStore;
  devices: DeviceCookies;
}

/** Where a login comes from: the client's address and the device cookie it sent, if any. */
export interface LoginClient {
  ip: string;
  deviceCookie?: string;
}

/** Why a login fails: the password, waiting after failures, or a store that does not respond. */
export type LoginFailure = 'UNAUTHORIZED' | 'RATE_LIMIT_EXCEEDED' | 'SERVICE_UNAVAILABLE';

/**
 * A success: the account, the device cookie the browser keeps for this email, and the time its
 * session is issued at: when the password was read, not when the login ends (see checkLogin).
 */
export type LoginResult = Result<
  { accountId: string; deviceCookie: string; sessionIssuedAt: number },
  LoginFailure
>;

/** A wait after failures: of logins, or of a session's current password when it changes it. */
const tooManyFailures = (waitMs: number, what = 'failed logins') =>
  fail('RATE_LIMIT_EXCEEDED', `Too many ${what}: wait retry_after seconds.`, {
    retryAfter: Math.ceil(waitMs / 1000),
  });

/**
 * Its turn (by lane: a proven device, an email with an account, one without) → the attempt is
 * counted as a failure before anything else, against the device its cookie
 * proves for this email, or else against the network and the email (refused without looking
 * while a subject that judges it is waiting: domain/login-throttle.ts) → check the password at
 * its stored cost (unknown emails spend the same) → a failure stays counted → a success takes
 * the reservations back, upgrades a hash made at an older cost and hands the browser a device
 * cookie for this email (the same device id when it had one).
 */
export async function passwordLogin(
  deps: PasswordLoginDeps,
  email: string,
  password: string,
  client: LoginClient,
  clock: () => number = Date.now,
): Promise<LoginResult> {
  // Its turn first: an attempt refused for want of one is not counted as a failure. The clock is
  // read when the turn comes: a time read before the wait is stale by the wait, and a reservation
  // stamped later would look like a wait ahead of it.
  // A browser whose device cookie is for this email waits in the known lane: strangers' logins
  // from many addresses cannot hold its turn (accounts/domain/password-work.ts).
  // A login to an email with no account waits behind every other (a flood of made-up emails
  // from a user's own NAT takes only its own lane); whether an email has an account is no
  // secret (sign-up says so), and its password is checked at the same cost when its turn comes.
  const deviceId = deps.devices.deviceFor(client.deviceCookie, email);
  const lane =
    deviceId !== undefined
      ? 'known'
      : (await deps.accounts.findAccountByEmail(email.trim().toLowerCase()))
        ? 'anyone'
        : 'no_account';
  const done = await deps.work.run(
    clientGroup(client.ip),
    () => checkLogin(deps, email, password, { ip: client.ip, deviceId }, clock),
    lane,
  );
  return done.ok ? done.value : done;
}

async function checkLogin(
  deps: PasswordLoginDeps,
  email: string,
  password: string,
  client: { ip: string; deviceId: string | undefined },
  clock: () => number,
): Promise<LoginResult> {
  const { deviceId } = client;
  const reserved = await reserveLogin(deps.attempts, email, client, clock());
  if (!reserved.ok) return tooManyFailures(reserved.waitMs);
  // The session is issued as of now, before the password is read: a password change that
  // stores its new hash after this read ends it (its cutoff is taken after the store), and one
  // that stored it before is read here, so the old password fails. A session stamped when the
  // login ends would outlive a change that committed while this login checked the old password.
  const sessionIssuedAt = clock();
  const account = await deps.accounts.findAccountByEmail(email.trim().toLowerCase());
  const ok = await deps.passwords.verify(password, account?.password_hash ?? null);
  if (!account || !ok) return fail('UNAUTHORIZED', 'Invalid email or password.');
  await reserved.succeeded();
  // Only over the hash it checked: a change stored meanwhile is never undone by the old password.
  if (deps.passwords.needsRehash(account.password_hash)) {
    await deps.accounts.setPasswordHash(
      account._id,
      await deps.passwords.hash(password),
      account.password_hash ?? undefined,
    );
  }
  return succeed({
    accountId: account._id,
    deviceCookie: deps.devices.issue(email, deviceId),
    sessionIssuedAt,
  });
}

export type PasswordChangeResult = Result<void, LoginFailure>;

/** A wrong current password, naming its field: a client tells it from an ended session by that. */
const wrongPassword = () =>
  fail('UNAUTHORIZED', 'The current password is wrong.', {
    details: [{ field: 'current_password', message: 'This is not the current password.' }],
  });

const sessionEnded = () => fail('UNAUTHORIZED', 'This session has ended; log in again.');

/**
 * The current password is checked, counted against the session that asks (its own failures
 * alone decide its waits: domain/login-throttle.ts, `SESSION_POLICY`) → the asking session is
 * ended, once (a session that ended meanwhile, or that another change ended first, changes
 * nothing) → every session of the account so far is revoked (first: if that cannot happen the
 * password stays as it was) → the new password is stored. The caller issues the client a new
 * session.
 */
export async function changePassword(
  deps: PasswordLoginDeps,
  session: Session,
  currentPassword: string,
  newPassword: string,
  clock: () => number = Date.now,
): Promise<PasswordChangeResult> {
  const done = await deps.work.run(
    `account:${session.accountId}`,
    () => replacePassword(deps, session, currentPassword, newPassword, clock),
    'known',
  );
  return done.ok ? done.value : done;
}

async function replacePassword(
  deps: PasswordLoginDeps,
  session: Session,
  currentPassword: string,
  newPassword: string,
  clock: () => number,
): Promise<PasswordChangeResult> {
  const now = clock();
  // The session was checked when the request came; it may have ended while the request waited
  // for its turn (a logout, another change with it before this one): then it changes nothing.
  try {
    if (await deps.sessions.hasEnded(session)) return sessionEnded();
  } catch (cause) {
    return fail('SERVICE_UNAVAILABLE', undefined, { retryAfter: 1, cause });
  }
  const subject = sessionSubject(session.sessionId);
  const reserved = await deps.attempts.reserve(subject, now, true);
  if (!reserved.ok) return tooManyFailures(reserved.waitMs, 'wrong current passwords');
  const account = await deps.accounts.findAccount(session.accountId);
  const ok = await deps.passwords.verify(currentPassword, account?.password_hash ?? null);
  if (!account || !ok) return wrongPassword();
  await deps.attempts.clear(subject);
  try {
    // Ended here, once: of two changes with one session on two gateways at once, one goes on.
    if (!(await deps.sessions.endOnce(session, now))) return sessionEnded();
    await deps.sessions.revokeAll(session.accountId, now);
  } catch (cause) {
    return fail('SERVICE_UNAVAILABLE', undefined, { retryAfter: 1, cause });
  }
  await deps.accounts.setPasswordHash(session.accountId, await deps.passwords.hash(newPassword));
  // Again, from now: a login that read the old hash while the new one was made (the hash takes
  // a while) has a session issued after the first cutoff; every login from here reads the new one.
  try {
    await deps.sessions.revokeAll(session.accountId, clock());
  } catch (cause) {
    return fail(
      'SERVICE_UNAVAILABLE',
      'The password was changed, but sessions begun while it changed could not be ended: log in with the new password and change it again.',
      { retryAfter: 1, cause },
    );
  }
  return succeed(undefined);
}
