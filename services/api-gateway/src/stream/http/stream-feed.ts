import type { ServerResponse } from 'node:http';
import {
  OVERFLOW_EVENT,
  STREAM_CATCH_UP_PARAM,
  STREAM_CATCH_UP_VALUE,
  STREAM_CAUGHT_UP_EVENT,
  overflows,
  sseEvent,
  type StreamFilter,
} from '@signal/contracts';
import { createParser } from 'eventsource-parser';
import { passedOnHeaders, type Upstream } from '../../http/upstream';
import {
  FanOut,
  writeStreamHead,
  type FanOutOptions,
  type FeedClient,
  type FeedOutcome,
  type ServedStream,
  type StreamControl,
  type StreamEndListener,
} from './fan-out';
import { UpstreamFeed, type UpstreamFeedOptions } from './upstream-feed';

export type { FeedOutcome, ServedStream, StreamControl, StreamEndListener } from './fan-out';

/** `open`'s result for a stream the fan-out now serves: its listener is told when it ends. */
export const ATTACHED = 'attached';

/** A catch-up's own wait for its client's end (a resuming stream is served by one call, start to end). */
class EndWaiter implements StreamEndListener {
  readonly ended: Promise<ServedStream>;
  private resolve: (served: ServedStream) => void = () => undefined;

  constructor() {
    this.ended = new Promise((resolve) => (this.resolve = resolve));
  }

  streamEnded(served: ServedStream): void {
    this.resolve(served);
  }
}

export type StreamFeedOptions = UpstreamFeedOptions & FanOutOptions;

/** The request a resuming client's catch-up is sent as: its path and query, with the service's token. */
export interface CatchUpRequest {
  path: string;
  headers: string[];
  timeoutMs: number;
}

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

/** The client went away before anything was sent (499, as nginx logs it). */
const clientGone = (): FeedOutcome => ({ ok: true, status: 499, overflowed: false });

/** A catch-up's response from the service, or the error that kept it from coming. */
type CatchUpResponse = Awaited<ReturnType<Upstream['streams']['request']>>;

/**
 * Asks the service to replay its log to the client (`until=live` added to the client's query),
 * cancelled when the client goes away; the error, not a throw, when the service cannot be reached.
 */
async function openCatchUp(
  options: StreamFeedOptions,
  res: ServerResponse,
  request: CatchUpRequest,
): Promise<CatchUpResponse | Error> {
  const abort = new AbortController();
  res.once('close', () => abort.abort());
  const separator = request.path.includes('?') ? '&' : '?';
  try {
    return await options.upstream.streams.request({
      method: 'GET',
      path: `${request.path}${separator}${STREAM_CATCH_UP_PARAM}=${STREAM_CATCH_UP_VALUE}`,
      headers: request.headers,
      headersTimeout: request.timeoutMs,
      bodyTimeout: options.idleTimeoutMs,
      signal: abort.signal,
    });
  } catch (err) {
    return err instanceof Error ? err : new Error(String(err));
  }
}

/** The service's refusal of a catch-up, sent to the client as it came (status, headers, body). */
async function passOnRefusal(
  res: ServerResponse,
  response: { headers: readonly string[]; ownHeaderNames: ReadonlySet<string> },
  refusal: CatchUpResponse,
): Promise<void> {
  const body = await refusal.body.arrayBuffer().catch(() => new ArrayBuffer(0));
  if (res.destroyed) return;
  res.writeHead(
    refusal.statusCode,
    passedOnHeaders(response.headers, response.ownHeaderNames, refusal.headers),
  );
  res.end(Buffer.from(body));
}

/**
 * How a replay ended: the client read too slowly (`too-slow`), the service ended the stream
 * itself with `overflow` or `reconnect` (`ended`, that event is the client's last), the replay
 * stopped without its end (`cut`), or it reached the log's end (`caught-up`, with the last id
 * it replayed or passed over).
 */
type ReplayEnd =
  | { kind: 'too-slow' }
  | { kind: 'ended'; lastEvent: string }
  | { kind: 'cut' }
  | { kind: 'caught-up'; lastId: string };

/**
 * Writes the service's replay to the client event by event, at the client's pace, while the
 * client is `attached` to the feed: each signal event and `reset` as the service sent it; the
 * `caught-up` marker and an event that ends the stream are kept for the caller.
 */
async function relayReplay(
  res: ServerResponse,
  body: CatchUpResponse['body'],
  attached: () => boolean,
  options: Pick<StreamFeedOptions, 'maxBufferedBytes' | 'heartbeatMs'>,
): Promise<ReplayEnd> {
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
  try {
    body.setEncoding('utf8');
    for await (const chunk of body) {
      if (!attached()) break;
      if (typeof chunk !== 'string') continue;
      parser.feed(chunk);
      let full = false;
      for (const frame of pending.splice(0)) full = !res.write(frame) || full;
      // The client left more of its replay unread than the live path lets it: it is cut.
      if (overflows(res.writableLength, options.maxBufferedBytes)) return { kind: 'too-slow' };
      // The replay goes at the client's pace, but a client that stops reading does not hold it
      // (and its stream) forever: after a heartbeat's wait the replay goes on, and what the
      // client leaves unread is bounded as on the live path.
      if (full) await drainedOrClosed(res, options.heartbeatMs);
    }
  } catch {
    // Cut mid-replay: a replay without its end.
  }
  if (lastEvent !== undefined) return { kind: 'ended', lastEvent };
  return caughtUp === undefined ? { kind: 'cut' } : { kind: 'caught-up', lastId: caughtUp };
}

/**
 * A gateway process's live streams: its one connection to the signals service's stream
 * (`UpstreamFeed`), fanned out to its client streams (`FanOut`), each event parsed once and
 * encoded once. A client joins live from now, or resumes from its position: then the service
 * replays the log to it first (a catch-up) while the fan-out holds what the feed sends.
 */
export class StreamFeed {
  private readonly fanOut: FanOut;
  private readonly connection: UpstreamFeed;

  constructor(private readonly options: StreamFeedOptions) {
    this.fanOut = new FanOut(options);
    this.connection = new UpstreamFeed(options, {
      started: () => this.fanOut.start(),
      chunk: () => this.fanOut.endOverflowing(),
      event: (message) => this.fanOut.deliver(message),
    });
  }

  get clientCount(): number {
    return this.fanOut.size;
  }

  /**
   * Serves an admitted stream (see `streamRequestOf`): from now, or from the client's position in
   * the log first. `catchUp` is asked for only when the client resumes. A stream from now
   * resolves `ATTACHED` once the fan-out serves it (`listener` is told when it ends): nothing of
   * the request's own code stays waiting for the stream's whole life. A resuming stream, and any
   * stream not served, resolves with its outcome once it ended.
   */
  open(
    res: ServerResponse,
    response: { headers: readonly string[]; ownHeaderNames: ReadonlySet<string> },
    stream: { kind: 'live' | 'resume'; filter: StreamFilter },
    control: StreamControl,
    listener: StreamEndListener,
    catchUp: () => CatchUpRequest,
  ): Promise<FeedOutcome | typeof ATTACHED> {
    return stream.kind === 'live'
      ? this.serve(res, response.headers, stream.filter, control, listener)
      : this.serveResuming(res, response, stream.filter, control, catchUp());
  }

  /** Stops the feed (the gateway shuts down; its clients were ended already). */
  close(): void {
    this.connection.close();
    this.fanOut.close();
  }

  /**
   * Sends `res` the stream from the feed until it ends (the client goes, or `control.end` is
   * called): 200 with `headers` ([name, value, …], the gateway's own first), `retry:`, then every
   * event the filter wants. `ok: false` (nothing written) when the service's stream cannot be opened.
   */
  private async serve(
    res: ServerResponse,
    headers: readonly string[],
    filter: StreamFilter,
    control: StreamControl,
    listener: StreamEndListener,
  ): Promise<FeedOutcome | typeof ATTACHED> {
    const open = await this.connection.ready();
    // The client went away while the feed was opening: nothing to send (499, as nginx logs it).
    if (res.destroyed) return clientGone();
    if (!open) return { ok: false };
    writeStreamHead(res, headers);
    this.fanOut.attach(res, filter, control, listener, false);
    return ATTACHED;
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
    filter: StreamFilter,
    control: StreamControl,
    request: CatchUpRequest,
  ): Promise<FeedOutcome> {
    const open = await this.connection.ready();
    if (res.destroyed) return clientGone();
    if (!open) return { ok: false };
    const waiter = new EndWaiter();
    const { ended } = waiter;
    const client = this.fanOut.attach(res, filter, control, waiter, true);
    const catchUp = await openCatchUp(this.options, res, request);
    if (catchUp instanceof Error) {
      client.end(undefined, false);
      await ended;
      if (res.destroyed) return clientGone();
      this.options.logger.warn({ err: catchUp.message }, 'stream catch-up failed');
      return { ok: false };
    }
    if (catchUp.statusCode !== 200) {
      // The service refused the stream (a 503 while its log is unreachable): its response, as is.
      await passOnRefusal(res, response, catchUp);
      client.end(undefined, false);
      return { ...(await ended), status: catchUp.statusCode };
    }
    writeStreamHead(res, response.headers);
    if (client.mode === 'overflowed') {
      // The feed sent more than the bound before the service responded.
      client.end(OVERFLOW_EVENT, true);
      catchUp.body.destroy();
      return ended;
    }
    const replay = await relayReplay(res, catchUp.body, () => this.fanOut.has(client), this.options);
    if (!this.fanOut.has(client)) return ended;
    switch (replay.kind) {
      case 'too-slow':
        this.options.logger.info(
          { buffered: res.writableLength },
          'live stream ended: its client did not keep up with its catch-up',
        );
        catchUp.body.destroy();
        client.end(OVERFLOW_EVENT, true);
        break;
      case 'ended':
        client.end(replay.lastEvent, true);
        break;
      case 'cut':
        // The replay was cut: the client's connection is cut too, as when every stream was
        // proxied; it resumes from the last event it got.
        res.destroy();
        break;
      case 'caught-up':
        if (modeOf(client) === 'overflowed') client.end(OVERFLOW_EVENT, true);
        else this.fanOut.goLive(client, replay.lastId);
        break;
    }
    return ended;
  }
}
