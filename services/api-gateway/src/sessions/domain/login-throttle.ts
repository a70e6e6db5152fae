import { createHash } from 'node:crypto';
import { clientGroup } from '../../edge/domain/throttle';

/**
 * Password guessing, slowed so that the guesser waits and the account's owner does not
 * (OWASP's device cookies, docs/decisions/login-throttle-and-device-cookies.md). Failures are
 * counted per subject: a few are free, then each further failure makes the next attempt wait
 * twice as long (1 s, 2 s, 4 s … up to 15 min); counts fade an hour after the last failure.
 *
 * - From a browser holding a device cookie for the email (it logged in as that email before),
 *   an attempt is judged by that device's own failures alone: nobody else's failures hold it.
 * - Without one, an attempt counts against the pair (network, email), the email and the network.
 *   The pair is always judged; the email and the network only once the pair has failed before.
 *   So a network with no failures for this email is never held by failures from elsewhere or for
 *   other emails, while a network that keeps guessing one email waits for the email's and its
 *   own count too.
 *
 * An attempt is counted as a failure before its password is checked (reserved atomically per
 * subject), so concurrent guesses see each other; an attempt during a wait is refused without
 * looking at the password (no oracle, no scrypt work); a success takes its reservations back
 * and clears the pair's or the device's count.
 */
export interface LoginPolicy {
  /** Failures allowed before any wait. */
  free: number;
  maxWaitMs: number;
  /** How long failures are remembered after the last one. */
  memoryMs: number;
}

const HOUR = 3_600_000;
const MAX_WAIT = 15 * 60_000;
/** One network guessing one email. */
export const PAIR_POLICY: LoginPolicy = { free: 5, maxWaitMs: MAX_WAIT, memoryMs: HOUR };
/** One email from every network that has failed for it (a guesser spread over many addresses). */
export const EMAIL_POLICY: LoginPolicy = { free: 10, maxWaitMs: MAX_WAIT, memoryMs: HOUR };
/** A network (an IPv4 address, an IPv6 /64) may hold many people: more failures before waits. */
export const NETWORK_POLICY: LoginPolicy = { free: 20, maxWaitMs: MAX_WAIT, memoryMs: HOUR };
/** One browser with a device cookie: its own mistakes only. */
export const DEVICE_POLICY: LoginPolicy = { free: 5, maxWaitMs: MAX_WAIT, memoryMs: HOUR };
/**
 * A signed-in session checking its account's current password (a password change): its own
 * mistakes only, as a device's. Failed logins for the email from elsewhere never hold it, so an
 * attacker guessing the password cannot keep its owner from changing it; a stolen session
 * guessing the current password waits as a guessing device does.
 */
export const SESSION_POLICY: LoginPolicy = { free: 5, maxWaitMs: MAX_WAIT, memoryMs: HOUR };

/** The subject a session's current-password checks count against. */
export const sessionSubject = (sessionId: string): LoginSubject => ({
  key: `session:${sessionId}`,
  policy: SESSION_POLICY,
});

/** The wait after the `failures`-th failure in a row. */
export function waitAfter(failures: number, policy: LoginPolicy): number {
  if (failures <= policy.free) return 0;
  return Math.min(policy.maxWaitMs, 1000 * 2 ** Math.min(30, failures - policy.free - 1));
}

export interface LoginSubject {
  key: string;
  policy: LoginPolicy;
}

/** What a subject holds against an attempt now. */
export interface Standing {
  failures: number;
  waitMs: number;
}

/** A subject's standing from its failures and the end of its wait, as RESERVE judges: within the free failures there is no wait. */
export const standingOf = (failures: number, until: number, policy: LoginPolicy, now: number): Standing => ({
  failures,
  waitMs: failures > policy.free ? Math.max(0, until - now) : 0,
});

/** Reserved (with the failures the subject had before this one), or the wait left. */
export type Reservation = { ok: true; earlier: number } | { ok: false; waitMs: number };

/** Port: failure counts and waits, shared by every gateway (data/login-attempts.store.ts). */
export interface LoginAttempts {
  /**
   * Counts an attempt against one subject as a failure, unless `enforce` and the subject is
   * waiting after earlier failures (then nothing is counted and the wait is returned). Without
   * `enforce` the attempt is counted whatever the wait. Atomic per subject.
   */
  reserve(subject: LoginSubject, now: number, enforce: boolean): Promise<Reservation>;
  /** Takes back one reservation that did not turn into a failure. */
  release(subject: LoginSubject): Promise<void>;
  /** The subject's failures and the wait an enforced attempt has left (0: none), counting nothing. */
  standing(subject: LoginSubject, now: number): Promise<Standing>;
  /** A success: the subject's failures are forgotten. */
  clear(subject: LoginSubject): Promise<void>;
}

/** Where an attempt comes from: the client's address, and the device id its cookie proves for this email. */
export interface LoginOrigin {
  ip: string;
  /** Verified for the email the attempt names (domain/device-cookies.ts); none: an unknown browser. */
  deviceId?: string;
}

const emailHash = (email: string) =>
  createHash('sha256').update(email.trim().toLowerCase()).digest('base64url');

/** The subjects an attempt counts against (emails hashed: no addresses in Redis keys). */
export function loginSubjects(
  email: string,
  origin: LoginOrigin,
): { device?: LoginSubject; pair: LoginSubject; email: LoginSubject; network: LoginSubject } {
  const hashed = emailHash(email);
  const network = clientGroup(origin.ip);
  return {
    ...(origin.deviceId ? { device: { key: `device:${origin.deviceId}`, policy: DEVICE_POLICY } } : {}),
    pair: { key: `pair:${network}|${hashed}`, policy: PAIR_POLICY },
    email: { key: `email:${hashed}`, policy: EMAIL_POLICY },
    network: { key: `net:${network}`, policy: NETWORK_POLICY },
  };
}

/** A reserved attempt: what a success takes back, or the wait that refused it. */
export type LoginReservation = { ok: true; succeeded(): Promise<void> } | { ok: false; waitMs: number };

/**
 * Reserves one attempt by the rules above. An attempt a wait refuses counts nothing: the waits of
 * the subjects that judge it are read first, and the refusal names the longest, so a client that
 * waits it is not refused again by another subject (a reservation taken back leaves its
 * subject's wait where it stood before the attempt). Only an attempt that came in with no wait left
 * is reserved; if a concurrent one made a subject refuse meanwhile, the reservations already
 * made are taken back and the refusal again names the longest wait.
 */
export async function reserveLogin(
  attempts: LoginAttempts,
  email: string,
  origin: LoginOrigin,
  now: number,
): Promise<LoginReservation> {
  const subjects = loginSubjects(email, origin);
  if (subjects.device) {
    const device = subjects.device;
    const r = await attempts.reserve(device, now, true);
    return r.ok ? { ok: true, succeeded: () => attempts.clear(device) } : r;
  }
  const [pairNow, emailNow, networkNow] = await Promise.all([
    attempts.standing(subjects.pair, now),
    attempts.standing(subjects.email, now),
    attempts.standing(subjects.network, now),
  ]);
  // The pair always judges; the email and the network once the pair has failed before.
  const judging = pairNow.failures > 0 ? [pairNow, emailNow, networkNow] : [pairNow];
  const waitMs = Math.max(...judging.map((j) => j.waitMs));
  if (waitMs > 0) return { ok: false, waitMs };
  const pair = await attempts.reserve(subjects.pair, now, true);
  if (!pair.ok) return longestWait(attempts, pair.waitMs, [subjects.email, subjects.network], now);
  // A network that has not failed for this email is judged by the pair alone (still counted in
  // the others, so a guesser that keeps at it from here waits for them next time).
  const enforce = pair.earlier > 0;
  const made: LoginSubject[] = [subjects.pair];
  const judgedAfterPair = [subjects.email, subjects.network];
  for (const [i, s] of judgedAfterPair.entries()) {
    const r = await attempts.reserve(s, now, enforce);
    if (!r.ok) {
      await Promise.all(made.map((m) => attempts.release(m)));
      return longestWait(attempts, r.waitMs, judgedAfterPair.slice(i + 1), now);
    }
    made.push(s);
  }
  return {
    ok: true,
    succeeded: async () => {
      await Promise.all([
        attempts.clear(subjects.pair),
        attempts.release(subjects.email),
        attempts.release(subjects.network),
      ]);
    },
  };
}

/** A refusal with the longest of `waitMs` and the waits the other judging subjects have left. */
async function longestWait(
  attempts: LoginAttempts,
  waitMs: number,
  others: readonly LoginSubject[],
  now: number,
): Promise<{ ok: false; waitMs: number }> {
  const standings = await Promise.all(others.map((s) => attempts.standing(s, now)));
  return { ok: false, waitMs: Math.max(waitMs, ...standings.map((s) => s.waitMs)) };
}

/**
 * The same rules in this process only, for when the shared store does not respond: logins stay
 * throttled (per instance) instead of failing or running unthrottled.
 */
export class LocalLoginAttempts implements LoginAttempts {
  /** `prev`: the `until` before the last reservation (a release never waits past it). */
  private readonly state = new Map<string, { failures: number; until: number; last: number; prev: number }>();

  async reserve(s: LoginSubject, now: number, enforce: boolean): Promise<Reservation> {
    const current = this.current(s, now);
    // Within the free failures there is no wait, whatever `until` a concurrent attempt stamped.
    if (enforce && current && current.failures > s.policy.free && current.until > now)
      return { ok: false, waitMs: current.until - now };
    const earlier = current?.failures ?? 0;
    const failures = earlier + 1;
    if (this.state.size >= 100_000) this.state.clear();
    this.state.set(s.key, {
      failures,
      until: now + waitAfter(failures, s.policy),
      last: now,
      prev: current?.until ?? 0,
    });
    return { ok: true, earlier };
  }

  async release(s: LoginSubject): Promise<void> {
    const e = this.state.get(s.key);
    if (!e) return;
    if (e.failures <= 1) this.state.delete(s.key);
    else
      this.state.set(s.key, {
        ...e,
        failures: e.failures - 1,
        until: Math.min(e.prev, e.last + waitAfter(e.failures - 1, s.policy)),
      });
  }

  async clear(s: LoginSubject): Promise<void> {
    this.state.delete(s.key);
  }

  async standing(s: LoginSubject, now: number): Promise<Standing> {
    const current = this.current(s, now);
    return standingOf(current?.failures ?? 0, current?.until ?? 0, s.policy, now);
  }

  private current(s: LoginSubject, now: number) {
    const e = this.state.get(s.key);
    return e && now - e.last < s.policy.memoryMs ? e : undefined;
  }
}

/** The shared store, or this process's while it is unreachable (the one failure policy). */
export class ResilientLoginAttempts implements LoginAttempts {
  constructor(
    private readonly shared: LoginAttempts,
    private readonly local = new LocalLoginAttempts(),
  ) {}

  reserve(subject: LoginSubject, now: number, enforce: boolean): Promise<Reservation> {
    return this.shared.reserve(subject, now, enforce).catch(() => this.local.reserve(subject, now, enforce));
  }

  release(subject: LoginSubject): Promise<void> {
    return this.shared.release(subject).catch(() => this.local.release(subject));
  }

  clear(subject: LoginSubject): Promise<void> {
    return this.shared.clear(subject).catch(() => this.local.clear(subject));
  }

  standing(subject: LoginSubject, now: number): Promise<Standing> {
    return this.shared.standing(subject, now).catch(() => this.local.standing(subject, now));
  }
}
