import { createHash } from 'node:crypto';
import { clientGroup } from './throttle';

/**
 * Password guessing, slowed per email and per client network: a few failures are free, then
 * each further failure makes the next attempt wait twice as long (1 s, 2 s, 4 s … up to 15 min).
 * An attempt during the wait is refused without looking at the password (no oracle, no scrypt
 * work); a success clears the email's count. Counts fade an hour after the last failure.
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

/** Port: failure counts and waits, shared by every gateway (data/login-attempts.store.ts). */
export interface LoginAttempts {
  /** Milliseconds until the next attempt of any of these subjects may run (0: now). */
  waitMs(subjects: LoginSubject[], now: number): Promise<number>;
  failed(subjects: LoginSubject[], now: number): Promise<void>;
  succeeded(subject: LoginSubject): Promise<void>;
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
 * The same rules in this process only, for when the shared store does not answer: logins stay
 * throttled (per instance) instead of failing or running unthrottled.
 */
export class LocalLoginAttempts implements LoginAttempts {
  private readonly state = new Map<string, { failures: number; until: number; last: number }>();

  async waitMs(subjects: LoginSubject[], now: number): Promise<number> {
    return Math.max(0, ...subjects.map((s) => (this.current(s, now)?.until ?? 0) - now));
  }

  async failed(subjects: LoginSubject[], now: number): Promise<void> {
    for (const s of subjects) {
      const failures = (this.current(s, now)?.failures ?? 0) + 1;
      if (this.state.size >= 100_000) this.state.clear();
      this.state.set(s.key, { failures, until: now + waitAfter(failures, s.policy), last: now });
    }
  }

  async succeeded(subject: LoginSubject): Promise<void> {
    this.state.delete(subject.key);
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

  waitMs(subjects: LoginSubject[], now: number): Promise<number> {
    return this.shared.waitMs(subjects, now).catch(() => this.local.waitMs(subjects, now));
  }

  failed(subjects: LoginSubject[], now: number): Promise<void> {
    return this.shared.failed(subjects, now).catch(() => this.local.failed(subjects, now));
  }

  succeeded(subject: LoginSubject): Promise<void> {
    return this.shared.succeeded(subject).catch(() => this.local.succeeded(subject));
  }
}
