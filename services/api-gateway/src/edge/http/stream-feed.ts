import { randomUUID } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import {
  HEARTBEAT,
  OVERFLOW_EVENT,
  SIGNAL_STREAM_PATH,
  STREAM_CATCH_UP_PARAM,
  STREAM_CATCH_UP_VALUE,
  STREAM_CAUGHT_UP_EVENT,
  STREAM_PREAMBLE,
  sseEvent,
} from '@signal/contracts';
import type { Logger } from '@signal/service-kit';
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { comesAfter, signalTypeOf, wants, type FeedFilter } from '../domain/stream-filter';
import { passedOnHeaders, type StreamControl, type Upstream } from './upstream';

export interface StreamFeedOptions {
  upstream: Upstream;
  /** The internal token the feed opens the service's stream with (not any account's). */
  token: () => string;
  /** No bytes from the service this long (it sends heartbeats well within it): the feed reconnects. */
  idleTimeoutMs: number;
  /** How long the service may take to respond to the feed's request. */
  headersTimeoutMs: number;
  /** How often clients are sent the heartbeat comment (the service's interval). */
  heartbeatMs: number;
  /** Output a client has not taken, past which it is sent `overflow` and ended. */
  maxBufferedBytes: number;
  logger: Logger;
}

/** The request a resuming client's catch-up is sent as: its path and query, with the service's token. */
export interface CatchUpRequest {
  path: string;
  headers: string[];
  timeoutMs: number;
}

export type FeedOutcome = { ok: true; status: number; overflowed: boolean } | { ok: false };

interface FeedClient {
  res: ServerResponse;
  filter: FeedFilter;
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

/** Why the service's stream ended: the feed reconnects after each. */
type FeedEnd = 'refused' | 'ended' | 'failed' | 'closed';

const FIRST_RETRY_MS = 100;
const MAX_RETRY_MS = 2000;
/** How long an ended stream's connection may take to hand its client its last bytes before it is cut. */
const ENDED_STREAM_GRACE_MS = 30_000;
/**
 * The position the feed first opens at: an id older than every log entry, to which the service
 * responds with `reset` carrying the log's last entry id, then everything after it. The feed so
 * knows its position before the first event (and resumes from it if the service goes away before
 * one arrives); that first `reset` is the feed's, not its clients'.
 */
const OPENING_POSITION = '0-0';

const HEARTBEAT_FRAME = Buffer.from(HEARTBEAT);
const OVERFLOW_FRAME = Buffer.from(OVERFLOW_EVENT);

/** A client's mode now (the feed's deliveries change it while a catch-up awaits). */
const modeOf = (client: FeedClient): FeedClient['mode'] => client.mode;

/** Resolves once the response's buffered output drained, once it closed, or after `ms`. */
function drainedOrClosed(res: ServerResponse, ms: number): Promise<void> {
  if (res.destroyed || res.writableEnded) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    res.once('drain', done);
    res.once('close', done);
  });
}

/** The head of a stream response: the gateway's headers, then the stream's own. */
function writeStreamHead(res: ServerResponse, headers: readonly string[]): void {
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
 * The one subscription of this gateway process to the signals service's live stream (every
 * public event, no filter), fanned out to the process's client streams: each event is parsed
 * once, encoded once, and written to every client whose filter wants it. Opened by the first
 * client and kept while the process runs. When the service's stream ends or fails, the feed
 * reconnects with back-off and Last-Event-ID = the last id it received: the service replays
 * the log from there, so its clients miss nothing and get nothing twice.
 */
export class StreamFeed {
  private readonly clients = new Set<FeedClient>();
  private started = false;
  private closing = false;
  /** A response from the service is being read now. */
  private connected = false;
  /** The last event id the service sent (the feed's position in the log). */
  private position: string | undefined;
  /** Clients waiting for the feed's next connection attempt (true: it is open). */
  private waiters: Array<(open: boolean) => void> = [];
  private abort: AbortController | undefined;
  private heartbeat: NodeJS.Timeout | undefined;
  private wake: (() => void) | undefined;

  constructor(private readonly options: StreamFeedOptions) {}

  get clientCount(): number {
    return this.clients.size;
  }

  /**
   * Serves an admitted stream (see `streamRequestOf`): from now, or from the client's position in
   * the log first. `catchUp` is asked for only when the client resumes.
   */
  open(
    res: ServerResponse,
    response: { headers: readonly string[]; ownHeaderNames: ReadonlySet<string> },
    stream: { kind: 'live' | 'resume'; filter: FeedFilter },
    control: StreamControl,
    catchUp: () => CatchUpRequest,
  ): Promise<FeedOutcome> {
    return stream.kind === 'live'
      ? this.serve(res, response.headers, stream.filter, control)
      : this.serveResuming(res, response, stream.filter, control, catchUp());
  }

  /**
   * Sends `res` the stream from the feed until it ends (the client goes, or `control.end` is
   * called): 200 with `headers` ([name, value, …], the gateway's own first), `retry:`, then every
   * event the filter wants. `ok: false` (nothing written) when the service's stream cannot be opened.
   */
  private async serve(
    res: ServerResponse,
    headers: readonly string[],
    filter: FeedFilter,
    control: StreamControl,
  ): Promise<FeedOutcome> {
    const open = await this.ready();
    // The client went away while the feed was opening: nothing to send (499, as nginx logs it).
    if (res.destroyed) return { ok: true, status: 499, overflowed: false };
    if (!open) return { ok: false };
    writeStreamHead(res, headers);
    const { ended } = this.attach(res, filter, control, false);
    return ended;
  }

  /**
   * A client resuming from a position: it joins the feed holding what the feed sends (at most the
   * bound), then the service replays its log after the position (`until=live`) and ends with
   * `caught-up` and the last id it replayed or passed over; the held events after that id follow,
   * then the feed's after that id (the replay may have read the log ahead of the feed). The log's
   * ids are totally ordered and the feed sends the log's order, and the replay reads the log past
   * everything the feed had sent when the client joined, so none is lost and none sent twice. The
   * service's refusal (its status and envelope) goes to the client as is.
   */
  private async serveResuming(
    res: ServerResponse,
    response: { headers: readonly string[]; ownHeaderNames: ReadonlySet<string> },
    filter: FeedFilter,
    control: StreamControl,
    request: CatchUpRequest,
  ): Promise<FeedOutcome> {
    const open = await this.ready();
    if (res.destroyed) return { ok: true, status: 499, overflowed: false };
    if (!open) return { ok: false };
    const { client, ended } = this.attach(res, filter, control, true);
    const abort = new AbortController();
    res.once('close', () => abort.abort());
    const separator = request.path.includes('?') ? '&' : '?';
    let catchUp;
    try {
      catchUp = await this.options.upstream.streams.request({
        method: 'GET',
        path: `${request.path}${separator}${STREAM_CATCH_UP_PARAM}=${STREAM_CATCH_UP_VALUE}`,
        headers: request.headers,
        headersTimeout: request.timeoutMs,
        bodyTimeout: this.options.idleTimeoutMs,
        signal: abort.signal,
      });
    } catch (err) {
      client.end(undefined, false);
      await ended;
      if (res.destroyed) return { ok: true, status: 499, overflowed: false };
      this.options.logger.warn(
        { err: err instanceof Error ? err.message : String(err) },
        'stream catch-up failed',
      );
      return { ok: false };
    }
    if (catchUp.statusCode !== 200) {
      // The service refused the stream (a 503 while its log is unreachable): its response, as is.
      const body = await catchUp.body.arrayBuffer().catch(() => new ArrayBuffer(0));
      if (!res.destroyed) {
        res.writeHead(
          catchUp.statusCode,
          passedOnHeaders(response.headers, response.ownHeaderNames, catchUp.headers),
        );
        res.end(Buffer.from(body));
      }
      client.end(undefined, false);
      const outcome = await ended;
      return outcome.ok ? { ...outcome, status: catchUp.statusCode } : outcome;
    }
    writeStreamHead(res, response.headers);
    if (client.mode === 'overflowed') {
      // The feed sent more than the bound before the service responded.
      client.end(OVERFLOW_EVENT, true);
      catchUp.body.destroy();
      return ended;
    }
    let caughtUp: string | undefined;
    /** The service ended the replay itself (`overflow`, `reconnect`): the client's last event. */
    let lastEvent: string | undefined;
    const pending: Buffer[] = [];
    const parser = createParser({
      onEvent: (message) => {
        const event = message.event ?? 'message';
        if (event === STREAM_CAUGHT_UP_EVENT) caughtUp = message.data;
        else if (message.id === undefined && event !== 'reset')
          lastEvent ??= sseEvent({ event, data: message.data });
        else pending.push(Buffer.from(sseEvent({ id: message.id, event, data: message.data })));
      },
    });
    const attached = () => this.clients.has(client);
    /** The client left more of its replay unread than the live path lets it: it is cut. */
    let tooSlow = false;
    try {
      catchUp.body.setEncoding('utf8');
      for await (const chunk of catchUp.body) {
        if (!attached()) break;
        if (typeof chunk !== 'string') continue;
        parser.feed(chunk);
        let full = false;
        for (const frame of pending.splice(0)) full = !res.write(frame) || full;
        if (res.writableLength > this.options.maxBufferedBytes) {
          tooSlow = true;
          break;
        }
        // The replay goes at the client's pace, but a client that stops reading does not hold
        // it (and its stream) forever: after a heartbeat's wait the replay goes on, and what the
        // client leaves unread is bounded as on the live path.
        if (full) await drainedOrClosed(res, this.options.heartbeatMs);
      }
    } catch {
      // Cut mid-replay: handled below as a replay without its end.
    }
    if (!attached()) return ended;
    if (tooSlow) {
      this.options.logger.info(
        { buffered: res.writableLength },
        'live stream ended: its client did not keep up with its catch-up',
      );
      catchUp.body.destroy();
      client.end(OVERFLOW_EVENT, true);
      return ended;
    }
    if (lastEvent !== undefined) client.end(lastEvent, true);
    else if (caughtUp === undefined) {
      // The replay was cut: the client's connection is cut too, as when every stream was proxied;
      // it resumes from the last event it got.
      res.destroy();
    } else if (modeOf(client) === 'overflowed') client.end(OVERFLOW_EVENT, true);
    else {
      // In one iteration of the event loop with the feed's deliveries: none arrives in between.
      for (const held of client.held)
        if (held.id === undefined || comesAfter(held.id, caughtUp)) res.write(held.frame);
      client.held = [];
      client.heldBytes = 0;
      client.mode = 'live';
      client.replayedUpTo = caughtUp;
    }
    return ended;
  }

  /** Adds a client to the fan-out; `ended` settles once its stream ended (any way). */
  private attach(
    res: ServerResponse,
    filter: FeedFilter,
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

  /** Stops the feed (the gateway shuts down; its clients were ended already). */
  close(): void {
    this.closing = true;
    clearInterval(this.heartbeat);
    this.abort?.abort();
    this.wake?.();
    for (const resolve of this.waiters.splice(0)) resolve(false);
    for (const client of [...this.clients]) client.end(undefined, false);
  }

  /** Whether the service's stream is open, waiting for the next attempt when it is not. */
  private ready(): Promise<boolean> {
    if (this.closing) return Promise.resolve(false);
    if (this.connected) return Promise.resolve(true);
    const waiting = new Promise<boolean>((resolve) => this.waiters.push(resolve));
    if (!this.started) {
      this.started = true;
      this.heartbeat = setInterval(() => this.beat(), this.options.heartbeatMs);
      this.heartbeat.unref();
      void this.run();
    } else this.wake?.();
    return waiting;
  }

  private settleWaiters(open: boolean): void {
    for (const resolve of this.waiters.splice(0)) resolve(open);
  }

  /** Keeps the service's stream open: reconnects with back-off while the process runs. */
  private async run(): Promise<void> {
    let delay = FIRST_RETRY_MS;
    while (!this.closing) {
      const end = await this.readOnce();
      if (this.closing) break;
      if (end === 'ended' && this.position !== undefined) delay = FIRST_RETRY_MS;
      else
        this.options.logger.warn(
          { end, retryInMs: delay },
          'live stream feed lost the service; reconnecting',
        );
      // A client waiting to join, or a service that ended the stream cleanly, is not kept waiting.
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, this.waiters.length > 0 && end !== 'refused' ? 0 : delay);
        this.wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.wake = undefined;
      delay = end === 'ended' ? FIRST_RETRY_MS : Math.min(delay * 2, MAX_RETRY_MS);
    }
  }

  /** One request for the service's stream, read until it ends. */
  private async readOnce(): Promise<FeedEnd> {
    const abort = new AbortController();
    this.abort = abort;
    const opening = this.position === undefined;
    let response;
    try {
      response = await this.options.upstream.streams.request({
        method: 'GET',
        path: SIGNAL_STREAM_PATH,
        headers: {
          accept: 'text/event-stream',
          authorization: `Bearer ${this.options.token()}`,
          'last-event-id': this.position ?? OPENING_POSITION,
          'x-request-id': randomUUID(),
        },
        headersTimeout: this.options.headersTimeoutMs,
        bodyTimeout: this.options.idleTimeoutMs,
        signal: abort.signal,
      });
    } catch (err) {
      this.settleWaiters(false);
      this.options.logger.warn(
        { err: err instanceof Error ? err.message : String(err) },
        'live stream feed: no response',
      );
      return this.closing ? 'closed' : 'failed';
    }
    if (response.statusCode !== 200) {
      await response.body.dump().catch(() => undefined);
      this.settleWaiters(false);
      return 'refused';
    }
    this.connected = true;
    this.settleWaiters(true);
    let awaitingOpening = opening;
    const parser = createParser({
      onEvent: (message) => {
        if (awaitingOpening) {
          awaitingOpening = false;
          // The response to the opening position: where the log ends, for the feed only.
          if (message.event === 'reset') {
            if (message.id) this.position = message.id;
            return;
          }
        }
        this.deliver(message);
      },
    });
    try {
      response.body.setEncoding('utf8');
      for await (const chunk of response.body) {
        if (typeof chunk !== 'string') continue;
        // Checked per chunk of the service's stream, not per write: a socket sends only between
        // event-loop iterations, so a client is cut for what it left unread since the last chunk.
        this.endOverflowing();
        parser.feed(chunk);
      }
      return 'ended';
    } catch (err) {
      if (!this.closing)
        this.options.logger.warn(
          { err: err instanceof Error ? err.message : String(err) },
          'live stream feed cut',
        );
      return this.closing ? 'closed' : 'failed';
    } finally {
      this.connected = false;
    }
  }

  private deliver(message: EventSourceMessage): void {
    const event = message.event ?? 'message';
    if (message.id !== undefined) this.position = message.id;
    // The service's own end of the feed's stream (the feed was slow, or the service stops):
    // the feed reconnects from its position; its clients are not told.
    if (message.id === undefined && (event === 'overflow' || event === 'reconnect')) return;
    const frame = Buffer.from(sseEvent({ id: message.id, event, data: message.data }));
    // A `reset` (the feed's position left the log) concerns every client, whatever it filters.
    const type = event === 'reset' ? undefined : signalTypeOf(message.data);
    for (const client of this.clients) {
      if (event !== 'reset' && !wants(client.filter, event, type)) continue;
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
      if (client.heldBytes > this.options.maxBufferedBytes) {
        // It cannot be held up longer: `overflow` once its head is out (its catch-up ends it).
        client.mode = 'overflowed';
        client.held = [];
        client.heldBytes = 0;
        if (client.res.headersSent) client.end(OVERFLOW_EVENT, true);
      }
    }
  }

  private beat(): void {
    this.endOverflowing();
    for (const client of this.clients) if (client.res.headersSent) client.res.write(HEARTBEAT_FRAME);
  }

  /** Ends with `overflow` every client whose unsent output passed the bound. */
  private endOverflowing(): void {
    for (const client of this.clients) {
      // A client catching up is paced by its replay, and bounded by what is held for it.
      if (client.mode !== 'live' || client.res.writableLength <= this.options.maxBufferedBytes) continue;
      this.options.logger.info(
        { buffered: client.res.writableLength },
        'live stream ended: its client did not keep up',
      );
      client.end(OVERFLOW_EVENT, true);
    }
  }
}
