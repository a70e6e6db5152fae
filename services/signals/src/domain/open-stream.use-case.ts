import type { StreamResetReason } from '@signal/contracts';
import { fail, isRedisUnavailable, metrics, succeed, type Logger, type Result } from '@signal/service-kit';
import {
  OVERFLOW_EVENT,
  RECONNECT_EVENT,
  caughtUpEvent,
  compareEntryIds,
  isEntryId,
  matches,
  overflows,
  resetEvent,
  type StreamFilter,
} from '@signal/contracts';
import { entryEvent, notHeldReason, type ReadEntry } from './live-stream';
import type { StreamHub, StreamSink } from './stream-hub';

/** The event log as a stream reads it. */
export interface StreamLog {
  after(id: string, count: number): Promise<ReadEntry[]>;
  holds(id: string): Promise<boolean>;
  first(): Promise<string | undefined>;
  last(): Promise<string | undefined>;
}

export interface StreamDeps {
  log: StreamLog;
  hub: StreamHub;
  retentionMs: number;
  logger: Logger;
}

/** Where a stream starts. */
export type StreamStart =
  | { kind: 'live' }
  | { kind: 'resume'; after: string }
  /** `from`: the log's last entry when the stream opened (undefined: the log was empty). */
  | { kind: 'reset'; reason: StreamResetReason; from: string | undefined };

/** Entries read per XRANGE while replaying. */
const REPLAY_PAGE = 200;

/**
 * How long a replay waits for its client to take what it was sent before the stream ends as
 * overflow, and how long an ended stream's connection is kept for its last bytes.
 */
export const STALLED_STREAM_MS = 30_000;

const UNAVAILABLE = fail('SERVICE_UNAVAILABLE', 'The live stream is unavailable right now. Retry shortly.');

/**
 * Before anything is sent, decide where the stream starts from the client's
 * Last-Event-ID (see `notHeldReason`). Refused while shutting down, or while the event log is
 * unreachable (this process's tail has not found the log's end yet, or a read fails).
 */
export async function planStream(
  deps: StreamDeps,
  lastEventId: string | undefined,
): Promise<Result<StreamStart, 'SERVICE_UNAVAILABLE'>> {
  if (deps.hub.isClosing) return fail('SERVICE_UNAVAILABLE', 'The server is shutting down. Retry shortly.');
  if (deps.hub.position === undefined) return UNAVAILABLE;
  if (lastEventId === undefined) return succeed({ kind: 'live' });
  try {
    if (!isEntryId(lastEventId))
      return succeed({ kind: 'reset', reason: 'malformed', from: await deps.log.last() });
    if (await deps.log.holds(lastEventId)) return succeed({ kind: 'resume', after: lastEventId });
    const [first, last] = await Promise.all([deps.log.first(), deps.log.last()]);
    const reason = notHeldReason(lastEventId, { first, now: Date.now(), retentionMs: deps.retentionMs });
    return succeed({ kind: 'reset', reason, from: last });
  } catch (err) {
    if (isRedisUnavailable(err)) return UNAVAILABLE;
    throw err;
  }
}

/**
 * A stream that resumes (or was reset) is sent what the log holds after its position,
 * page by page at the client's pace, then joins the live fan-out. The join happens only once
 * the replay has reached the tail's position, synchronously with that check, so no entry falls
 * between replay and live and none is sent twice (the hub skips what the replay sent). A stream
 * that loses the log midway ends with `reconnect`: its client resumes where it stopped.
 */
export async function runStream(
  deps: StreamDeps,
  sink: StreamSink,
  filter: StreamFilter,
  start: StreamStart,
  /** The gateway's catch-up: end at the tail with `caught-up` (its id) instead of going on live. */
  untilLive = false,
): Promise<void> {
  const goLive = (after: string | undefined) => {
    if (!untilLive) deps.hub.join(sink, filter, after);
    else sink.end(caughtUpEvent(after ?? deps.hub.position ?? '0-0'));
  };
  if (start.kind === 'live') {
    goLive(undefined);
    return;
  }
  if (start.kind === 'reset') sink.write(resetEvent(start.reason, start.from));
  let after = start.kind === 'resume' ? start.after : (start.from ?? '0-0');
  try {
    for (;;) {
      const page = await deps.log.after(after, REPLAY_PAGE);
      if (sink.closed) return;
      for (const { id, entry } of page) {
        after = id;
        if (!entry || !matches(filter, entry)) continue;
        sink.write(entryEvent(entry));
        metrics.streamEventsSent().inc({ event: entry.event });
      }
      if (page.length === REPLAY_PAGE) {
        // The replay goes at the client's pace; a client that takes nothing gets `overflow`.
        if (
          overflows(sink.bufferedBytes, deps.hub.maxBufferedBytes) &&
          !(await sink.drained(STALLED_STREAM_MS))
        ) {
          if (!sink.closed) sink.end(OVERFLOW_EVENT, true);
          return;
        }
        continue;
      }
      const position = deps.hub.position;
      if (deps.hub.isClosing) {
        sink.end(RECONNECT_EVENT, true);
        return;
      }
      if (position === undefined || compareEntryIds(position, after) <= 0) {
        goLive(after);
        return;
      }
    }
  } catch (err) {
    deps.logger.warn({ err: err instanceof Error ? err.message : String(err) }, 'live stream replay failed');
    sink.end(RECONNECT_EVENT, false);
  }
}
