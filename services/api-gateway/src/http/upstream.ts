import type { IncomingMessage, ServerResponse } from 'node:http';
import { PassThrough, type Readable } from 'node:stream';
import type { ErrorCode } from '@signal/contracts';
import { hasBody, isJsonMediaType } from '@signal/service-kit';
import { Pool, type Dispatcher } from 'undici';
import type { ApiAnswer, ApiRequest } from './exchange';
import { isBodilessRequest, RawUpstreamPool, type Exchange } from './raw-upstream';

/** Answer headers the gateway never passes on: connection-level ones and those it sets itself. */
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
  'content-length',
  // The services' body reader decodes gzip, deflate and br, and refuses other codings with 415.
  'content-encoding',
  'idempotency-key',
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
export function forwardedBytes(req: ApiRequest, path: string): number {
  let n = path.length + req.method.length;
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
  /** Requests with a body (and anything the raw client does not take). */
  pool: Pool;
  /** GET and HEAD: the lean client (see raw-upstream.ts for why), unless config chose undici. */
  raw?: RawUpstreamPool;
}

export interface UpstreamOptions {
  connections: number;
  /** Requests in flight per connection; undici sends only idempotent ones (GET, HEAD) behind another. */
  pipelining: number;
  /** GET and HEAD on the raw client (config `UPSTREAM_CLIENT`). */
  rawClient: boolean;
  /** GET and HEAD in flight per connection on the raw client (see raw-upstream.ts). */
  rawPipelining: number;
}

export function createUpstream(name: string, url: string, options: UpstreamOptions): Upstream {
  const pool = new Pool(new URL(url).origin, {
    connections: options.connections,
    pipelining: options.pipelining,
    // Connections stay open (the services keep theirs 65 s) so requests never wait for a handshake.
    keepAliveTimeout: 30_000,
    keepAliveMaxTimeout: 60_000,
    connectTimeout: 2000,
  });
  const raw = options.rawClient
    ? RawUpstreamPool.forOrigin(url, {
        connections: options.connections,
        pipelining: options.rawPipelining,
        idleMs: 30_000,
        connectTimeoutMs: 2000,
      })
    : undefined;
  return { name, audience: name, pool, raw };
}

/** Closes both clients of an upstream. */
export async function closeUpstream(upstream: Upstream): Promise<void> {
  await Promise.all([upstream.pool.close(), upstream.raw?.close()]);
}

export interface ForwardRequest {
  upstream: Upstream;
  /** Path and query as the client sent them. */
  path: string;
  accountId: string;
  requestId: string;
  clientIp: string;
  /** Headers the gateway puts on the answer (security, request id, rate limits): [name, value, …]. */
  answerHeaders: string[];
  /** Lower-case names among `answerHeaders`: the service's own values of these are dropped. */
  ownHeaderNames: ReadonlySet<string>;
  timeoutMs: number;
}

export type ForwardOutcome =
  | { ok: true; status: number }
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

/**
 * The client's body as undici should get it. undici destroys the body stream it was handed when
 * the service answers before taking all of it (a 415 or 404 on a large upload), and destroying
 * `req` itself cut the client's connection mid-body: the client's next request on that
 * keep-alive connection went unanswered (the "no answer within 10 s under load" of issue 14).
 * A pass-through takes that destroy instead, and the rest of the client's body is drained, as
 * Node does for a body nobody read.
 */
function upstreamBody(req: IncomingMessage): Readable {
  const body = new PassThrough();
  req.pipe(body);
  req.once('error', (err) => body.destroy(err));
  body.once('close', () => {
    req.unpipe(body);
    if (!req.complete) req.resume();
  });
  return body;
}

/** The client's body, invited first when the client waits to be asked (`Expect: 100-continue`). */
function invited(req: ApiRequest): Readable | undefined {
  req.sendContinue?.();
  return req.body();
}

/** A request node:http parsed, as the API path and `forward` read it. */
export function fromNodeRequest(req: IncomingMessage, res?: ServerResponse): ApiRequest {
  return {
    method: req.method ?? 'GET',
    url: req.url ?? '/',
    headers: req.headers,
    remoteAddress: req.socket.remoteAddress,
    body: () => upstreamBody(req),
    bodyComplete: () => req.complete,
    sendContinue:
      res && /^100-continue$/i.test(req.headers.expect ?? '') ? () => res.writeContinue() : undefined,
  };
}

/** The largest body a public route takes (the webhooks service reads at most 64 KiB). */
export const MAX_API_BODY_BYTES = 64 * 1024;

/**
 * Why a body is refused before any of it is read, or undefined: declared larger than any route
 * takes (413), or not JSON (415: what the services' body reader would answer once it had read it
 * all). Refusing on the headers answers at once and never invites an upload that would be dropped.
 */
export function bodyRefusal(
  headers: ApiRequest['headers'],
): 'PAYLOAD_TOO_LARGE' | 'UNSUPPORTED_MEDIA_TYPE' | undefined {
  if (!hasBody(headers)) return undefined;
  if (!isJsonMediaType(headers['content-type'])) return 'UNSUPPORTED_MEDIA_TYPE';
  if (Number(headers['content-length'] ?? 0) > MAX_API_BODY_BYTES) return 'PAYLOAD_TOO_LARGE';
  return undefined;
}

/**
 * Streams the request to the service with an internal token and streams the answer back
 * as it comes (no parsing, no re-encoding): the service's status and headers, with the
 * gateway's own headers in front. A plain dispatch handler (no stream wrappers, no async
 * resource per request): the answer's chunks go straight to the client's socket, with
 * back-pressure both ways. Settles with what happened, for the caller to log and count; an
 * upstream failure before any byte of the answer is for the caller to turn into an envelope.
 */
export function forward(
  req: ApiRequest,
  res: ApiAnswer,
  f: ForwardRequest,
  token: string,
): Promise<ForwardOutcome> {
  const method = req.method;
  // GET and HEAD go on without a body (a client's body on them is read and dropped), so
  // without its framing either: the service would wait for bytes that never come.
  const bodiless = method === 'GET' || method === 'HEAD';
  const headers: string[] = [];
  for (const name of FORWARDED_REQUEST_HEADERS) {
    const v = req.headers[name];
    if (typeof v === 'string' && !(bodiless && name === 'content-length')) headers.push(name, v);
  }
  headers.push(
    'authorization',
    `Bearer ${token}`,
    'x-request-id',
    f.requestId,
    'x-forwarded-for',
    f.clientIp,
  );
  return new Promise<ForwardOutcome>((resolve) => {
    let status = 0;
    let done = false;
    const settle = (outcome: ForwardOutcome) => {
      if (done) return;
      done = true;
      res.off('close', onClientGone);
      resolve(outcome);
    };
    /** The answer's head: the gateway's headers, then the service's own that it passes on. */
    const writeHead = (statusCode: number, answer: readonly string[]) => {
      status = statusCode;
      const out = f.answerHeaders.slice();
      // The service answered before the client's body was all in (it needed no more, or timed
      // out): the rest cannot be told from the next request, so this connection ends here.
      if (!bodiless && req.bodyComplete?.() === false) out.push('Connection', 'close');
      for (let i = 0; i < answer.length; i += 2) {
        const name = answer[i]!;
        if (
          DROPPED_RESPONSE_HEADERS.has(name) ||
          f.ownHeaderNames.has(name) ||
          name.startsWith('x-ratelimit')
        )
          continue;
        out.push(name, answer[i + 1]!);
      }
      res.writeHead(statusCode, out);
    };
    let controller: Dispatcher.DispatchController | undefined;
    let exchange: Exchange | undefined;
    // The client went away mid-answer: stop the service's answer too.
    const onClientGone = () => {
      if (res.writableFinished) return;
      controller?.abort(new Error('client closed the connection'));
      exchange?.abort();
    };
    res.once('close', onClientGone);
    const raw = f.upstream.raw;
    if (raw && isBodilessRequest(method, f.path, headers)) {
      exchange = raw.request(
        { method: method === 'HEAD' ? 'HEAD' : 'GET', path: f.path, headers, timeoutMs: f.timeoutMs },
        {
          onStart(statusCode, answer) {
            writeHead(statusCode, answer);
            res.on('drain', () => exchange?.resume());
          },
          onData: (chunk) => res.write(chunk),
          onEnd() {
            res.end();
            settle({ ok: true, status });
          },
          onError(err) {
            settle(failure(err, res, f.upstream.name, status));
          },
        },
      );
      if (res.destroyed) exchange.abort();
      return;
    }
    const handler: Dispatcher.DispatchHandler = {
      onRequestStart(c) {
        controller = c;
        if (res.destroyed) c.abort(new Error('client closed the connection'));
      },
      onResponseStart(c, statusCode, answer) {
        const flat: string[] = [];
        for (const name in answer) {
          const value = answer[name];
          if (typeof value === 'string') flat.push(name, value);
          else if (value !== undefined) for (const v of value) flat.push(name, v);
        }
        writeHead(statusCode, flat);
        res.on('drain', () => c.resume());
      },
      onResponseData(c, chunk) {
        if (!res.write(chunk)) c.pause();
      },
      onResponseEnd() {
        res.end();
        settle({ ok: true, status });
      },
      onResponseError(_c, err) {
        settle(failure(err, res, f.upstream.name, status));
      },
    };
    try {
      f.upstream.pool.dispatch(
        {
          method,
          path: f.path,
          headers,
          body: bodiless ? undefined : invited(req),
          headersTimeout: f.timeoutMs,
          bodyTimeout: f.timeoutMs,
        },
        handler,
      );
    } catch (err) {
      settle(failure(err, res, f.upstream.name, status));
    }
  });
}

function failure(err: unknown, res: ApiAnswer, upstream: string, status: number): ForwardOutcome {
  if (res.headersSent) {
    // Part of the answer is out: the client sees a cut connection, never a second status.
    res.destroy();
    return { ok: true, status };
  }
  const code = errorCodeOf(err);
  if (
    code === 'UND_ERR_HEADERS_TIMEOUT' ||
    code === 'UND_ERR_BODY_TIMEOUT' ||
    code === 'UPSTREAM_HEADERS_TIMEOUT' ||
    code === 'UPSTREAM_BODY_TIMEOUT'
  ) {
    return {
      ok: false,
      code: 'GATEWAY_TIMEOUT',
      message: `The ${upstream} service did not answer in time.`,
      cause: err,
    };
  }
  return {
    ok: false,
    code: 'SERVICE_UNAVAILABLE',
    message: `The ${upstream} service is unavailable. Retry shortly.`,
    cause: err,
  };
}
