import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { ConnectionFront } from '@signal/service-kit';
import type { ApiAnswer, ApiRequest } from './exchange';
import { HEADER_NAME, hasForbiddenChar } from './header-syntax';

/**
 * The API path's own HTTP/1.1 front, in front of node:http on the same listening socket.
 *
 * Why our own code and not node:http alone: measured with `infra/bench/experiments/proxy-floor.mjs`,
 * node:http's server objects (IncomingMessage, ServerResponse, their streams and events) cost the
 * gateway ~55 µs of the ~140 µs it spends per proxied request; raw sockets both ways cost 86 µs,
 * nginx 68 µs. So the front takes only the plain shape of the hot path and nothing else: a
 * complete head of `GET` or `HEAD` on a route of the API path (the same `takesApiPath` as
 * node:http's listener asks), HTTP/1.1, CRLF line ends, a Host, no body (no Transfer-Encoding,
 * no Content-Length but 0), no Expect or Upgrade, no header twice, nothing outside visible
 * ASCII. Anything else, at any request boundary — a partial head, a POST, a malformed line, a
 * dashboard, session or health request —
 * hands the connection, with the bytes read so far put back, to node:http for the rest of its
 * life. So every parsing ambiguity (request smuggling, chunked bodies, limits, timeouts of slow
 * heads, 400 answers) stays node:http's, and this front only ever sees requests both would read
 * the same way.
 */

export interface RawFrontOptions {
  /** Serves one request the front took (the API path's handler). */
  serve(request: ApiRequest, answer: ApiAnswer): void;
  /** Does a parsed request take the API path? (else the connection goes to node:http) */
  takes(head: RawRequestHead): boolean;
  /** Idle time after an answer before the connection is closed (node:http's keepAliveTimeout). */
  keepAliveMs: number;
  /**
   * Answer headers the API path puts first in every answer ([name, value, …], the same string
   * objects each time: its security headers), checked and written out once here. An answer
   * whose head starts with them gets the prepared text instead of their check per answer (~700
   * bytes of values, ~5 % of the front's CPU per request).
   */
  leadingHeaders?: readonly string[];
  /** Counted: a request served here, a connection handed to node:http. */
  onRequest?: () => void;
  onHandOff?: () => void;
}

/** A parsed request head the front takes. */
export interface RawRequestHead {
  method: 'GET' | 'HEAD';
  url: string;
  /** Lower-case names, each at most once. */
  headers: Record<string, string>;
  /** The client asked to close after this answer. */
  close: boolean;
}

/** The longest head the front takes (more: node:http, which allows 16 KiB). */
const MAX_HEAD_BYTES = 8 * 1024;
const MAX_HEADERS = 64;
/** Bytes read ahead of the answer in progress (pipelined requests) before the socket is paused. */
const MAX_READ_AHEAD = 64 * 1024;
const HEAD_END = Buffer.from('\r\n\r\n');
/** An answer's first piece up to this size is written in one buffer with its head. */
const JOINED_WRITE_BYTES = 16 * 1024;
const REQUEST_LINE = /^(GET|HEAD) (\/[!-~]*) HTTP\/1\.1$/;

/** Is every character of a header value visible ASCII, space or tab? */
function isPlainValue(value: string): boolean {
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if ((c < 32 && c !== 9) || c > 126) return false;
  }
  return true;
}

/** Trims spaces and tabs only (String.prototype.trim also takes characters this front refuses). */
function trimOws(value: string): string {
  let start = 0;
  let end = value.length;
  while (start < end && (value.charCodeAt(start) === 32 || value.charCodeAt(start) === 9)) start++;
  while (end > start && (value.charCodeAt(end - 1) === 32 || value.charCodeAt(end - 1) === 9)) end--;
  return value.slice(start, end);
}

/**
 * A request head (without its final CRLF CRLF) as the front takes it, or undefined for anything
 * node:http is to read instead.
 */
export function parseRequestHead(head: string): RawRequestHead | undefined {
  const lines = head.split('\r\n');
  if (lines.length - 1 > MAX_HEADERS) return undefined;
  const line = REQUEST_LINE.exec(lines[0]!);
  if (!line) return undefined;
  const method = line[1] === 'HEAD' ? 'HEAD' : 'GET';
  const headers: Record<string, string> = {};
  let close = false;
  for (let i = 1; i < lines.length; i++) {
    const text = lines[i]!;
    const colon = text.indexOf(':');
    if (colon <= 0) return undefined;
    const name = text.slice(0, colon).toLowerCase();
    const raw = text.slice(colon + 1);
    if (!HEADER_NAME.test(name) || !isPlainValue(raw) || name in headers) return undefined;
    const value = trimOws(raw);
    switch (name) {
      case 'transfer-encoding':
      case 'expect':
      case 'upgrade':
        return undefined;
      case 'content-length':
        if (value !== '0') return undefined;
        break;
      case 'connection': {
        const option = value.toLowerCase();
        if (option === 'close') close = true;
        else if (option !== 'keep-alive') return undefined;
        break;
      }
    }
    headers[name] = value;
  }
  if (headers.host === undefined) return undefined;
  return { method, url: line[2]!, headers, close };
}

/** node:http throws on these too (ERR_INVALID_HTTP_TOKEN, ERR_INVALID_CHAR). */
function checkAnswerHeader(name: string, value: string): void {
  if (!HEADER_NAME.test(name) || hasForbiddenChar(value))
    throw new Error(`invalid answer header ${JSON.stringify(name)}`);
}

function isNamed(name: string, lowerCase: string): boolean {
  return name.length === lowerCase.length && name.toLowerCase() === lowerCase;
}

/** `RawFrontOptions.leadingHeaders`, checked and written out once. */
class LeadingHeaders {
  readonly text: string;
  readonly hasLength: boolean;
  readonly hasDate: boolean;

  constructor(readonly names: readonly string[]) {
    let text = '';
    for (let i = 0; i + 1 < names.length; i += 2) {
      checkAnswerHeader(names[i]!, names[i + 1]!);
      text += `${names[i]}: ${names[i + 1]}\r\n`;
    }
    this.text = text;
    this.hasLength = names.some((n, i) => i % 2 === 0 && isNamed(n, 'content-length'));
    this.hasDate = names.some((n, i) => i % 2 === 0 && isNamed(n, 'date'));
  }

  /** Does `headers` start with these? (the same strings: a pointer comparison each) */
  startsOf(headers: readonly string[]): boolean {
    const names = this.names;
    if (names.length === 0 || headers.length < names.length) return false;
    for (let i = 0; i < names.length; i++) if (headers[i] !== names[i]) return false;
    return true;
  }
}

let dateSecond = -1;
let dateText = '';
/** The Date header's value, made once a second. */
function httpDate(): string {
  const now = Date.now();
  const second = Math.floor(now / 1000);
  if (second !== dateSecond) {
    dateSecond = second;
    dateText = new Date(now).toUTCString();
  }
  return dateText;
}

/** One answer on a raw connection, written the way node:http's ServerResponse would write it. */
class RawAnswer implements ApiAnswer {
  headersSent = false;
  writableFinished = false;
  private head = '';
  private chunked = false;
  private bodiless = false;
  private closed = false;
  /**
   * Its listeners, in two lists rather than an EventEmitter: the API path adds a 'close' and a
   * 'drain' listener to every answer and takes the first off again, and EventEmitter's add,
   * `once` wrapper and remove were ~4 % of the gateway's busy time (perf, scenario b).
   */
  private closeListeners: Array<() => void> = [];
  private drainListeners: Array<() => void> = [];

  constructor(
    private readonly conn: RawConnection,
    private readonly method: 'GET' | 'HEAD',
  ) {}

  /** 'close' comes once, so every listener of it is a once-listener. */
  once(_event: 'close', listener: () => void): this {
    if (!this.closed) this.closeListeners.push(listener);
    return this;
  }

  off(_event: 'close', listener: () => void): this {
    const at = this.closeListeners.indexOf(listener);
    if (at >= 0) this.closeListeners.splice(at, 1);
    return this;
  }

  on(_event: 'drain', listener: () => void): this {
    this.drainListeners.push(listener);
    return this;
  }

  /** The client's socket took what was waiting: whoever held back goes on. */
  emitDrain(): void {
    for (const listener of this.drainListeners) listener();
  }

  get destroyed(): boolean {
    return this.conn.socket.destroyed;
  }

  writeHead(status: number, headers: string[]): this {
    if (this.headersSent) throw new Error('the answer head was written already');
    let out = `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'unknown'}\r\n`;
    let hasLength = false;
    let hasDate = false;
    const leading = this.conn.front.leadingHeaders;
    const from = leading.startsOf(headers) ? leading.names.length : 0;
    if (from > 0) {
      out += leading.text;
      hasLength = leading.hasLength;
      hasDate = leading.hasDate;
    }
    for (let i = from; i < headers.length; i += 2) {
      const name = headers[i]!;
      const value = headers[i + 1]!;
      checkAnswerHeader(name, value);
      if (isNamed(name, 'content-length')) hasLength = true;
      else if (isNamed(name, 'date')) hasDate = true;
      out += `${name}: ${value}\r\n`;
    }
    if (!hasDate) out += `Date: ${httpDate()}\r\n`;
    out += this.conn.closeAfterAnswer() ? 'Connection: close\r\n' : this.conn.front.keepAliveLines;
    this.bodiless = this.method === 'HEAD' || status === 204 || status === 304;
    if (!this.bodiless && !hasLength) {
      this.chunked = true;
      out += 'Transfer-Encoding: chunked\r\n';
    }
    this.head = `${out}\r\n`;
    this.headersSent = true;
    return this;
  }

  write(chunk: Buffer): boolean {
    if (this.writableFinished || this.destroyed) return false;
    if (this.bodiless || chunk.length === 0) return this.flushHead();
    const socket = this.conn.socket;
    if (this.head && !this.chunked && chunk.length <= JOINED_WRITE_BYTES) {
      // The head and a small first piece (most answers whole) in one buffer and one write,
      // rather than a corked pair (the Writable's buffering and a writev of a string and a
      // buffer, ~2 % of the gateway's CPU per request).
      const head = this.head;
      this.head = '';
      const joined = Buffer.allocUnsafe(head.length + chunk.length);
      joined.write(head, 0, 'latin1');
      chunk.copy(joined, head.length);
      return socket.write(joined);
    }
    socket.cork();
    this.flushHead();
    if (this.chunked) socket.write(`${chunk.length.toString(16)}\r\n`, 'latin1');
    let ok = socket.write(chunk);
    if (this.chunked) ok = socket.write('\r\n', 'latin1');
    socket.uncork();
    return ok;
  }

  end(body?: string): this {
    if (this.writableFinished) return this;
    if (!this.headersSent) this.writeHead(200, []);
    const socket = this.conn.socket;
    if (!socket.destroyed) {
      socket.cork();
      this.flushHead();
      if (body !== undefined && body.length > 0 && !this.bodiless) {
        if (this.chunked) socket.write(`${Buffer.byteLength(body).toString(16)}\r\n${body}\r\n`);
        else socket.write(body);
      }
      if (this.chunked) socket.write('0\r\n\r\n', 'latin1');
      socket.uncork();
    }
    this.writableFinished = true;
    this.conn.answered(this);
    this.emitClose();
    return this;
  }

  destroy(): this {
    this.conn.socket.destroy();
    return this;
  }

  /** 'close' once: the answer ended, or its connection did. */
  emitClose(): void {
    if (this.closed) return;
    this.closed = true;
    const listeners = this.closeListeners;
    this.closeListeners = [];
    for (const listener of listeners) listener();
  }

  private flushHead(): boolean {
    if (!this.head) return !this.conn.socket.writableNeedDrain;
    const head = this.head;
    this.head = '';
    return this.conn.socket.write(head, 'latin1');
  }
}

/** One client connection while the front has it. */
class RawConnection {
  private buffered: Buffer | undefined;
  private current: RawAnswer | undefined;
  /** The client sent its FIN: finish what is in progress, then close. */
  private ended = false;
  /** Shutting down, or the client asked: close after the answer in progress. */
  private closing = false;
  private gone = false;
  /** The client has not read the last answer yet: the next request waits for it. */
  private waitingForDrain = false;
  /** What the front listens to while it has the socket (taken off again at the hand-off). */
  private readonly listeners: ReadonlyArray<readonly [string, (chunk: Buffer) => void]> = [
    ['data', (chunk) => this.take(chunk)],
    ['end', () => this.clientEnded()],
    ['close', () => this.closed()],
    ['drain', () => this.drained()],
    // Idle for keepAliveMs (node:http's keepAliveTimeout); an answer in progress has no time
    // limit here, as in node:http (the upstream client's own timeouts bound it). The socket's
    // timer stays set for the connection's life, and every read and write re-arms it, so nothing
    // per request sets or clears it.
    [
      'timeout',
      () => {
        if (this.current === undefined) this.socket.destroy();
      },
    ],
    // Errors (a reset client, a write to a closed socket) end in 'close', handled there.
    ['error', () => undefined],
  ];

  constructor(
    readonly socket: Socket,
    readonly front: RawFront,
    private readonly toNode: (socket: Socket) => void,
  ) {
    socket.setNoDelay(true);
    for (const [event, listener] of this.listeners) socket.on(event, listener);
    socket.setTimeout(front.options.keepAliveMs);
  }

  get idle(): boolean {
    return this.current === undefined;
  }

  /** Decided when an answer's head is written: close after it? */
  closeAfterAnswer(): boolean {
    return this.closing || this.ended;
  }

  /** Shutdown: close now if idle, else after the answer in progress. */
  closeSoon(): void {
    this.closing = true;
    if (!this.current) this.socket.end();
  }

  private take(chunk: Buffer): void {
    this.buffered = this.buffered ? Buffer.concat([this.buffered, chunk]) : chunk;
    if (this.current || this.waitingForDrain) {
      if (this.buffered.length > MAX_READ_AHEAD) this.socket.pause();
      return;
    }
    this.next();
  }

  /** Starts the next buffered request, or hands the connection on if it is not one the front takes. */
  private next(): void {
    const buffered = this.buffered;
    if (this.current || this.waitingForDrain || !buffered || this.gone) return;
    const end = buffered.indexOf(HEAD_END);
    const head =
      end >= 0 && end <= MAX_HEAD_BYTES ? parseRequestHead(buffered.toString('latin1', 0, end)) : undefined;
    if (!head || !this.front.options.takes(head)) return this.handOff();
    this.buffered = end + 4 < buffered.length ? buffered.subarray(end + 4) : undefined;
    if (head.close) this.closing = true;
    const answer = new RawAnswer(this, head.method);
    this.current = answer;
    const request: ApiRequest = {
      method: head.method,
      url: head.url,
      headers: head.headers,
      remoteAddress: this.socket.remoteAddress,
      body: () => undefined,
    };
    this.front.options.onRequest?.();
    this.front.options.serve(request, answer);
  }

  /** @internal (RawAnswer.end): the answer in progress is written. */
  answered(answer: RawAnswer): void {
    if (this.current !== answer) return;
    this.current = undefined;
    if (this.closing || (this.ended && !this.buffered)) {
      this.socket.end();
      return;
    }
    if (this.socket.writableNeedDrain) {
      // A client that sends and does not read: nothing more is taken until it has read this
      // answer (node:http does the same), or pipelined requests would pile answers up in memory.
      this.waitingForDrain = true;
      this.socket.pause();
      return;
    }
    this.goOn();
  }

  /** The socket took what was written: the answer in progress may go on, or the next request start. */
  private drained(): void {
    this.current?.emitDrain();
    if (!this.waitingForDrain) return;
    this.waitingForDrain = false;
    this.goOn();
  }

  private goOn(): void {
    if (this.socket.isPaused()) this.socket.resume();
    // A pipelined request waits for this answer's call stack to unwind.
    if (this.buffered) process.nextTick(() => this.next());
    else if (this.ended) this.socket.end();
  }

  private clientEnded(): void {
    this.ended = true;
    if (this.current || this.waitingForDrain) return;
    if (this.buffered) this.next();
    else this.socket.end();
  }

  private closed(): void {
    this.gone = true;
    this.front.forget(this);
    this.current?.emitClose();
  }

  /** Everything from here on is node:http's, starting with the bytes read and not taken. */
  private handOff(): void {
    const socket = this.socket;
    this.gone = true;
    this.front.forget(this);
    for (const [event, listener] of this.listeners) socket.off(event, listener);
    socket.setTimeout(0);
    if (this.ended) {
      // A client that has finished sending can get no more of a head node:http would wait for.
      socket.destroy();
      return;
    }
    if (this.buffered) socket.unshift(this.buffered);
    this.buffered = undefined;
    if (socket.isPaused()) socket.resume();
    this.front.options.onHandOff?.();
    this.toNode(socket);
  }
}

/** The front: every new connection starts here (service-kit's startHttpServer installs it). */
export class RawFront implements ConnectionFront {
  private readonly connections = new Set<RawConnection>();
  private shuttingDown = false;

  /** The answer header lines that keep a connection open, made once. */
  readonly keepAliveLines: string;
  readonly leadingHeaders: LeadingHeaders;

  constructor(readonly options: RawFrontOptions) {
    this.leadingHeaders = new LeadingHeaders(options.leadingHeaders ?? []);
    this.keepAliveLines = `Connection: keep-alive\r\nKeep-Alive: timeout=${Math.floor(options.keepAliveMs / 1000)}\r\n`;
  }

  take(socket: Socket, toNode: (socket: Socket) => void): void {
    const conn = new RawConnection(socket, this, toNode);
    this.connections.add(conn);
    if (this.shuttingDown) conn.closeSoon();
  }

  /** @internal: the connection closed or went to node:http. */
  forget(conn: RawConnection): void {
    this.connections.delete(conn);
  }

  closeIdle(): void {
    this.shuttingDown = true;
    for (const conn of this.connections) conn.closeSoon();
  }

  closeAll(): void {
    this.shuttingDown = true;
    for (const conn of this.connections) conn.socket.destroy();
  }
}
