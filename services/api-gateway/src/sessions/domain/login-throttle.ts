import { createHash } from 'node:crypto';
import { clientGroup } from '../../edge/domain/throttle';

/**
 * Password guessing, slowed per email and per client network: a few failures are free, then
 * each further failure makes the next attempt wait twice as long (1 s, 2 s, 4 s … up to 15 min).
 * An attempt is counted as a failure before its password is checked (reserved atomically), so
 * concurrent guesses see each other: no more attempts are ever in flight than the policy lets
 * through one at a time. An attempt during the wait is refused without looking at the password
 * (no oracle, no scrypt work); a success takes its reservation back and clears the email's
 * count. Counts fade an hour after the last failure.
 */
export interface LoginPolicy {
  /** Failures allowed before any wait. */
  free: number;
  maxWaitMs: number;
  /** How long failures are remembered after the last one. */
  memoryMs: number;
}

export const EMAIL_POLICY: LoginPolicy = { free: 5, maxWaitMs: 15 * 60_000, memoryMs: 3_600_000 };
/** A network (an IPv4 address, an IPv6 /64) may hold many people: more failures before waits. */
export const NETWORK_POLICY: LoginPolicy = { free: 20, maxWaitMs: 15 * 60_000, memoryMs: 3_600_000 };

/** The wait after the `failures`-th failure in a row. */
export function waitAfter(failures: number, policy: LoginPolicy): number {
  if (failures <= policy.free) return 0;
  return Math.min(policy.maxWaitMs, 1000 * 2 ** Math.min(30, failures - policy.free - 1));
}

export interface LoginSubject {
  key: string;
  policy: LoginPolicy;
}

export type Reservation = { ok: true } | { ok: false; waitMs: number };

/** Port: failure counts and waits, shared by every gateway (data/login-attempts.store.ts). */
export interface LoginAttempts {
  /**
   * Counts an attempt against one subject as a failure, unless the subject is waiting after
   * earlier failures (then nothing is counted and the wait is returned). Atomic per subject.
   */
  reserve(subject: LoginSubject, now: number): Promise<Reservation>;
  /** Takes back one reservation that did not turn into a failure. */
  release(subject: LoginSubject): Promise<void>;
  /** A success: the subject's failures are forgotten. */
  clear(subject: LoginSubject): Promise<void>;
}

/**
 * Reserves an attempt against every subject, or none: a subject that refuses undoes the
 * reservations already made for the others.
 */
export async function reserveAll(
  attempts: LoginAttempts,
  subjects: LoginSubject[],
  now: number,
): Promise<Reservation> {
  const made: LoginSubject[] = [];
  for (const s of subjects) {
    const r = await attempts.reserve(s, now);
    if (!r.ok) {
      await Promise.all(made.map((m) => attempts.release(m)));
      return r;
    }
    made.push(s);
  }
  return { ok: true };
}

/** The subjects an attempt counts against: the email (hashed: no addresses in Redis keys) and the network. */
export function loginSubjects(email: string, ip: string): { email: LoginSubject; network: LoginSubject } {
  const hashed = createHash('sha256').update(email.trim().toLowerCase()).digest('base64url');
  return {
    email: { key: `email:${hashed}`, policy: EMAIL_POLICY },
    network: { key: `net:${clientGroup(ip)}`, policy: NETWORK_POLICY },
  };
}

/**
 * The same rules in this process only, for when the shared store does not respond: logins stay
 * throttled (per instance) instead of failing or running unthrottled.
 */
export class LocalLoginAttempts implements LoginAttempts {
  private readonly state = new Map<string, { failures: number; until: number; last: number }>();

  async reserve(s: LoginSubject, now: number): Promise<Reservation> {
    const current = this.current(s, now);
    if (current && current.until > now) return { ok: false, waitMs: current.until - now };
    const failures = (current?.failures ?? 0) + 1;
    if (this.state.size >= 100_000) this.state.clear();
    this.state.set(s.key, { failures, until: now + waitAfter(failures, s.policy), last: now });
    return { ok: true };
  }

  async release(s: LoginSubject): Promise<void> {
    const e = this.state.get(s.key);
    if (!e) return;
    if (e.failures <= 1) this.state.delete(s.key);
    else
      this.state.set(s.key, {
        ...e,
        failures: e.failures - 1,
        until: e.last + waitAfter(e.failures - 1, s.policy),
      });
  }

  async clear(s: LoginSubject): Promise<void> {
    this.state.delete(s.key);
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

  reserve(subject: LoginSubject, now: number): Promise<Reservation> {
    return this.shared.reserve(subject, now).catch(() => this.local.reserve(subject, now));
  }

  release(subject: LoginSubject): Promise<void> {
    return this.shared.release(subject).catch(() => this.local.release(subject));
  }

  clear(subject: LoginSubject): Promise<void> {
    return this.shared.clear(subject).catch(() => this.local.clear(subject));
  }
}
