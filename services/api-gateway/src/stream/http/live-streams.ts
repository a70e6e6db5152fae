import { randomUUID } from 'node:crypto';
import {
  KEY_EXPIRED_EVENT,
  KEY_REVOKED_EVENT,
  RECONNECT_EVENT,
  ROUTES,
  SESSION_ENDED_EVENT,
  SESSION_RENEWED_EVENT,
  SIGNAL_STREAM_PATH,
  streamFilter,
  type StreamFilter,
} from '@signal/contracts';
import { parseOrThrow, queryParameters } from '@signal/service-kit';
import type { OpenStream, OpenStreams, StreamEnd } from '../domain/open-streams';
import type { ServedStream, StreamControl, StreamEndListener } from './fan-out';

/**
 * The live stream's path as a GET of it is recognised: the contract's path, a trailing slash
 * allowed, in any case (as Express matches it).
 */
export const STREAM_ROUTE = new RegExp(
  `^${SIGNAL_STREAM_PATH.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}/?$`,
  'i',
);

/** The last event of a stream the gateway ends, by why it ends it. */
const LAST_EVENT: Record<StreamEnd, string> = {
  revoked: KEY_REVOKED_EVENT,
  'session-ended': SESSION_ENDED_EVENT,
  'session-renewed': SESSION_RENEWED_EVENT,
  expired: KEY_EXPIRED_EVENT,
  shutdown: RECONNECT_EVENT,
};

export type StreamAdmission =
  | LiveStream
  | { ok: false; code: 'RATE_LIMIT_EXCEEDED' | 'SERVICE_UNAVAILABLE'; message?: string; retryAfter: number };

/** Told what a live stream's client got, once the stream ended and its slot is free. */
export interface LiveStreamListener {
  liveStreamEnded(served: ServedStream): void;
}

/**
 * One admitted stream's state in one object: its slot in `OpenStreams`, the control the feed ends
 * it through, the admission handed to the caller, and who is told when it ends. Ten thousand
 * streams per process make each object, closure and promise per stream count: this is one
 * object, with no closure.
 */
export class LiveStream implements OpenStream, StreamControl, StreamEndListener {
  readonly ok = true;
  /** Set by the fan-out while it serves the stream. */
  client?: { stop(lastEvent?: string): void };
  /** Told once the stream ended, when the fan-out served it (see `streamEnded`). */
  listener: LiveStreamListener | undefined;

  constructor(
    private readonly streams: OpenStreams,
    private readonly streamId: string,
    readonly accountId: string,
    readonly keyId: string | undefined,
    readonly session: { sessionId: string; issuedAt: number } | undefined,
    /** Brought forward when its key is rolled while it is open (OpenStreams.check). */
    public expiresAt: number | null,
    readonly idleTimeoutMs: number,
  ) {}

  /** Hand to the feed: the gateway ends the stream through it. */
  get control(): StreamControl {
    return this;
  }

  stop(reason: StreamEnd): void {
    // A session's expiry is its end: log in again (no key to generate).
    const end = reason === 'expired' && this.keyId === undefined ? 'session-ended' : reason;
    this.client?.stop(LAST_EVENT[end]);
  }

  /** The stream ended (any way): its slot is free. */
  closed(): Promise<void> {
    return this.streams.closed(this.streamId);
  }

  /** The fan-out's word that the stream it served ended: the slot is freed, then the listener told. */
  streamEnded(served: ServedStream): void {
    void this.closed().then(() => this.listener?.liveStreamEnded(served));
  }
}

/**
 * A live stream of this owner (an API key, or a dashboard session with no key) takes a slot of
 * its account's cap, shared by every gateway; the key or session ending, or the gateway shutting
 * down, ends it with a last event. Without the shared store no slot can be counted: 503.
 */
export async function admitStream(
  streams: OpenStreams,
  owner: {
    accountId: string;
    keyId?: string;
    session?: { sessionId: string; issuedAt: number };
    expiresAt: number | null;
  },
  cap: number,
  idleTimeoutMs: number,
): Promise<StreamAdmission> {
  const streamId = randomUUID();
  const stream = new LiveStream(
    streams,
    streamId,
    owner.accountId,
    owner.keyId,
    owner.session,
    owner.expiresAt,
    idleTimeoutMs,
  );
  let admitted: Awaited<ReturnType<OpenStreams['admit']>>;
  try {
    admitted = await streams.admit(streamId, stream, cap);
  } catch {
    return { ok: false, code: 'SERVICE_UNAVAILABLE', retryAfter: 1 };
  }
  if (!admitted.ok)
    return {
      ok: false,
      code: 'RATE_LIMIT_EXCEEDED',
      message: `This account has ${admitted.open} live streams open, the most its plan allows (${cap}); close one first.`,
      retryAfter: 5,
    };
  return stream;
}

/**
 * How a stream is served, always from the gateway's shared feed with the client's filter applied
 * here: `live` from now, or `resume` (the client names a position: the service's log replays
 * from it first, see StreamFeed.serveResuming). The query is checked here with the
 * route's schema, parsed as the service parses it (Express's simple parser), so a bad one is the
 * service's own 400 (throws the AppError). Last-Event-ID as the service reads it: the header,
 * else `last_event_id`, blank meaning none.
 */
export function streamRequestOf(
  url: string,
  lastEventIdHeader: string | string[] | undefined,
): { kind: 'live' | 'resume'; filter: StreamFilter } {
  const q = url.indexOf('?');
  const query = parseOrThrow(
    ROUTES.streamSignals.query,
    queryParameters(q === -1 ? '' : url.slice(q + 1)),
    'query',
  );
  const header = typeof lastEventIdHeader === 'string' ? lastEventIdHeader.trim() : '';
  return {
    kind: header !== '' || (query.last_event_id ?? '').trim() !== '' ? 'resume' : 'live',
    filter: streamFilter(query),
  };
}
