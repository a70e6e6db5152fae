import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ErrorCode } from '@signal/contracts';
import { CLIENT_GONE_STATUS, bodyRefusalOf } from '@signal/service-kit';
import { Pool, type Dispatcher } from 'undici';

/** Response headers the gateway never passes on: connection-level ones and those it sets itself. */
const DROPPED_RESPONSE_HEADERS = new Set([
  'connection',
  'keep-alive',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'x-request-id',
]);

/** Request headers worth passing on; everything else (Authorization, X-Internal-*, cookies) stays here. */
const FORWARDED_REQUEST_HEADERS = [
  'accept',
  'accept-encoding',
  'content-type',
  // The services' body reader decodes gzip, deflate and br, and refuses other codings with 415.
  'content-encoding',
  'idempotency-key',
  'last-event-id',
  'user-agent',
] as const;

/**
 * The services parse at most Node's 16 KiB of request line and headers; the gateway adds about
 * half a kilobyte (token, request id, address). A request whose passed-on part is larger would
 * be refused by the service's parser with an envelope of its own (another request id), so the
 * gateway refuses it first.
 */
export const MAX_FORWARDED_BYTES = 12 * 1024;

/** Bytes of the request line and headers the service would get from this request. */
export function forwardedBytes(req: IncomingMessage, path: string): number {
  let n = path.length + (req.method ?? 'GET').length;
  for (const name of FORWARDED_REQUEST_HEADERS) {
    const v = req.headers[name];
    if (typeof v === 'string') n += name.length + v.length + 4;
  }
  return n;
}

export interface Upstream {
  name: string;
  /** JWT audience the service accepts. */
  audience: string;
  pool: Pool;
  /**
   * Live streams: the gateway's feed and each resuming client's catch-up, a connection each for
   * as long as it lasts, so no request waits for a connection a stream holds.
   */
  streams: Pool;
}

export interface UpstreamOptions {
  /** Keep-alive connections to the service; each carries one request at a time. */
  connections: number;
}

/**
 * One undici pool per service. One request at a time per connection: a request never waits
 * behind another client's response on the same connection, whatever that client does.
 */
export function createUpstream(name: string, url: string, options: UpstreamOptions): Upstream {
  const pool = new Pool(new URL(url).origin, {
    connections: options.connections,
    pipelining: 1,
    // Connections stay open (the services keep theirs 65 s) so requests never wait for a handshake.
    keepAliveTimeout: 30_000,
    keepAliveMaxTimeout: 60_000,
    connectTimeout: 2000,
  });
  const streams = new Pool(new URL(url).origin, { connections: null, pipelining: 1, connectTimeout: 2000 });
  return { name, audience: name, pool, streams };
}

export async function closeUpstream(upstream: Upstream): Promise<void> {
  await Promise.all([upstream.pool.close(), upstream.streams.destroy()]);
}

/** The largest body a public route takes (the webhooks service reads at most 64 KiB). */
export const MAX_API_BODY_BYTES = 64 * 1024;

/** The largest body the gateway's own routes take (login, sign-up, keys, the dashboard's API). */
export const OWN_ROUTES_MAX_BODY_BYTES = 16 * 1024;

/** Why a body to a service's route is refused before any of it is read (`bodyRefusalOf`). */
export const bodyRefusal = (headers: IncomingMessage['headers']) =>
  bodyRefusalOf(headers, MAX_API_BODY_BYTES);

export type ClientBody = { ok: true; body: Buffer } | { ok: false; code: 'PAYLOAD_TOO_LARGE' | 'ABORTED' };

/**
 * The client's whole body, read before any upstream connection is taken: a client that trickles
 * its upload holds its own connection only, never one that other requests need. Bounded by the
 * largest body a route takes; the bytes go on exactly as sent (encoding included).
 */
export function readClientBody(req: IncomingMessage, res: ServerResponse): Promise<ClientBody> {
  if (/^100-continue$/i.test(req.headers.expect ?? '')) res.writeContinue();
  return new Promise<ClientBody>((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const done = (result: ClientBody) => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('close', onClose);
      resolve(result);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_API_BODY_BYTES) {
        req.pause();
        done({ ok: false, code: 'PAYLOAD_TOO_LARGE' });
      } else chunks.push(chunk);
    };
    const onEnd = () => done({ ok: true, body: Buffer.concat(chunks, size) });
    const onClose = () => {
      if (!req.complete) done({ ok: false, code: 'ABORTED' });
    };
    req.on('data', onData);
    req.once('end', onEnd);
    req.once('close', onClose);
  });
}

export interface ForwardRequest {
  upstream: Upstream;
  method: string;
  /** Path and query as the client sent them. */
  path: string;
  /** The client's request headers (lower-case names). */
  headers: IncomingMessage['headers'];
  /** The client's whole body; none for GET and HEAD. */
  body: Buffer | undefined;
  requestId: string;
  clientIp: string;
  /**
   * Headers the gateway puts on the response (security, request id, rate limits): [name, value,
   * …]. The request's own list: the service's headers are appended to it for the response head.
   */
  responseHeaders: string[];
  /** Lower-case names among `responseHeaders`: the service's own values of these are dropped. */
  ownHeaderNames: ReadonlySet<string>;
  timeoutMs: number;
  /**
   * Bytes of the response the gateway holds for a client that is not reading: past this, the
   * client's connection is cut. The service's response is always read at the service's pace, so
   * a slow reader never holds an upstream connection.
   */
  maxHeldBytes: number;
}

export type ForwardOutcome =
  | { ok: true; status: number; cutSlowReader?: boolean }
  | {
      ok: false;
      code: Extract<ErrorCode, 'SERVICE_UNAVAILABLE' | 'GATEWAY_TIMEOUT'>;
      message: string;
      cause: unknown;
    };

function errorCodeOf(err: unknown): string | undefined {
  if (typeof err !== 'object' || err === null) return undefined;
  const code: unknown = 'code' in err ? err.code : undefined;
  return typeof code === 'string' ? code : undefined;
}

/** The request headers the service gets: the forwarded ones, then the gateway's own. */
function upstreamHeaders(
  f: Pick<ForwardRequest, 'headers' | 'body' | 'requestId' | 'clientIp'>,
  token: string,
): string[] {
  const headers: string[] = [];
  for (const name of FORWARDED_REQUEST_HEADERS) {
    const v = f.headers[name];
    if (typeof v === 'string') headers.push(name, v);
  }
  if (f.body) headers.push('content-length', String(f.body.length));
  headers.push(
    'authorization',
    `Bearer ${token}`,
    'x-request-id',
    f.requestId,
    'x-forwarded-for',
    f.clientIp,
  );
  return headers;
}

/**
 * The response headers a client gets: the gateway's own ([name, value, …]), then the service's,
 * less connection-level ones, the gateway's own names and rate-limit headers.
 */
export function passedOnHeaders(
  own: readonly string[],
  ownNames: ReadonlySet<string>,
  service: Record<string, string | string[] | undefined>,
): string[] {
  return appendServiceHeaders(own.slice(), ownNames, service);
}

/** `passedOnHeaders` onto a list the caller owns (a request's own head): no copy of it. */
function appendServiceHeaders(
  out: string[],
  ownNames: ReadonlySet<string>,
  service: Record<string, string | string[] | undefined>,
): string[] {
  for (const name in service) {
    if (DROPPED_RESPONSE_HEADERS.has(name) || ownNames.has(name) || name.startsWith('x-ratelimit')) continue;
    const value = service[name];
    if (typeof value === 'string') out.push(name, value);
    else if (value !== undefined) for (const v of value) out.push(name, v);
  }
  return out;
}

/** The request headers a stream's request to the service carries (the client's, then the gateway's). */
export function streamRequestHeaders(
  clientHeaders: IncomingMessage['headers'],
  token: string,
  requestId: string,
  clientIp: string,
): string[] {
  return upstreamHeaders({ headers: clientHeaders, body: undefined, requestId, clientIp }, token);
}

/**
 * Sends the request to the service with an internal token and streams the response back as it
 * comes (no parsing, no re-encoding): the service's status and headers, with the gateway's own
 * headers in front. The service's response is read at the service's pace; what the client has
 * not taken yet waits in the gateway (up to `maxHeldBytes`), so the upstream connection is free
 * for the next request as soon as the service is done. Settles with what happened, for the
 * caller to log and count; an upstream failure before any byte of the response is for the
 * caller to turn into an envelope.
 */
export function forward(res: ServerResponse, f: ForwardRequest, token: string): Promise<ForwardOutcome> {
  return new Promise<ForwardOutcome>((resolve) => {
    const forwarding = new Forwarding(res, f, resolve);
    try {
      f.upstream.pool.dispatch(
        {
          method: f.method,
          path: f.path,
          headers: upstreamHeaders(f, token),
          body: f.body,
          headersTimeout: f.timeoutMs,
          bodyTimeout: f.timeoutMs,
        },
        forwarding,
      );
    } catch (err) {
      forwarding.settle(failure(err, res, f.upstream.name, 0));
    }
  });
}

/**
 * One forwarded request's handler: its state in fields and its steps as methods, so a request
 * costs one object rather than a closure per step (this runs for every request of the API).
 */
class Forwarding implements Dispatcher.DispatchHandler {
  private status = 0;
  private done = false;
  private controller: Dispatcher.DispatchController | undefined;
  /** The client closed its connection before its response was through. */
  private clientGone = false;
  /** The client went away mid-request or mid-response: stop the service's response too. */
  private readonly onClientGone = (): void => {
    if (this.res.writableFinished) return;
    this.clientGone = true;
    this.controller?.abort(new Error('client closed the connection'));
  };

  constructor(
    private readonly res: ServerResponse,
    private readonly f: ForwardRequest,
    private readonly resolve: (outcome: ForwardOutcome) => void,
  ) {
    res.on('close', this.onClientGone);
  }

  settle(outcome: ForwardOutcome): void {
    if (this.done) return;
    this.done = true;
    this.res.removeListener('close', this.onClientGone);
    this.resolve(outcome);
  }

  onRequestStart(c: Dispatcher.DispatchController): void {
    this.controller = c;
    if (this.res.destroyed) this.onClientGone();
  }

  onResponseStart(
    _c: Dispatcher.DispatchController,
    statusCode: number,
    headers: Record<string, string | string[] | undefined>,
  ): void {
    this.status = statusCode;
    // The head is this request's own list: the service's headers go on after the gateway's. A
    // head node:http refuses leaves the list as it was, for the refusal the caller sends.
    const head = this.f.responseHeaders;
    const own = head.length;
    try {
      this.res.writeHead(statusCode, appendServiceHeaders(head, this.f.ownHeaderNames, headers));
    } catch (err) {
      head.length = own;
      throw err;
    }
    // An event stream's head goes out at once: its first event may be a while coming.
    const type = headers['content-type'];
    if ((typeof type === 'string' ? type : String(type ?? '')).startsWith('text/event-stream'))
      this.res.flushHeaders();
  }

  onResponseData(c: Dispatcher.DispatchController, chunk: Buffer): void {
    const { res } = this;
    res.write(chunk);
    if (res.writableLength > this.f.maxHeldBytes) {
      // Settled first: aborting reports an error to onResponseError at once.
      this.settle({ ok: true, status: this.status, cutSlowReader: true });
      c.abort(new Error('the client is not reading its response'));
      res.destroy();
    }
  }

  onResponseEnd(): void {
    this.res.end();
    this.settle({ ok: true, status: this.status });
  }

  onResponseError(_c: Dispatcher.DispatchController, err: Error): void {
    // Ended here already (a slow reader cut): nothing more to tell the client.
    if (this.done) return;
    // The client left first: nothing failed on the way, and no one is left to tell. Recorded as
    // nginx records it (499), never as the service failing: a client's own timeout or a closed
    // tab is not a 5xx in the metrics or an error in the log.
    if (this.clientGone) {
      this.settle({ ok: true, status: CLIENT_GONE_STATUS });
      return;
    }
    this.settle(failure(err, this.res, this.f.upstream.name, this.status));
  }
}

/** What a client is told when a service cannot be reached. */
export const serviceUnavailable = (service: string): string =>
  `The ${service} service is unavailable. Retry shortly.`;

function failure(err: unknown, res: ServerResponse, upstream: string, status: number): ForwardOutcome {
  if (res.headersSent) {
    // Part of the response is out: the client sees a cut connection, never a second status.
    res.destroy();
    return { ok: true, status };
  }
  const code = errorCodeOf(err);
  if (code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT') {
    return {
      ok: false,
      code: 'GATEWAY_TIMEOUT',
      message: `The ${upstream} service did not respond in time.`,
      cause: err,
    };
  }
  return {
    ok: false,
    code: 'SERVICE_UNAVAILABLE',
    message: serviceUnavailable(upstream),
    cause: err,
  };
}
