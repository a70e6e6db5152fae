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
  /** Set by the fan-out while the stream is its client's: ends it now (whole events only). */
  client?: { stop(lastEvent?: string): void };
}

/** What a served stream's client got. */
export interface ServedStream {
  ok: true;
  status: number;
  overflowed: boolean;
}

export type FeedOutcome = ServedStream | { ok: false };

/** Told once, when a client's stream ended (any way). */
export interface StreamEndListener {
  streamEnded(served: ServedStream): void;
}

/** An event held for a client catching up. */
interface HeldFrame {
  id: string | undefined;
  frame: Buffer;
}

/**
 * One client of the fan-out, in one object: ten thousand streams per process make every object,
 * closure and promise per stream count, so its state is fields, its behaviour methods, and the
 * response's `close` listener one function the fan-out shares among all its clients.
 */
export class FeedClient {
  /**
   * `live`: sent each event; `holding`: catching up, the feed's events its filter wants are held
   * (`held`) until it has; `overflowed`: more than the bound was held, it ends with `overflow`.
   */
  mode: 'live' | 'holding' | 'overflowed';
  held: HeldFrame[] = [];
  heldBytes = 0;
  /**
   * Entries up to this id reached the client by its replay, which can read the log ahead of the
   * feed: the feed skips them, and clears this at its first later entry.
   */
  replayedUpTo: string | undefined = undefined;
  /**
   * Bytes went out to it since the fan-out's last tick (an event, its preamble, a heartbeat):
   * a client sent events needs no heartbeat, see `FanOut.tick`.
   */
  sentSinceTick = true;
  private overflowed = false;
  private done = false;

  constructor(
    private readonly fanOut: FanOut,
    readonly res: ServerResponse,
    readonly filter: StreamFilter,
    private readonly control: StreamControl,
    private readonly listener: StreamEndListener,
    holding: boolean,
  ) {
    this.mode = holding ? 'holding' : 'live';
  }

  /** The gateway ends the stream: before the head is out (a catch-up still waiting), the connection is cut. */
  stop(lastEvent?: string): void {
    if (!this.res.headersSent) this.res.destroy();
    this.end(lastEvent, false);
  }

  /** Ends the client's stream with `last`; `closeConnection` closes its connection after it. */
  end(last: string | undefined, closeConnection: boolean): void {
    if (this.done) return;
    const { res } = this;
    if (last === OVERFLOW_EVENT) this.overflowed = true;
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
    this.finish();
  }

  /** The stream ended (any way): it leaves the fan-out and its listener is told, once. */
  finish(): void {
    if (this.done) return;
    this.done = true;
    this.fanOut.remove(this);
    if (this.control.client === this) this.control.client = undefined;
    const { res } = this;
    this.listener.streamEnded({
      ok: true,
      status: res.headersSent ? res.statusCode : 499,
      overflowed: this.overflowed,
    });
  }
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
  private readonly clients = new Map<ServerResponse, FeedClient>();
  private heartbeat: NodeJS.Timeout | undefined;
  /** Every client response's `close` listener (one function for all: `this` is the response). */
  private readonly closed: (this: ServerResponse) => void;

  constructor(private readonly options: FanOutOptions) {
    const clients = this.clients;
    this.closed = function (this: ServerResponse) {
      clients.get(this)?.finish();
    };
  }

  get size(): number {
    return this.clients.size;
  }

  /** Is the client still among the fan-out's (its stream has not ended)? */
  has(client: FeedClient): boolean {
    return this.clients.get(client.res) === client;
  }

  /** The client's stream ended: it is sent nothing more. */
  remove(client: FeedClient): void {
    if (this.clients.get(client.res) === client) this.clients.delete(client.res);
    client.res.off('close', this.closed);
  }

  /** Starts the heartbeat (once). */
  start(): void {
    if (this.heartbeat) return;
    this.heartbeat = setInterval(() => this.tick(), this.options.heartbeatMs / 2);
    this.heartbeat.unref();
  }

  /** Stops the heartbeat and ends every client's stream (the gateway shuts down). */
  close(): void {
    clearInterval(this.heartbeat);
    for (const client of [...this.clients.values()]) client.end(undefined, false);
  }

  /** Adds a client; `listener` is told once its stream ended (any way). */
  attach(
    res: ServerResponse,
    filter: StreamFilter,
    control: StreamControl,
    listener: StreamEndListener,
    holding: boolean,
  ): FeedClient {
    const client = new FeedClient(this, res, filter, control, listener, holding);
    control.client = client;
    res.on('close', this.closed);
    this.clients.set(res, client);
    return client;
  }

  /** One event of the service's stream, to every client that takes it. */
  deliver(message: EventSourceMessage): void {
    const event = message.event ?? 'message';
    const frame = Buffer.from(sseEvent({ id: message.id, event, data: message.data }));
    // A `reset` (the feed's position left the log) concerns every client, whatever it filters.
    const kind = { event, type: event === 'reset' ? undefined : signalTypeOf(message.data) };
    for (const client of this.clients.values()) {
      if (event !== 'reset' && !matches(client.filter, kind)) continue;
      if (client.mode === 'live') {
        if (client.replayedUpTo !== undefined && message.id !== undefined) {
          if (!comesAfter(message.id, client.replayedUpTo)) continue;
          client.replayedUpTo = undefined;
        }
        // node:http frames the chunk: the frame's bytes are shared by every client.
        client.res.write(frame);
        client.sentSinceTick = true;
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
      if (held.id === undefined || comesAfter(held.id, caughtUp)) {
        client.res.write(held.frame);
        client.sentSinceTick = true;
      }
    client.held = [];
    client.heldBytes = 0;
    client.mode = 'live';
    client.replayedUpTo = caughtUp;
  }

  /** Ends with `overflow` every client whose unsent output passed the bound. */
  endOverflowing(): void {
    for (const client of this.clients.values()) {
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

  /**
   * Twice per heartbeat interval: a client sent nothing since the last tick is sent the heartbeat,
   * so no client goes longer than the interval without bytes. One sent events is not: with events
   * flowing, a heartbeat to every client would be a second pass over all their sockets, and an
   * event arriving during it waits for it.
   */
  private tick(): void {
    this.endOverflowing();
    for (const client of this.clients.values()) {
      if (client.sentSinceTick) client.sentSinceTick = false;
      else if (client.res.headersSent) {
        client.res.write(HEARTBEAT_FRAME);
        // The heartbeat counts as the next tick's bytes: an idle client gets one per interval.
        client.sentSinceTick = true;
      }
    }
  }
}
