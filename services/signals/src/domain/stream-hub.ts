import {
  HEARTBEAT,
  OVERFLOW_EVENT,
  RECONNECT_EVENT,
  compareEntryIds,
  matches,
  overflows,
  type StreamFilter,
} from '@signal/contracts';
import { metrics, type Logger } from '@signal/service-kit';
import { entryEvent, type ReadEntry } from './live-stream';

/** The client's end of one stream, as the hub writes to it (an HTTP response). */
export interface StreamSink {
  write(chunk: string | Buffer): void;
  /** Output written but not yet taken by the client's connection. */
  readonly bufferedBytes: number;
  readonly closed: boolean;
  /** Writes `last` and ends the response; `closeConnection` closes the connection after it. */
  end(last: string | Buffer, closeConnection?: boolean): void;
  /** Resolves true once the buffered output drained; false if the client went away or `timeoutMs` passed first. */
  drained(timeoutMs: number): Promise<boolean>;
  onClose(listener: () => void): void;
}

interface OpenStream {
  sink: StreamSink;
  filter: StreamFilter;
  /** Entries up to this id were sent by the replay; cleared at the first later one. */
  after: string | undefined;
}

export type EndReason = 'client' | 'overflow' | 'shutdown';

/** One buffer written to every stream at each beat. */
const HEARTBEAT_FRAME = Buffer.from(HEARTBEAT);

export interface StreamHubOptions {
  maxBufferedBytes: number;
  heartbeatMs: number;
  logger: Logger;
}

/**
 * The open streams of this process, fed by its one tail of the event log: each entry is encoded
 * once and written to every stream whose filter matches it. A stream whose client does not take
 * its output gets `overflow` and ends once the unsent output passes the bound (see `deliver`).
 */
export class StreamHub {
  private readonly streams = new Set<OpenStream>();
  private heartbeat?: NodeJS.Timeout;
  /** The last entry id the tail handed over (undefined until the tail knows where the log ends). */
  private tailPosition: string | undefined;
  private closing = false;

  constructor(private readonly options: StreamHubOptions) {}

  get openCount(): number {
    return this.streams.size;
  }

  /** The tail's position: streams joining live are sent every entry after it. */
  get position(): string | undefined {
    return this.tailPosition;
  }

  /** Set once shutdown began: no new stream opens. */
  get isClosing(): boolean {
    return this.closing;
  }

  get maxBufferedBytes(): number {
    return this.options.maxBufferedBytes;
  }

  start(): void {
    this.heartbeat = setInterval(() => this.beat(), this.options.heartbeatMs);
    this.heartbeat.unref();
  }

  /** Where the tail starts (the log's last entry when it first reached it). */
  startAt(position: string): void {
    this.tailPosition ??= position;
  }

  /**
   * Entries the tail read, in log order. A stream still holding more than the bound from before
   * (its client had the time since the last batch or heartbeat to take it) ends first; within
   * the batch nothing is checked, since a socket gets to send only between batches and a healthy
   * client would otherwise be cut by a burst. So a stream holds at most the bound plus a batch.
   */
  deliver(entries: readonly ReadEntry[]): void {
    this.endOverflowing();
    for (const { id, entry } of entries) {
      this.tailPosition = id;
      if (!entry) continue;
      let frame: Buffer | undefined;
      let sent = 0;
      for (const stream of this.streams) {
        if (stream.after !== undefined) {
          if (compareEntryIds(id, stream.after) <= 0) continue;
          stream.after = undefined;
        }
        if (!matches(stream.filter, entry)) continue;
        frame ??= Buffer.from(entryEvent(entry));
        stream.sink.write(frame);
        sent += 1;
      }
      // One metric update per entry, not one per stream (the label lookup costs per call).
      if (sent > 0) metrics.streamEventsSent().inc({ event: entry.event }, sent);
    }
  }

  /**
   * Adds a stream to the live fan-out: it is sent every entry the tail hands over from now on
   * that comes after `after`. Synchronous, so no entry can be handed over between a caller's
   * check of `position` and the join.
   */
  join(sink: StreamSink, filter: StreamFilter, after: string | undefined): void {
    const stream: OpenStream = { sink, filter, after };
    this.streams.add(stream);
    metrics.streamsOpen().set(this.streams.size);
    sink.onClose(() => {
      if (this.remove(stream)) metrics.streamsEnded().inc({ reason: 'client' });
    });
  }

  /**
   * Ends every open stream with `reconnect` and refuses new ones (shutdown). The connections close
   * once their last event is out; the HTTP server's close waits for that.
   */
  endAll(): void {
    this.closing = true;
    clearInterval(this.heartbeat);
    for (const stream of [...this.streams]) this.end(stream, RECONNECT_EVENT, 'shutdown', true);
  }

  stop(): void {
    clearInterval(this.heartbeat);
  }

  private beat(): void {
    this.endOverflowing();
    for (const stream of this.streams) stream.sink.write(HEARTBEAT_FRAME);
  }

  /** Ends with `overflow` every stream whose client has not taken what it holds past the bound. */
  private endOverflowing(): void {
    for (const stream of this.streams) {
      if (!overflows(stream.sink.bufferedBytes, this.options.maxBufferedBytes)) continue;
      this.options.logger.info(
        { buffered: stream.sink.bufferedBytes },
        'live stream ended: its client did not keep up',
      );
      this.end(stream, OVERFLOW_EVENT, 'overflow', true);
    }
  }

  private end(stream: OpenStream, last: string, reason: EndReason, closeConnection: boolean): void {
    if (!this.remove(stream)) return;
    metrics.streamsEnded().inc({ reason });
    stream.sink.end(last, closeConnection);
  }

  private remove(stream: OpenStream): boolean {
    const removed = this.streams.delete(stream);
    if (removed) metrics.streamsOpen().set(this.streams.size);
    return removed;
  }
}
