/**
 * Live streams (GET /v1/signals/stream) open through this gateway process: each holds a slot of
 * its account's cap (shared by every gateway, in Redis), and ends within a second of its key
 * being revoked or expiring, of its session ending, or of the gateway shutting down.
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

/** Port: which of these dashboard sessions have ended (sessions/data/session-revocations.store.ts). */
export interface EndedSessions {
  endedAmong(sessions: ReadonlyArray<StreamSession>, now: number): Promise<boolean[]>;
}

/** The dashboard session a stream was opened with. */
export interface StreamSession {
  accountId: string;
  sessionId: string;
  /** Unix ms (a password change ends the sessions issued before it). */
  issuedAt: number;
}

export type StreamEnd = 'revoked' | 'session-ended' | 'expired' | 'shutdown';

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

/** How often open streams are checked against revocation and expiry (the 1 s promise). */
export const CHECK_EVERY_MS = 500;
/** How often slots are kept (they lapse after SLOT_TTL_MS: a gateway that died frees its own). */
export const KEEP_EVERY_MS = 10_000;
export const SLOT_TTL_MS = 30_000;

export class OpenStreams {
  private readonly open = new Map<string, OpenStream>();
  private checking = false;
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
      for (const s of this.open.values()) if (s.expiresAt !== null && s.expiresAt <= now) s.stop('expired');
      // One look-up per key, however many streams it has open (a client fanning one key out to
      // thousands of streams is the common case, and this runs twice a second).
      const byKey = new Map<string, { accountId: string; keyId: string }>();
      for (const s of this.open.values())
        if (s.keyId !== undefined && !byKey.has(`${s.accountId} ${s.keyId}`))
          byKey.set(`${s.accountId} ${s.keyId}`, { accountId: s.accountId, keyId: s.keyId });
      if (byKey.size > 0) {
        const keys = [...byKey.values()];
        const states = await this.revocations.statesAmong(keys);
        const stateOf = new Map(keys.map((k, i) => [`${k.accountId} ${k.keyId}`, states[i]]));
        for (const s of [...this.open.values()]) {
          const state = s.keyId !== undefined ? stateOf.get(`${s.accountId} ${s.keyId}`) : undefined;
          if (state?.revoked) s.stop('revoked');
          else if (state?.endsAt != null && (s.expiresAt === null || state.endsAt < s.expiresAt)) {
            s.expiresAt = state.endsAt;
            if (state.endsAt <= now) s.stop('expired');
          }
        }
      }
      const bySession = [...this.open.values()].filter(
        (s): s is OpenStream & { session: { sessionId: string; issuedAt: number } } =>
          s.session !== undefined,
      );
      if (bySession.length > 0 && this.sessions) {
        const ended = await this.sessions.endedAmong(
          bySession.map((s) => ({ accountId: s.accountId, ...s.session })),
          now,
        );
        bySession.forEach((s, i) => {
          if (ended[i]) s.stop('session-ended');
        });
      }
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
