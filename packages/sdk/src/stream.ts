/**
 * The live stream `GET /v1/signals/stream` (Server-Sent Events) as an async iterator that
 * reconnects: after a dropped connection it waits (the server's `retry:` first, then doubling
 * with jitter), reconnects with `Last-Event-ID` = the last event it handed out, and the server
 * replays what matched meanwhile. An id already handed out is dropped, so a consumer sees each
 * event once across reconnects. No runtime dependencies: fetch's body stream and TextDecoder.
 */
import type { SignalType, WebhookEvent, WebhookPayload, RetryEvent } from './types.js';
import { type SignalApiError, isRecord } from './errors.js';
import { pathOf } from './generated/routes.js';
import { networkFailure } from './network.js';

/** The stream's path (operationId streamSignals). */
export const SIGNAL_STREAM_PATH = pathOf('streamSignals');

/** The webhook payload of one event, its `event` narrowed to that one (a winner has `performance`). */
export type PayloadOf<E extends WebhookPayload['event']> = WebhookPayload extends infer P
  ? P extends { event: infer Names }
    ? E extends Names
      ? Omit<P, 'event'> & { event: E }
      : never
    : never
  : never;

/**
 * A signal event: the webhook payload a delivery of it would carry, under its stream id. One
 * shape per event: `if (e.event === 'signal.winner')` narrows `e.data` to a winner's payload.
 */
export type StreamSignalEvent = {
  [E in WebhookEvent]: {
    event: E;
    /** The event's position in the stream: what Last-Event-ID resumes after. */
    id: string;
    data: PayloadOf<E>;
  };
}[WebhookEvent];

/**
 * The id given to resume from is one the server no longer holds (malformed, unknown or older than
 * its log): re-sync from `GET /v1/signals` (`client.signals.iterate`); live events follow.
 */
export interface StreamResetEvent {
  event: 'reset';
  /** Where the stream goes on from (the next reconnect resumes after it). */
  id: string | undefined;
  data: { reason: string; message: string; resync: string };
}

export type StreamEvent = StreamSignalEvent | StreamResetEvent;

export interface StreamParams {
  /** Only signals of these types. */
  type?: SignalType | readonly SignalType[];
  /** Only these events. */
  events?: WebhookEvent | readonly WebhookEvent[];
  /** Resume after this id (a `lastEventId` kept from an earlier stream). */
  lastEventId?: string;
}

export interface StreamOptions {
  /** Ends the stream (the iterator returns). */
  signal?: AbortSignal;
  /** A connection silent this long (no event, no heartbeat) is dropped and reopened. Default 45 s. */
  idleTimeoutMs?: number;
  /** The longest wait between reconnects. Default 30 s. */
  maxBackoffMs?: number;
  /** Reconnects in a row without an event or heartbeat before the stream gives up. Default: never. */
  maxReconnects?: number;
  /**
   * Called each time the server accepts a connection (the key was taken, the stream is live);
   * `connection` is 1 for the first. A refused key throws from the iterator before any call.
   */
  onOpen?: (connection: number) => void;
}

/** What the client lends the stream: its URL, headers, fetch and retry settings. */
export interface StreamTransport {
  url(path: string, query: Record<string, string | undefined>): string;
  headers(): Record<string, string>;
  fetch: typeof fetch;
  /** 429s in a row at opening before RateLimitError. */
  maxRetries: number;
  /** A Retry-After longer than this is not waited: the error is thrown. */
  maxRetryDelayMs: number;
  onRetry?: (event: RetryEvent) => void;
  toError(status: number, body: unknown, headers: Headers): SignalApiError;
}

/** The stream could not continue: reconnects ran out, or the server responded with something else. */
export class SignalStreamError extends Error {
  override readonly name = 'SignalStreamError';
}

const SIGNAL_EVENTS: Readonly<Record<WebhookEvent, true>> = {
  'signal.new': true,
  'signal.winner': true,
  'signal.dead': true,
  'signal.rugged': true,
};
const isSignalEvent = (v: string): v is WebhookEvent => Object.hasOwn(SIGNAL_EVENTS, v);

/** Ids handed out that are remembered, newest last: enough to cover any replay overlap. */
const REMEMBERED_IDS = 4096;
const DEFAULT_RETRY_MS = 1000;

/** One parsed Server-Sent Event (the WHATWG event-stream format). */
export interface SseEvent {
  event: string;
  data: string;
  id: string | undefined;
}

/**
 * An incremental parser of `text/event-stream`: feed it text as it arrives; it calls `onEvent`
 * per dispatched event, `onRetry` per `retry:` field and `onComment` per comment line.
 */
export class SseParser {
  private buffer = '';
  private event = '';
  private data: string[] = [];
  private id: string | undefined;
  private hasId = false;

  constructor(
    private readonly on: {
      event(e: SseEvent): void;
      retry?(ms: number): void;
      comment?(text: string): void;
    },
  ) {}

  push(text: string): void {
    this.buffer += text;
    for (;;) {
      const match = /\r\n|\r|\n/.exec(this.buffer);
      if (!match) return;
      // A lone \r at the end may be the first half of \r\n: wait for the next chunk.
      if (match[0] === '\r' && match.index === this.buffer.length - 1) return;
      const line = this.buffer.slice(0, match.index);
      this.buffer = this.buffer.slice(match.index + match[0].length);
      this.line(line);
    }
  }

  private line(line: string): void {
    if (line === '') {
      if (this.data.length > 0 || this.event !== '') {
        this.on.event({
          event: this.event || 'message',
          data: this.data.join('\n'),
          id: this.hasId ? this.id : undefined,
        });
      }
      this.event = '';
      this.data = [];
      this.id = undefined;
      this.hasId = false;
      return;
    }
    if (line.startsWith(':')) {
      this.on.comment?.(line.slice(1).trim());
      return;
    }
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'event') this.event = value;
    else if (field === 'data') this.data.push(value);
    else if (field === 'id' && !value.includes('\0')) {
      this.id = value;
      this.hasId = true;
    } else if (field === 'retry' && /^\d+$/.test(value)) this.on.retry?.(Number(value));
  }
}

const asList = (v: string | readonly string[] | undefined): string | undefined =>
  v === undefined ? undefined : typeof v === 'string' ? v : v.join(',');

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** The single decode point of the stream: the server sends a signal event's webhook payload. */
function isPayload<E extends WebhookEvent>(v: unknown, event: E): v is PayloadOf<E> {
  return isRecord(v) && v.event === event && typeof v.timestamp === 'string' && isRecord(v.data);
}

/** A signal event read from the stream, or undefined when its data is not that event's payload. */
function signalEvent(event: WebhookEvent, id: string, data: unknown): StreamSignalEvent | undefined {
  switch (event) {
    case 'signal.new':
      return isPayload(data, event) ? { event, id, data } : undefined;
    case 'signal.winner':
      return isPayload(data, event) ? { event, id, data } : undefined;
    case 'signal.dead':
      return isPayload(data, event) ? { event, id, data } : undefined;
    case 'signal.rugged':
      return isPayload(data, event) ? { event, id, data } : undefined;
  }
}

/** Events read ahead of the consumer before reading pauses (the server then bounds its own buffer). */
const READ_AHEAD = 256;

/** Why a connection ended, and what the stream does next. */
type Ended =
  | { kind: 'dropped'; reason: string }
  | { kind: 'refused'; status: number; error: SignalApiError }
  | { kind: 'fatal'; error: Error };

const sleepUnlessAborted = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });

/**
 * `for await (const e of client.signals.stream({ type: 'premium' }))`: signal events and resets.
 * `lastEventId` is the id of the last event handed out: keep it to resume after a restart.
 * Ends (returns) when `signal` aborts or the loop breaks; throws a typed error when the key is
 * revoked or expires mid-stream (AuthenticationError), when opening is refused for good (401,
 * 403, 400) or stays rate limited past the retries (RateLimitError).
 */
export class SignalStream implements AsyncIterable<StreamEvent> {
  lastEventId: string | undefined;
  /** The server's `retry:` hint, in ms. */
  retryMs: number | undefined;
  /** Connections opened so far. */
  connections = 0;
  private readonly seen = new Set<string>();
  private readonly query: Record<string, string | undefined>;
  private started = false;

  constructor(
    private readonly transport: StreamTransport,
    params: StreamParams = {},
    private readonly options: StreamOptions = {},
  ) {
    this.query = { type: asList(params.type), events: asList(params.events) };
    this.lastEventId = params.lastEventId;
  }

  [Symbol.asyncIterator](): AsyncGenerator<StreamEvent> {
    if (this.started) throw new TypeError('a SignalStream is iterated once; open another to read again');
    this.started = true;
    return this.run();
  }

  /** Remembers an id handed out; false when it was handed out before. */
  private firstTime(id: string): boolean {
    if (this.seen.has(id)) return false;
    this.seen.add(id);
    if (this.seen.size > REMEMBERED_IDS) {
      const oldest = this.seen.values().next();
      if (!oldest.done) this.seen.delete(oldest.value);
    }
    return true;
  }

  private async *run(): AsyncGenerator<StreamEvent> {
    const { signal } = this.options;
    const idleTimeoutMs = this.options.idleTimeoutMs ?? 45_000;
    const maxBackoffMs = this.options.maxBackoffMs ?? 30_000;
    /** Connections in a row that brought nothing (no event, no heartbeat). */
    let failures = 0;
    /** 429s in a row at opening. */
    let refusals = 0;
    while (!signal?.aborted) {
      const queue: StreamEvent[] = [];
      let wake: (() => void) | undefined;
      let ended: Ended | undefined;
      let progressed = false;
      const notify = () => {
        wake?.();
        wake = undefined;
      };
      /** The reader, paused while the consumer has READ_AHEAD events to take. */
      let resume: (() => void) | undefined;
      const controller = new AbortController();
      const onAbort = () => controller.abort();
      signal?.addEventListener('abort', onAbort, { once: true });
      let idle: NodeJS.Timeout | undefined;
      const touch = () => {
        clearTimeout(idle);
        idle = setTimeout(() => {
          ended ??= { kind: 'dropped', reason: `no data for ${idleTimeoutMs} ms` };
          controller.abort();
          notify();
        }, idleTimeoutMs);
      };
      const end = (e: Ended) => {
        ended ??= e;
        controller.abort();
        notify();
        resume?.();
        resume = undefined;
      };
      const parser = new SseParser({
        retry: (ms) => {
          this.retryMs = ms;
        },
        comment: () => {
          progressed = true;
        },
        event: (e) => {
          progressed = true;
          if (isSignalEvent(e.event)) {
            const event = e.id === undefined ? undefined : signalEvent(e.event, e.id, parseJson(e.data));
            if (!event) return;
            queue.push(event);
          } else if (e.event === 'reset') {
            const data = parseJson(e.data);
            const body = isRecord(data) ? data : {};
            queue.push({
              event: 'reset',
              id: e.id,
              data: {
                reason: String(body.reason ?? 'unknown'),
                message: String(body.message ?? ''),
                resync: String(body.resync ?? pathOf('listSignals')),
              },
            });
          } else if (e.event === 'overflow' || e.event === 'reconnect') {
            end({ kind: 'dropped', reason: e.event });
          } else if (e.event === 'error') {
            const data = parseJson(e.data);
            end({ kind: 'fatal', error: this.transport.toError(401, { error: data }, new Headers()) });
          }
          notify();
        },
      });

      this.connections += 1;
      const headers: Record<string, string> = {
        ...this.transport.headers(),
        accept: 'text/event-stream',
        'cache-control': 'no-cache',
      };
      if (this.lastEventId !== undefined) headers['last-event-id'] = this.lastEventId;
      const reading = (async () => {
        touch();
        let res: Response;
        const url = this.transport.url(SIGNAL_STREAM_PATH, this.query);
        try {
          res = await this.transport.fetch(url, { method: 'GET', headers, signal: controller.signal });
        } catch (err) {
          return end({ kind: 'dropped', reason: networkFailure(err, new URL(url).origin) });
        }
        if (!res.ok) {
          const text = await res.text().catch(() => '');
          return end({
            kind: 'refused',
            status: res.status,
            error: this.transport.toError(res.status, parseJson(text), res.headers),
          });
        }
        if (!(res.headers.get('content-type') ?? '').startsWith('text/event-stream') || !res.body) {
          await res.body?.cancel().catch(() => undefined);
          return end({
            kind: 'fatal',
            error: new SignalStreamError(`GET ${SIGNAL_STREAM_PATH}: not an event stream`),
          });
        }
        refusals = 0;
        this.options.onOpen?.(this.connections);
        const decoder = new TextDecoder();
        const reader = res.body.getReader();
        try {
          for (;;) {
            const { done, value } = await reader.read();
            if (done) break;
            touch();
            parser.push(decoder.decode(value, { stream: true }));
            if (ended) break;
            while (queue.length >= READ_AHEAD && !ended && !controller.signal.aborted) {
              clearTimeout(idle);
              await new Promise<void>((r) => {
                resume = r;
              });
              touch();
            }
          }
          end({ kind: 'dropped', reason: 'the server ended the stream' });
        } catch (err) {
          end({ kind: 'dropped', reason: String(err) });
        } finally {
          await reader.cancel().catch(() => undefined);
        }
      })();

      try {
        for (;;) {
          while (queue.length > 0) {
            const next = queue.shift()!;
            if (queue.length < READ_AHEAD / 2) {
              resume?.();
              resume = undefined;
            }
            if (next.event === 'reset') {
              if (next.id !== undefined) this.lastEventId = next.id;
              yield next;
            } else if (this.firstTime(next.id)) {
              this.lastEventId = next.id;
              yield next;
            }
          }
          if (ended || signal?.aborted) break;
          await new Promise<void>((resolve) => {
            wake = resolve;
          });
        }
      } finally {
        clearTimeout(idle);
        controller.abort();
        resume?.();
        signal?.removeEventListener('abort', onAbort);
        await reading;
      }
      if (signal?.aborted) return;
      const outcome: Ended = ended ?? { kind: 'dropped', reason: 'ended' };
      if (outcome.kind === 'fatal') throw outcome.error;
      let delayMs: number;
      let status: number | undefined;
      let error: Error;
      if (outcome.kind === 'refused') {
        status = outcome.status;
        error = outcome.error;
        const transient = status === 429 || status === 503 || status >= 500;
        if (!transient) throw outcome.error;
        if (status === 429) {
          refusals += 1;
          if (refusals > this.transport.maxRetries) throw outcome.error;
        }
        const retryAfter = outcome.error.retryAfter;
        if (retryAfter !== undefined && retryAfter * 1000 > this.transport.maxRetryDelayMs)
          throw outcome.error;
        failures += 1;
        delayMs = retryAfter !== undefined ? retryAfter * 1000 : this.backoff(failures, maxBackoffMs);
      } else {
        error = new SignalStreamError(`GET ${SIGNAL_STREAM_PATH}: ${outcome.reason}`);
        failures = progressed ? 1 : failures + 1;
        delayMs = this.backoff(failures, maxBackoffMs);
      }
      if (this.options.maxReconnects !== undefined && failures > this.options.maxReconnects) {
        throw status !== undefined
          ? error
          : new SignalStreamError(`${error.message}; no data after ${failures} reconnects`);
      }
      this.transport.onRetry?.({
        method: 'GET',
        path: SIGNAL_STREAM_PATH,
        attempt: failures,
        delayMs,
        status,
        error,
      });
      await sleepUnlessAborted(delayMs, signal);
    }
  }

  /** The wait before reconnect `n` in a row: the server's `retry:` first, then doubling with jitter. */
  private backoff(n: number, maxMs: number): number {
    const base = this.retryMs ?? DEFAULT_RETRY_MS;
    if (n <= 1) return Math.min(base, maxMs);
    return Math.min(maxMs, Math.round(base * 2 ** (n - 1) * (0.8 + Math.random() * 0.4)));
  }
}
