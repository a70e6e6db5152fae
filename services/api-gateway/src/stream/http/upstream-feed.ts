import { randomUUID } from 'node:crypto';
import { SIGNAL_STREAM_PATH } from '@signal/contracts';
import type { Logger } from '@signal/service-kit';
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import type { Upstream } from '../../http/upstream';

export interface UpstreamFeedOptions {
  upstream: Upstream;
  /** The internal token the feed opens the service's stream with (not any account's). */
  token: () => string;
  /** No bytes from the service this long (it sends heartbeats well within it): the feed reconnects. */
  idleTimeoutMs: number;
  /** How long the service may take to respond to the feed's request. */
  headersTimeoutMs: number;
  logger: Logger;
}

/** What the connection tells the fan-out. */
export interface FeedListener {
  /** The connection is first asked for: the fan-out's heartbeat starts with it. */
  started(): void;
  /** A chunk of the service's stream arrived, before its events are handed over. */
  chunk(): void;
  /** An event for the clients (the service's own end of the feed's stream is not one). */
  event(message: EventSourceMessage): void;
}

/** Why the service's stream ended: the feed reconnects after each. */
type FeedEnd = 'refused' | 'ended' | 'failed' | 'closed';

const FIRST_RETRY_MS = 100;
const MAX_RETRY_MS = 2000;
/**
 * The position the feed first opens at: an id older than every log entry, to which the service
 * responds with `reset` carrying the log's last entry id, then everything after it. The feed so
 * knows its position before the first event (and resumes from it if the service goes away before
 * one arrives); that first `reset` is the feed's, not its clients'.
 */
const OPENING_POSITION = '0-0';

/**
 * The gateway process's one subscription to the signals service's live stream (every public
 * event, no filter). Opened when first asked for and kept while the process runs: when the
 * service's stream ends or fails, it reconnects with back-off and Last-Event-ID = the last id it
 * received, so the service replays the log from there and the listener misses nothing and gets
 * nothing twice.
 */
export class UpstreamFeed {
  private started = false;
  private closing = false;
  /** A response from the service is being read now. */
  private connected = false;
  /** The last event id the service sent (the feed's position in the log). */
  private position: string | undefined;
  /** Callers waiting for the next connection attempt (true: it is open). */
  private waiters: Array<(open: boolean) => void> = [];
  private abort: AbortController | undefined;
  private wake: (() => void) | undefined;

  constructor(
    private readonly options: UpstreamFeedOptions,
    private readonly listener: FeedListener,
  ) {}

  /** Whether the service's stream is open, waiting for the next attempt when it is not. */
  ready(): Promise<boolean> {
    if (this.closing) return Promise.resolve(false);
    if (this.connected) return Promise.resolve(true);
    const waiting = new Promise<boolean>((resolve) => this.waiters.push(resolve));
    if (!this.started) {
      this.started = true;
      this.listener.started();
      void this.run();
    } else this.wake?.();
    return waiting;
  }

  /** Stops the feed for good (the gateway shuts down). */
  close(): void {
    this.closing = true;
    this.abort?.abort();
    this.wake?.();
    this.settleWaiters(false);
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
        this.received(message);
      },
    });
    try {
      response.body.setEncoding('utf8');
      for await (const chunk of response.body) {
        if (typeof chunk !== 'string') continue;
        // Checked per chunk of the service's stream, not per write: a socket sends only between
        // event-loop iterations, so a client is cut for what it left unread since the last chunk.
        this.listener.chunk();
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

  private received(message: EventSourceMessage): void {
    if (message.id !== undefined) this.position = message.id;
    const event = message.event ?? 'message';
    // The service's own end of the feed's stream (the feed was slow, or the service stops):
    // the feed reconnects from its position; its clients are not told.
    if (message.id === undefined && (event === 'overflow' || event === 'reconnect')) return;
    this.listener.event(message);
  }
}
