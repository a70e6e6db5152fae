import { randomUUID } from 'node:crypto';
import {
  STATUS_CODES,
  createServer,
  type IncomingMessage,
  ServerResponse,
  type RequestListener,
  type Server,
} from 'node:http';
import type { Socket } from 'node:net';
import { ERROR_STATUS, type ErrorCode } from '@signal/contracts';
import { securityHeaderList } from './base-app';
import { errorResponse, requestIdOf } from './middleware';

export interface RunningServer {
  server: Server;
  port: number;
  url: string;
  /** Stops accepting, lets in-flight requests finish (up to `graceMs`), then cuts the rest. */
  close(graceMs?: number): Promise<void>;
}

/** The code a CONNECT request is refused under (Node hands it over as a socket, not a request). */
const CONNECT_REFUSED = 'SIGNAL_CONNECT_REFUSED';

/** How long an idle keep-alive connection stays open: longer than typical load-balancer idle timeouts, so the balancer closes first. */
export const KEEP_ALIVE_TIMEOUT_MS = 65_000;

/** Extra response headers for a request refused before any listener sees it, by the peer's address. */
export type RefusalHeaders = (remoteAddress: string | undefined) => Promise<Array<[string, string]>>;

/** What a service serves: a request listener, or one with the server-level hooks below. */
export type HttpEntry =
  | RequestListener
  | {
      listener: RequestListener;
      /**
       * Requests with `Expect: 100-continue`. Without it Node invites every body at once; with
       * it the listener decides (`res.writeContinue()` when it wants the body), so an upload it
       * would refuse anyway is refused before it is sent.
       */
      checkContinue?: RequestListener;
      /** Sees every new connection before node:http reads from it (per-client connection bounds). */
      onConnection?: (socket: Socket) => void;
      /**
       * Extra response headers for a request node:http could not parse (the gateway's rate-limit
       * headers: every response carries them), by the connection's peer address.
       */
      unparsableHeaders?: RefusalHeaders;
      /**
       * How long a connection may make no progress (nothing read, nothing written) while a
       * request is open: a client that stops reading its response is cut after this.
       */
      stalledMs?: number;
      /**
       * Called when the server starts to close, before it waits for open requests: long-lived
       * responses (event streams) end here, with a word to their clients, instead of being cut
       * when the grace runs out.
       */
      onClose?: () => void;
    };

export async function startHttpServer(
  entry: HttpEntry,
  port: number,
  host = '127.0.0.1',
): Promise<RunningServer> {
  const { listener, checkContinue, onConnection, unparsableHeaders, stalledMs, onClose } =
    typeof entry === 'function' ? { listener: entry } : entry;
  // Node responds to an HTTP/1.1 request without Host with a bare 400 (no envelope, no request
  // id); it is refused here instead, like every other malformed request.
  // Every response carries the security headers, the refusals written here below Express too.
  const securityList = securityHeaderList();
  const server = createServer(
    { requireHostHeader: false },
    withHost(listener, unparsableHeaders, securityList),
  );
  if (onConnection) server.on('connection', onConnection);
  if (checkContinue) server.on('checkContinue', withHost(checkContinue, unparsableHeaders, securityList));
  server.keepAliveTimeout = KEEP_ALIVE_TIMEOUT_MS;
  server.headersTimeout = 66_000;
  server.requestTimeout = 30_000;
  if (stalledMs !== undefined) server.timeout = stalledMs;
  const security = pairsOf(securityList);
  const refuse = (err: Error & { code?: string }, socket: Socket) => {
    if (!unparsableHeaders) return respondToUnparsable(err, socket, security);
    unparsableHeaders(socket.remoteAddress).then(
      (headers) => respondToUnparsable(err, socket, [...security, ...headers]),
      () => respondToUnparsable(err, socket, security),
    );
  };
  server.on('clientError', refuse);
  // A request whose body stopped coming is told so (the 400 of a request not received in time)
  // before its connection closes, rather than cut without a word once it stalled `stalledMs`.
  // A request received whole is the service's to answer, however long its turn takes (a login
  // waiting for password work): the quiet is the service's, not the client's, and the service
  // bounds its own waits. Any other stalled connection (a response its client stopped reading,
  // a keep-alive connection idle past its time, a head sent in part) is cut, as node:http does.
  server.on('timeout', (socket: Socket) => {
    const exchange = openExchange(socket);
    if (!exchange || exchange.headersSent) socket.destroy();
    else if (!exchange.req.complete)
      refuse(Object.assign(new Error('stalled'), { code: 'ERR_HTTP_REQUEST_TIMEOUT' }), socket);
  });
  // CONNECT asks for a tunnel, which nothing here is: Node would drop the connection without a
  // word. It gets the 400 envelope instead, and the connection ends (the bytes that follow are
  // the tunnel's, not HTTP).
  server.on('connect', (_req: IncomingMessage, socket: Socket) =>
    refuse(Object.assign(new Error('CONNECT'), { code: CONNECT_REFUSED }), socket),
  );
  // An expectation other than 100-continue: Node would send a bare 417. RFC 9110 §10.1.1 lets a
  // server ignore it, so the request is served as if it had none (with the envelope on refusal).
  server.on('checkExpectation', withHost(listener, unparsableHeaders, securityList));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('the server is not listening on TCP');
  const actual = address.port;
  return {
    server,
    port: actual,
    url: `http://${host}:${actual}`,
    close: (graceMs = 5000) =>
      new Promise<void>((resolve) => {
        onClose?.();
        const timer = setTimeout(() => server.closeAllConnections(), graceMs);
        server.close(() => {
          clearTimeout(timer);
          resolve();
        });
        server.closeIdleConnections();
      }),
  };
}

/**
 * Headers a request carries once. Of several, node:http keeps the first Host, Authorization and
 * Content-Type and joins the others' values with commas: a proxy in front that reads another
 * line authenticates (or parses) the request as something else, and a joined key or id is one
 * the client never sent.
 */
const ONCE = [
  'Host',
  'Authorization',
  'Content-Type',
  'Content-Encoding',
  'Idempotency-Key',
  'Last-Event-ID',
];
const ONCE_LOWER = ONCE.map((name) => name.toLowerCase());
const ONCE_LENGTHS = new Set(ONCE.map((name) => name.length));

/** The first header of `ONCE` the request carries more than once, as its name is spelled. */
function repeatedHeader(raw: readonly string[]): string | undefined {
  let seen = 0;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!;
    if (!ONCE_LENGTHS.has(name.length)) continue;
    const k = ONCE_LOWER.indexOf(name.toLowerCase());
    if (k === -1) continue;
    if (seen & (1 << k)) return ONCE[k];
    seen |= 1 << k;
  }
  return undefined;
}

/** What the request's header lines break of the rules below, if anything. */
function headerProblemOf(
  req: IncomingMessage,
): { message: string; detail: { field: string; message: string } } | undefined {
  if (req.headers.host === undefined && req.httpVersion === '1.1')
    return { message: 'The Host header is required.', detail: { field: 'Host', message: 'required' } };
  const repeated = repeatedHeader(req.rawHeaders);
  if (repeated === undefined) return undefined;
  return {
    message: `A request carries one ${repeated} header; this one has several.`,
    detail: { field: repeated, message: 'sent more than once' },
  };
}

/**
 * HTTP/1.1 requires one Host (RFC 9112 §3.2: a server MUST answer 400 to a request without it
 * or with more than one), and a field that is not a list comes once (RFC 9110 §5.3): such a
 * request gets the 400 envelope (with the extra headers a refused request carries: the gateway's
 * rate-limit headers) and the connection ends. Two Host or Authorization lines are what a request
 * smuggled past a proxy that reads the other one looks like.
 */
function withHost(
  listener: RequestListener,
  refusalHeaders: RefusalHeaders | undefined,
  security: readonly string[],
): RequestListener {
  return (req, res) => {
    const problem = headerProblemOf(req);
    if (!problem) return listener(req, res);
    const requestId = requestIdOf(req.headers['x-request-id']);
    const { status, body } = errorResponse(
      { code: 'VALIDATION_ERROR', message: problem.message, details: [problem.detail] },
      requestId,
    );
    const send = (extra: Array<[string, string]>) => {
      for (let i = 0; i < security.length; i += 2) res.setHeader(security[i]!, security[i + 1]!);
      for (const [name, value] of extra) res.setHeader(name, value);
      res.writeHead(status, {
        'Content-Type': 'application/json; charset=utf-8',
        'Content-Length': Buffer.byteLength(body),
        'X-Request-Id': requestId,
        Connection: 'close',
      });
      res.end(body);
    };
    if (!refusalHeaders) return send([]);
    refusalHeaders(req.socket.remoteAddress).then(send, () => send([]));
  };
}

/** The response of the request whose head was read on this socket, while that exchange lasts. */
function openExchange(socket: Socket): ServerResponse | undefined {
  const current: unknown = Reflect.get(socket, '_httpMessage');
  return current instanceof ServerResponse ? current : undefined;
}

/** `[name, value, name, value, …]` as pairs. */
function pairsOf(flat: readonly string[]): Array<[string, string]> {
  const pairs: Array<[string, string]> = [];
  for (let i = 0; i + 1 < flat.length; i += 2) pairs.push([flat[i]!, flat[i + 1]!]);
  return pairs;
}

/**
 * Whether the request on this socket already has its response under way: a request whose body
 * stalled after the service responded to it (a body it did not need, or its own timeout) then hit
 * the request timeout, and a second response on the connection would be read as the response to
 * the client's next request. Node's own handler makes the same check on the same field.
 */
function responseStarted(socket: Socket): boolean {
  return openExchange(socket)?.headersSent === true;
}

/**
 * Requests Node's HTTP parser refuses (a space or a control byte in the request target, broken
 * chunking, oversized headers) never reach Express; Node would respond with a bare `400 Bad Request`
 * and no body. Respond with the error envelope instead, then close (the stream cannot be trusted).
 */
function respondToUnparsable(
  err: Error & { code?: string },
  socket: Socket,
  extraHeaders: Array<[string, string]>,
): void {
  if (!socket.writable || err.code === 'ECONNRESET' || responseStarted(socket)) {
    socket.destroy();
    return;
  }
  const [code, message]: [ErrorCode, string] =
    err.code === 'HPE_HEADER_OVERFLOW'
      ? ['PAYLOAD_TOO_LARGE', 'The request headers are too large.']
      : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? ['VALIDATION_ERROR', 'The request was not received in time.']
        : err.code === CONNECT_REFUSED
          ? ['VALIDATION_ERROR', 'CONNECT is not served here: this is an API, not a proxy.']
          : ['VALIDATION_ERROR', 'The request is not valid HTTP.'];
  const requestId = `req_${randomUUID()}`;
  const body = JSON.stringify({ success: false, error: { code, message, request_id: requestId } });
  socket.end(
    `HTTP/1.1 ${ERROR_STATUS[code]} ${STATUS_CODES[ERROR_STATUS[code]] ?? 'Error'}\r\n` +
      'Content-Type: application/json; charset=utf-8\r\n' +
      `Content-Length: ${Buffer.byteLength(body)}\r\n` +
      `X-Request-Id: ${requestId}\r\n` +
      extraHeaders.map(([name, value]) => `${name}: ${value}\r\n`).join('') +
      'Connection: close\r\n\r\n' +
      body,
  );
}
