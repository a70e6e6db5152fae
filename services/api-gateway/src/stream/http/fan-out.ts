import type { ServerResponse } from 'node:http';
import {
  HEARTBEAT,
  OVERFLOW_EVENT,
  STREAM_PREAMBLE,
  comesAfter,
  matches,
  overflows,
  signalTypeOf,
  sseEvent,
  type StreamFilter,
} from '@signal/contracts';
import type { Logger } from '@signal/service-kit';
import type { EventSourceMessage } from 'eventsource-parser';

/** How the gateway ends one client's stream (its key revoked, its session ended, a shutdown). */
export interface StreamControl {
  /** No bytes for this long (the service sends heartbeats well within it): the stream is dead. */
  idleTimeoutMs: number;
  /** Set by the fan-out: ends the stream now, with `lastEvent` first (it writes whole events). */
  end?: (lastEvent?: string) => void;
}

export type FeedOutcome = { ok: true; status: number; overflowed: boolean } | { ok: false };

export interface FeedClient {
  res: ServerResponse;
  filter: StreamFilter;
  /**
   * `live`: sent each event; `holding`: catching up, the feed's events its filter wants are held
   * (`held`) until it has; `overflowed`: more than the bound was held, it ends with `overflow`.
   */
  mode: 'live' | 'holding' | 'overflowed';
  held: Array<{ id: string | undefined; frame: Buffer }>;
  heldBytes: number;
  /**
   * Entries up to this id reached the client by its replay, which can read the log ahead of the
   * feed: the feed skips them, and clears this at its first later entry.
   */
  replayedUpTo: string | undefined;
  /** Ends the client's stream with `last`; `closeConnection` closes its connection after it. */
  end(last: string | undefined, closeConnection: boolean): void;
}

export interface FanOutOptions {
  /** How often clients are sent the heartbeat comment (the service's interval). */
  heartbeatMs: number;
  /** Output a client has not taken, past which it is sent `overflow` and ended. */
  maxBufferedBytes: number;
  logger: Logger;
}

/** How long an ended stream's connection may take to hand its client its last bytes before it is cut. */
const ENDED_STREAM_GRACE_MS = 30_000;

const HEARTBEAT_FRAME = Buffer.from(HEARTBEAT);
const OVERFLOW_FRAME = Buffer.from(OVERFLOW_EVENT);

/** The head of a stream response: the gateway's headers, then the stream's own. */
export function writeStreamHead(res: ServerResponse, headers: readonly string[]): void {
  res.writeHead(200, [
    ...headers,
    'Content-Type',
    'text/event-stream; charset=utf-8',
    'X-Accel-Buffering',
    'no',
  ]);
  res.write(STREAM_PREAMBLE);
}

/**
 * This process's client streams, fed by the one connection to the service (`UpstreamFeed`):
 * each event is encoded once and written to every client whose filter takes it; a client
 * catching up holds the events (up to the bound) until its replay is done; every client gets the
 * heartbeat, and one that leaves more than the bound unread gets `overflow` and ends.
 */
export class FanOut {
  private readonly clients = new Set<FeedClient>();
  private heartbeat: NodeJS.Timeout | undefined;

  constructor(private readonly options: FanOutOptions) {}

  get size(): number {
    return this.clients.size;
  }

  /** Is the client still among the fan-out's (its stream has not ended)? */
  has(client: FeedClient): boolean {
    return this.clients.has(client);
  }

  /** Starts the heartbeat (once). */
  start(): void {
    if (this.heartbeat) return;
    this.heartbeat = setInterval(() => this.beat(), this.options.heartbeatMs);
    this.heartbeat.unref();
  }

  /** Stops the heartbeat and ends every client's stream (the gateway shuts down). */
  close(): void {
    clearInterval(this.heartbeat);
    for (const client of [...this.clients]) client.end(undefined, false);
  }

  /** Adds a client; `ended` settles once its stream ended (any way). */
  attach(
    res: ServerResponse,
    filter: StreamFilter,
    control: StreamControl,
    holding: boolean,
  ): { client: FeedClient; ended: Promise<FeedOutcome> } {
    let overflowed = false;
    let done = false;
    let settle: (outcome: FeedOutcome) => void = () => undefined;
    const ended = new Promise<FeedOutcome>((resolve) => (settle = resolve));
    const finish = () => {
      if (done) return;
      done = true;
      this.clients.delete(client);
      settle({ ok: true, status: res.headersSent ? res.statusCode : 499, overflowed });
    };
    const client: FeedClient = {
      res,
      filter,
      mode: holding ? 'holding' : 'live',
      held: [],
      heldBytes: 0,
      replayedUpTo: undefined,
      end: (last, closeConnection) => {
        if (done) return;
        if (last === OVERFLOW_EVENT) overflowed = true;
        if (res.headersSent && !res.writableEnded && !res.destroyed) {
          const socket = res.socket;
          if (last !== undefined) res.write(last === OVERFLOW_EVENT ? OVERFLOW_FRAME : last);
          res.end(() => {
            if (closeConnection) socket?.end();
          });
          const cut = setTimeout(() => res.destroy(), ENDED_STREAM_GRACE_MS);
          cut.unref();
          res.once('close', () => clearTimeout(cut));
        }
        finish();
      },
    };
    control.end = (lastEvent) => {
      // Before the head is out (a catch-up still waiting for the service), the connection is cut.
      if (!res.headersSent) res.destroy();
      client.end(lastEvent, false);
    };
    res.once('close', finish);
    this.clients.add(client);
    return { client, ended };
  }

  /** One event of the service's stream, to every client that takes it. */
  deliver(message: EventSourceMessage): void {
    const event = message.event ?? 'message';
    const frame = Buffer.from(sseEvent({ id: message.id, event, data: message.data }));
    // A `reset` (the feed's position left the log) concerns every client, whatever it filters.
    const type = event === 'reset' ? undefined : signalTypeOf(message.data);
    for (const client of this.clients) {
      if (event !== 'reset' && !matches(client.filter, { event, type })) continue;
      if (client.mode === 'live') {
        if (client.replayedUpTo !== undefined && message.id !== undefined) {
          if (!comesAfter(message.id, client.replayedUpTo)) continue;
          client.replayedUpTo = undefined;
        }
        client.res.write(frame);
        continue;
      }
      if (client.mode === 'overflowed') continue;
      client.held.push({ id: message.id, frame });
      client.heldBytes += frame.length;
      if (overflows(client.heldBytes, this.options.maxBufferedBytes)) {
        // It cannot be held up longer: `overflow` once its head is out (its catch-up ends it).
        client.mode = 'overflowed';
        client.held = [];
        client.heldBytes = 0;
        if (client.res.headersSent) client.end(OVERFLOW_EVENT, true);
      }
    }
  }

  /**
   * A caught-up client goes live: the held events after `caughtUp` (the replay sent the rest) are
   * written, then the feed's from after that id. Called in one iteration of the event loop with
   * the deliveries, so none arrives in between.
   */
  goLive(client: FeedClient, caughtUp: string): void {
    for (const held of client.held)
      if (held.id === undefined || comesAfter(held.id, caughtUp)) client.res.write(held.frame);
    client.held = [];
    client.heldBytes = 0;
    client.mode = 'live';
    client.replayedUpTo = caughtUp;
  }

  /** Ends with `overflow` every client whose unsent output passed the bound. */
  endOverflowing(): void {
    for (const client of this.clients) {
      // A client catching up is paced by its replay, and bounded by what is held for it.
      if (client.mode !== 'live' || !overflows(client.res.writableLength, this.options.maxBufferedBytes))
        continue;
      this.options.logger.info(
        { buffered: client.res.writableLength },
        'live stream ended: its client did not keep up',
      );
      client.end(OVERFLOW_EVENT, true);
    }
  }

  private beat(): void {
    this.endOverflowing();
    for (const client of this.clients) if (client.res.headersSent) client.res.write(HEARTBEAT_FRAME);
  }
}
