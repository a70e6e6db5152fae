/**
 * Live streams (GET /v1/signals/stream) open through this gateway process: each holds a slot of
 * its account's cap (shared by every gateway, in Redis), and ends when its key is revoked or
 * expires, its session ends, or the gateway shuts down. A revocation or a session's end is
 * announced to every gateway (`CredentialChanges`), which checks that account's streams at once:
 * an event published after the revoking request was answered does not reach its streams. The
 * periodic check is what catches an expiry and a notice lost while Redis was away.
 */

/** Port: the account's stream slots, shared by every gateway (data/stream-slots.store.ts). */
export interface StreamSlots {
  /** Takes a slot unless `max` are taken (then how many are). A slot lapses unless renewed. */
  acquire(
    accountId: string,
    streamId: string,
    max: number,
    now: number,
  ): Promise<{ ok: true } | { ok: false; open: number }>;
  /** Keeps these slots from lapsing (a gateway that died stops renewing its own). */
  renew(slots: ReadonlyArray<{ accountId: string; streamId: string }>, now: number): Promise<void>;
  /** Frees a slot at once: its stream ended. */
  release(accountId: string, streamId: string): Promise<void>;
}

/** What the shared store says of a key now: revoked, and the end a roll gave it (none: no roll). */
export interface KeyState {
  revoked: boolean;
  /** Unix ms: a roll with an overlap ends the old key then. */
  endsAt: number | null;
}

/** Port: the state of these keys now (data/rate-limit.store.ts). */
export interface Revocations {
  statesAmong(keys: ReadonlyArray<{ accountId: string; keyId: string }>): Promise<KeyState[]>;
}

/**
 * How a dashboard session stands: `ended` (a logout, a password change), `renewed` (a renewal
 * replaced it: its user is still signed in with the successor), or undefined while it holds.
 */
export type SessionEnding = 'ended' | 'renewed' | undefined;

/** Port: which of these dashboard sessions have ended (sessions/data/session-revocations.store.ts). */
export interface EndedSessions {
  endedAmong(sessions: ReadonlyArray<StreamSession>, now: number): Promise<SessionEnding[]>;
}

/**
 * Port: the word every gateway process gets when an account's key is revoked or rolled, or one
 * of its sessions ends (data/credential-changes.ts). Best effort: the periodic check is the floor.
 */
export interface CredentialChanges {
  /** Tells every gateway that this account's credentials changed. */
  announce(accountId: string): Promise<void>;
  /** Calls `onChange` with each account announced, and once with none after a lost connection. */
  listen(onChange: (accountId: string | undefined) => void): Promise<{ close(): Promise<void> }>;
}

/**
 * Announces a change whose write is made: a notice that does not go out (Redis away) leaves the
 * periodic check to apply it, so it fails nothing.
 */
export async function announceChange(
  changes: Pick<CredentialChanges, 'announce'> | undefined,
  accountId: string,
): Promise<void> {
  await changes?.announce(accountId).catch(() => undefined);
}

/** The dashboard session a stream was opened with. */
export interface StreamSession {
  accountId: string;
  sessionId: string;
  /** Unix ms (a password change ends the sessions issued before it). */
  issuedAt: number;
}

export type StreamEnd = 'revoked' | 'session-ended' | 'session-renewed' | 'expired' | 'shutdown';

export interface OpenStream {
  accountId: string;
  /** The API key it was opened with (none: a dashboard session). */
  keyId?: string;
  /** The dashboard session it was opened with (none: an API key). */
  session?: { sessionId: string; issuedAt: number };
  /**
   * When its credential stops being valid (Unix ms), if it does: brought forward when its key is
   * rolled while the stream is open.
   */
  expiresAt: number | null;
  /** Ends the stream, telling the client why. */
  stop(reason: StreamEnd): void;
}

/** How often open streams are checked against expiry, and revocations whose notice was lost. */
export const CHECK_EVERY_MS = 500;
/** How often slots are kept (they lapse after SLOT_TTL_MS: a gateway that died frees its own). */
export const KEEP_EVERY_MS = 10_000;
export const SLOT_TTL_MS = 30_000;

export class OpenStreams {
  private readonly open = new Map<string, OpenStream>();
  private checking = false;
  /** Accounts announced since their streams were last looked at (see `credentialsChanged`). */
  private readonly changed = new Set<string>();
  private checkingChanged = false;
  private lastKept = 0;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly slots: StreamSlots,
    private readonly revocations: Revocations,
    private readonly sessions?: EndedSessions,
    /** How often `check` runs on its own (0: only when called, as a test drives it). */
    private readonly checkEveryMs = CHECK_EVERY_MS,
  ) {}

  /** Admits a stream if its account has a free slot; false: all `max` are taken (with how many). */
  async admit(streamId: string, stream: OpenStream, max: number, now = Date.now()) {
    const taken = await this.slots.acquire(stream.accountId, streamId, max, now);
    if (!taken.ok) return taken;
    this.open.set(streamId, stream);
    this.ensureTimer();
    return taken;
  }

  /** The stream ended (any way): its slot is free at once. */
  async closed(streamId: string): Promise<void> {
    const stream = this.open.get(streamId);
    if (!stream) return;
    this.open.delete(streamId);
    if (this.open.size === 0) this.stopTimer();
    await this.slots.release(stream.accountId, streamId).catch(() => undefined);
  }

  /**
   * Ends every stream whose key was revoked, whose session ended (logout, password change,
   * revocation, renewal's retirement) or whose credential expired, a rolled key's overlap
   * included (the roll's end is read with the revocation); keeps slots alive.
   */
  async check(now = Date.now()): Promise<void> {
    if (this.checking) return;
    this.checking = true;
    try {
      await this.endInvalid([...this.open.values()], now);
      if (now - this.lastKept >= KEEP_EVERY_MS && this.open.size > 0) {
        this.lastKept = now;
        await this.slots.renew(
          [...this.open.entries()].map(([streamId, s]) => ({ accountId: s.accountId, streamId })),
          now,
        );
      }
    } catch {
      // Redis away: the next check tries again; a revocation is applied once it responds.
    } finally {
      this.checking = false;
    }
  }

  /**
   * An account's key was revoked or rolled, or one of its sessions ended (`CredentialChanges`):
   * its streams here are checked now rather than at the next tick. Announcements that arrive
   * during a check are checked together right after it; `undefined` (notices may have been lost)
   * checks every stream.
   */
  credentialsChanged(accountId: string | undefined): void {
    if (accountId === undefined) {
      void this.check();
      return;
    }
    this.changed.add(accountId);
    if (this.checkingChanged) return;
    this.checkingChanged = true;
    void (async () => {
      try {
        while (this.changed.size > 0) {
          const accounts = new Set(this.changed);
          this.changed.clear();
          const streams = [...this.open.values()].filter((s) => accounts.has(s.accountId));
          // Redis away: the periodic check applies the change once it responds.
          if (streams.length > 0) await this.endInvalid(streams, Date.now()).catch(() => undefined);
        }
      } finally {
        this.checkingChanged = false;
      }
    })();
  }

  /**
   * Ends those of `streams` whose credential expired, whose key was revoked or rolled to an end
   * that has passed, or whose session ended.
   */
  private async endInvalid(streams: OpenStream[], now: number): Promise<void> {
    for (const s of streams) if (s.expiresAt !== null && s.expiresAt <= now) s.stop('expired');
    // One look-up per key, however many streams it has open (a client fanning one key out to
    // thousands of streams is the common case, and this runs twice a second).
    const byKey = new Map<string, { accountId: string; keyId: string }>();
    for (const s of streams)
      if (s.keyId !== undefined && !byKey.has(`${s.accountId} ${s.keyId}`))
        byKey.set(`${s.accountId} ${s.keyId}`, { accountId: s.accountId, keyId: s.keyId });
    if (byKey.size > 0) {
      const keys = [...byKey.values()];
      const states = await this.revocations.statesAmong(keys);
      const stateOf = new Map(keys.map((k, i) => [`${k.accountId} ${k.keyId}`, states[i]]));
      for (const s of streams) {
        const state = s.keyId !== undefined ? stateOf.get(`${s.accountId} ${s.keyId}`) : undefined;
        if (state?.revoked) s.stop('revoked');
        else if (state?.endsAt != null && (s.expiresAt === null || state.endsAt < s.expiresAt)) {
          s.expiresAt = state.endsAt;
          if (state.endsAt <= now) s.stop('expired');
        }
      }
    }
    const bySession = streams.filter(
      (s): s is OpenStream & { session: { sessionId: string; issuedAt: number } } => s.session !== undefined,
    );
    if (bySession.length > 0 && this.sessions) {
      const ended = await this.sessions.endedAmong(
        bySession.map((s) => ({ accountId: s.accountId, ...s.session })),
        now,
      );
      bySession.forEach((s, i) => {
        if (ended[i] === 'ended') s.stop('session-ended');
        else if (ended[i] === 'renewed') s.stop('session-renewed');
      });
    }
  }

  /** Shutdown: every stream ends with a word to reconnect (to another gateway). */
  endAll(): void {
    for (const s of this.open.values()) s.stop('shutdown');
    this.stopTimer();
  }

  private ensureTimer(): void {
    if (this.timer || this.checkEveryMs <= 0) return;
    this.timer = setInterval(() => void this.check(), this.checkEveryMs);
    this.timer.unref();
  }

  private stopTimer(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }
}
