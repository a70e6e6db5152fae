import net from 'node:net';
import { HEADER_NAME, hasForbiddenChar } from './header-syntax';

/**
 * A keep-alive HTTP/1.1 client for the gateway's bodiless requests (GET, HEAD) to its own
 * services, on plain sockets.
 *
 * Why our own code and not undici (which still carries every request with a body): measured with
 * `infra/bench/experiments/proxy-floor.mjs`, node:http in front of undici cost the proxy process
 * 196 µs per request, node:http in front of this kind of pool 140 µs (nginx: 68 µs). undici's
 * generality (interceptors, its wasm parser, an object per header, a body for any request) is
 * what that costs. Here the other end is one of our own services: bodiless requests, pipelined
 * (see RawUpstreamPool), each answer framed by Content-Length, chunked encoding or the
 * connection's end, and anything else is a protocol error (→ 503), never a guess.
 */

/** The steps of an answer, as undici's dispatch handler has them. */
export interface AnswerHandler {
  /** `headers`: [name, value, …], names in lower case, in the order the service sent them. */
  onStart(status: number, headers: string[]): void;
  /** false: the client is not taking more now; `resume()` on the exchange when it is. */
  onData(chunk: Buffer): boolean;
  onEnd(): void;
  onError(err: UpstreamError): void;
}

export type UpstreamErrorCode =
  | 'UPSTREAM_CONNECT_FAILED'
  | 'UPSTREAM_HEADERS_TIMEOUT'
  | 'UPSTREAM_BODY_TIMEOUT'
  | 'UPSTREAM_CLOSED'
  | 'UPSTREAM_PROTOCOL_ERROR'
  | 'UPSTREAM_ABORTED';

export class UpstreamError extends Error {
  constructor(
    readonly code: UpstreamErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'UpstreamError';
  }
}

export interface BodilessRequest {
  method: 'GET' | 'HEAD';
  /** Path and query, as node:http parsed them (no whitespace or control characters). */
  path: string;
  /** [name, value, …] */
  headers: readonly string[];
  /** For the answer's head, and then between any two pieces of its body. */
  timeoutMs: number;
}

export interface Exchange {
  /** The client went away: stop (the connection is closed, not reused); the handler hears UPSTREAM_ABORTED. */
  abort(): void;
  /** The client takes more again (after `onData` said false). */
  resume(): void;
}

export interface RawPoolOptions {
  connections: number;
  /** Requests in flight per connection at most (1: none sent behind another). */
  pipelining?: number;
  /** An idle connection is closed after this long (below the services' keep-alive of 65 s). */
  idleMs: number;
  connectTimeoutMs: number;
}

/** Request line and headers: what may be written to the service as it is. */
const UNSAFE = /[\0\r\n]/;
/** The longest answer head taken (Node's own limit for request heads). */
const MAX_HEAD_BYTES = 16 * 1024;
const CRLF = Buffer.from('\r\n');
/** A connection's read buffer (one read takes at most this much). */
const READ_BUFFER_BYTES = 64 * 1024;

/** Can this request go on the raw client? (else it takes undici, which frames anything) */
export function isBodilessRequest(method: string, path: string, headers: readonly string[]): boolean {
  if ((method !== 'GET' && method !== 'HEAD') || UNSAFE.test(path) || path.includes(' ')) return false;
  for (let i = 0; i < headers.length; i++) if (UNSAFE.test(headers[i]!)) return false;
  return true;
}

interface Job {
  request: BodilessRequest;
  handler: AnswerHandler;
  conn?: Connection;
  settled: boolean;
  /** Sent once more on a fresh connection if a reused one turns out closed before any answer. */
  retried: boolean;
}

/** The pool is closing: nothing more is sent. */
const shuttingDown = () => new UpstreamError('UPSTREAM_CLOSED', 'the gateway is shutting down');
/** The service closed (or would not keep) a connection before an answer came. */
const serviceClosed = () => new UpstreamError('UPSTREAM_CLOSED', 'the service closed the connection');

/** Ends a job with an error, once (whichever of connect, timeout, close or abort comes first). */
function failJob(job: Job, err: UpstreamError): void {
  if (job.settled) return;
  job.settled = true;
  job.handler.onError(err);
}

type Framing =
  | { kind: 'none' }
  | { kind: 'length'; remaining: number }
  | { kind: 'chunked'; step: 'size' | 'data' | 'data-end' | 'trailer'; remaining: number }
  | { kind: 'close' };

/** Where the answer head ends, or -1. */
function headEnd(buf: Buffer): number {
  return buf.indexOf('\r\n\r\n', 0, 'latin1');
}

interface ParsedHead {
  status: number;
  headers: string[];
  framing: Framing;
  keepAlive: boolean;
}

/**
 * The header lines a service puts first in every answer (its security headers: 12 lines, ~700
 * bytes, the same bytes each time), parsed once. A head that starts with the same bytes (one
 * memcmp) takes their parsed form and parses only the lines after them (the request id, type,
 * length, date): parsing answer heads line by line was the largest piece of the proxy's own work
 * per request. Learnt from the service's answers (the lines two answers in a row start with), so
 * nothing here knows what a service sends; lines that frame the answer (length, transfer coding,
 * connection) are never part of it.
 */
export class LeadingLines {
  /** The lines, each with its CRLF; empty while nothing is learnt. */
  bytes: Buffer = Buffer.alloc(0);
  headers: readonly string[] = [];
  /** The header section of the last answer that did not start with `bytes` (a copy). */
  private last: Buffer = Buffer.alloc(0);

  /** Does the header section starting at `at` start with the learnt lines? */
  startsOf(head: Buffer, at: number): boolean {
    const n = this.bytes.length;
    return n > 0 && at + n <= head.length && head.compare(this.bytes, 0, n, at, at + n) === 0;
  }

  /** From an answer that did not start with them: its header section and its parsed headers. */
  learn(section: Buffer, headers: readonly string[]): void {
    const previous = this.last;
    let end = 0;
    let pairs = 0;
    // The longest run of whole lines both sections start with, up to the first framing line.
    while (pairs < headers.length && !FRAMING_NAMES.has(headers[pairs]!)) {
      const eol = section.indexOf(CRLF, end);
      if (eol < 0 || eol + 2 > previous.length) break;
      if (section.compare(previous, end, eol + 2, end, eol + 2) !== 0) break;
      end = eol + 2;
      pairs += 2;
    }
    this.last = Buffer.from(section);
    this.bytes = this.last.subarray(0, end);
    this.headers = headers.slice(0, pairs);
  }
}

/** Headers that decide how an answer is framed or whether its connection is kept. */
const FRAMING_NAMES: ReadonlySet<string> = new Set(['content-length', 'transfer-encoding', 'connection']);

/**
 * The answer head (its bytes up to the final CRLF CRLF), parsed strictly; a string says what is
 * wrong with it. `leading`: the service's usual first lines, parsed already (and learnt here).
 */
export function parseAnswerHead(head: Buffer, method: string, leading?: LeadingLines): ParsedHead | string {
  const crlf = head.indexOf(CRLF);
  const statusEnd = crlf < 0 ? head.length : crlf;
  const sectionStart = crlf < 0 ? head.length : crlf + 2;
  const statusText = head.toString('latin1', 0, statusEnd);
  const statusLine = /^HTTP\/1\.([01]) ([1-5]\d\d)(?: |$)/.exec(statusText);
  if (!statusLine) return `bad status line ${JSON.stringify(statusText.slice(0, 40))}`;
  const status = Number(statusLine[2]);
  if (status < 200) return `informational answer ${status} to a request that asked for none`;
  let keepAlive = statusLine[1] === '1';
  const known = leading !== undefined && leading.startsOf(head, sectionStart);
  const headers: string[] = known ? leading.headers.slice() : [];
  const rest = head.toString('latin1', known ? sectionStart + leading.bytes.length : sectionStart);
  const lines = rest === '' ? [] : rest.split('\r\n');
  let length: number | undefined;
  let chunked = false;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const colon = line.indexOf(':');
    if (colon <= 0 || line.charCodeAt(0) === 32 || line.charCodeAt(0) === 9)
      return `bad header line ${JSON.stringify(line.slice(0, 40))}`;
    const name = line.slice(0, colon).toLowerCase();
    const value = line.slice(colon + 1).trim();
    if (!HEADER_NAME.test(name) || hasForbiddenChar(value))
      return `bad header line ${JSON.stringify(line.slice(0, 40))}`;
    if (name === 'content-length') {
      if (!/^\d{1,15}$/.test(value) || (length !== undefined && length !== Number(value)))
        return `bad content-length ${JSON.stringify(value)}`;
      length = Number(value);
    } else if (name === 'transfer-encoding') {
      const codings = value
        .toLowerCase()
        .split(',')
        .map((c) => c.trim());
      if (codings[codings.length - 1] !== 'chunked') return `unsupported transfer-encoding ${value}`;
      chunked = true;
    } else if (name === 'connection') {
      const options = value.toLowerCase();
      if (options.includes('close')) keepAlive = false;
      else if (options.includes('keep-alive')) keepAlive = true;
    }
    headers.push(name, value);
  }
  let framing: Framing;
  if (method === 'HEAD' || status === 204 || status === 304) framing = { kind: 'none' };
  else if (chunked) {
    framing = { kind: 'chunked', step: 'size', remaining: 0 };
    // Both framings named: the answer is read as chunked, and the connection not trusted again.
    if (length !== undefined) keepAlive = false;
  } else if (length !== undefined)
    framing = length === 0 ? { kind: 'none' } : { kind: 'length', remaining: length };
  else {
    framing = { kind: 'close' };
    keepAlive = false;
  }
  if (leading && !known) leading.learn(head.subarray(sectionStart), headers);
  return { status, headers, framing, keepAlive };
}

/** One socket to the service and the exchanges on it, answered in the order they were sent. */
class Connection {
  /** Sent and not yet answered, in order: the first is the one being answered. */
  readonly jobs: Job[] = [];
  /** Request heads assigned since the last write (written together: one write for a turn's). */
  private outgoing = '';
  /** Bytes of the answers not yet consumed. */
  private pending: Buffer = Buffer.alloc(0);
  private framing?: Framing;
  private keepAlive = true;
  private answered = false;
  /**
   * The deadline of the first exchange (answer head, then between body pieces) and the idle one,
   * one timer each for the connection's life: re-armed with `refresh()`, and left to fire
   * harmlessly once nothing waits on them, instead of a clearTimeout and a new setTimeout (a
   * closure and a timer object) for each of the four per request.
   */
  private timer?: NodeJS.Timeout;
  private timerMs = 0;
  private timeoutCode: 'UPSTREAM_HEADERS_TIMEOUT' | 'UPSTREAM_BODY_TIMEOUT' = 'UPSTREAM_HEADERS_TIMEOUT';
  private idleTimer?: NodeJS.Timeout;
  private isIdle = false;
  /** Has this connection carried an exchange already (a reused one may have been closed by the service). */
  reused = false;
  connected = false;
  closed = false;

  constructor(
    readonly socket: net.Socket,
    private readonly pool: RawUpstreamPool,
  ) {
    socket.on('end', () => this.onClosed());
    socket.on('close', () => this.onClosed());
    socket.on('error', () => this.onClosed());
  }

  /** Takes the job behind those in flight; its request goes out with the next `write()`. */
  assign(job: Job): void {
    this.isIdle = false;
    job.conn = this;
    this.jobs.push(job);
    const { method, path, headers } = job.request;
    let head = `${method} ${path} HTTP/1.1\r\nhost: ${this.pool.hostHeader}\r\n`;
    for (let i = 0; i < headers.length; i += 2) head += `${headers[i]}: ${headers[i + 1]}\r\n`;
    this.outgoing += `${head}\r\n`;
    // The deadline runs for the first exchange; those behind it get theirs when their turn comes.
    if (this.jobs.length === 1) this.arm('UPSTREAM_HEADERS_TIMEOUT');
  }

  /** Sends the requests assigned since the last write, in one write. */
  write(): void {
    const out = this.outgoing;
    if (out === '' || this.closed) return;
    this.outgoing = '';
    if (this.connected) this.socket.write(out, 'latin1');
    else this.socket.once('connect', () => this.socket.write(out, 'latin1'));
  }

  start(job: Job): void {
    this.assign(job);
    this.write();
  }

  idle(idleMs: number): void {
    this.isIdle = true;
    if (this.idleTimer) {
      this.idleTimer.refresh();
      return;
    }
    this.idleTimer = setTimeout(() => {
      // Taken again since it was armed: armed anew (refresh) when it is released.
      if (this.isIdle) this.destroy();
    }, idleMs);
    this.idleTimer.unref();
  }

  resume(): void {
    if (!this.closed) this.socket.resume();
  }

  destroy(): void {
    if (this.closed) return;
    this.closed = true;
    clearTimeout(this.timer);
    clearTimeout(this.idleTimer);
    this.socket.destroy();
    this.pool.forget(this);
  }

  private arm(code: 'UPSTREAM_HEADERS_TIMEOUT' | 'UPSTREAM_BODY_TIMEOUT'): void {
    const job = this.jobs[0];
    if (!job) return;
    this.timeoutCode = code;
    const ms = job.request.timeoutMs;
    if (this.timer && this.timerMs === ms) {
      this.timer.refresh();
      return;
    }
    clearTimeout(this.timer); // a timer once cleared cannot be refreshed: a new one
    this.timerMs = ms;
    this.timer = setTimeout(() => {
      // Also fires after an exchange that ended in time (the timer is not cleared then): nothing waits.
      if (this.jobs.length > 0)
        this.fail(new UpstreamError(this.timeoutCode, 'the service did not answer in time'));
    }, ms);
    // An exchange in progress holds its socket, which keeps the process alive; this need not.
    this.timer.unref();
  }

  /**
   * @internal (timeouts, protocol errors, aborts): the first exchange ends with `err` and the
   * connection goes; those sent behind it, never answered, are sent again on another (once).
   */
  fail(err: UpstreamError): void {
    const [job, ...behind] = this.jobs.splice(0);
    this.destroy();
    if (job) failJob(job, err);
    this.pool.sendAgain(behind, err);
  }

  /** @internal (a connect that failed): every exchange on it ends with `err`. */
  failAll(err: UpstreamError): void {
    const jobs = this.jobs.splice(0);
    this.destroy();
    for (const job of jobs) failJob(job, err);
  }

  private onClosed(): void {
    if (this.closed && this.jobs.length === 0) return;
    const [job, ...behind] = this.jobs.splice(0);
    const closedError = serviceClosed();
    this.destroy();
    if (job && this.framing?.kind === 'close' && this.answered) {
      // The answer was framed by the connection's end: this is its end.
      this.finish(job);
    } else if (job && !this.answered && this.pending.length === 0 && this.reused) {
      // The service closed a kept-alive connection as the request went out: send it again, once.
      this.pool.sendAgain([job], closedError);
    } else if (job) {
      failJob(job, closedError);
    }
    this.pool.sendAgain(behind, closedError);
  }

  /**
   * @internal (the socket's `onread`): `view` lies in the connection's read buffer, which the
   * next read overwrites, so what is taken from it (kept for the next read, or passed on to a
   * client's socket that may not have written it yet) is a copy.
   */
  onRead(view: Buffer): void {
    if (this.jobs.length === 0) {
      // Bytes nobody asked for: the connection is out of step.
      this.destroy();
      return;
    }
    this.pending = this.pending.length ? Buffer.concat([this.pending, view]) : Buffer.from(view);
    try {
      // One read may carry the ends of several answers (pipelined requests answered together).
      while (this.pending.length > 0 && this.jobs.length > 0 && this.take(this.jobs[0]!)) {
        /* the next answer */
      }
    } catch (err) {
      // A handler refused what the service sent (e.g. a header Node will not write): its fault.
      this.fail(
        new UpstreamError('UPSTREAM_PROTOCOL_ERROR', err instanceof Error ? err.message : 'unusable answer'),
      );
    }
  }

  /** Consumes what `pending` holds of `job`'s answer; true when the answer ended and the connection goes on. */
  private take(job: Job): boolean {
    if (!this.framing) {
      const end = headEnd(this.pending);
      if (end < 0) {
        if (this.pending.length > MAX_HEAD_BYTES)
          this.fail(new UpstreamError('UPSTREAM_PROTOCOL_ERROR', 'answer head too large'));
        return false;
      }
      const parsed = parseAnswerHead(
        this.pending.subarray(0, end),
        job.request.method,
        this.pool.leadingLines,
      );
      if (typeof parsed === 'string') {
        this.fail(new UpstreamError('UPSTREAM_PROTOCOL_ERROR', parsed));
        return false;
      }
      this.pending = this.pending.subarray(end + 4);
      this.framing = parsed.framing;
      this.keepAlive = parsed.keepAlive;
      this.answered = true;
      this.arm('UPSTREAM_BODY_TIMEOUT');
      // An exchange whose client went away while others were behind it: its answer is read and dropped.
      if (!job.settled) job.handler.onStart(parsed.status, parsed.headers);
      if (this.jobs[0] !== job) return false; // aborted from onStart
    } else {
      this.arm('UPSTREAM_BODY_TIMEOUT');
    }
    return this.consumeBody(job);
  }

  private deliver(job: Job, chunk: Buffer): void {
    if (chunk.length > 0 && !job.settled && !job.handler.onData(chunk)) this.socket.pause();
  }

  private consumeBody(job: Job): boolean {
    const framing = this.framing!;
    if (framing.kind === 'none') return this.complete(job);
    if (framing.kind === 'close') {
      const chunk = this.pending;
      this.pending = Buffer.alloc(0);
      this.deliver(job, chunk);
      return false;
    }
    if (framing.kind === 'length') {
      const take = Math.min(framing.remaining, this.pending.length);
      const chunk = this.pending.subarray(0, take);
      this.pending = this.pending.subarray(take);
      framing.remaining -= take;
      this.deliver(job, chunk);
      return framing.remaining === 0 && this.jobs[0] === job && this.complete(job);
    }
    // Chunked: pass the data on, check the framing around it.
    while (this.jobs[0] === job) {
      if (framing.step === 'size') {
        const eol = this.pending.indexOf(CRLF);
        if (eol < 0) {
          if (this.pending.length > 1024)
            this.fail(new UpstreamError('UPSTREAM_PROTOCOL_ERROR', 'bad chunk size'));
          return false;
        }
        const sizeText = this.pending.subarray(0, eol).toString('latin1').split(';')[0]!.trim();
        if (!/^[0-9a-fA-F]{1,12}$/.test(sizeText)) {
          this.fail(new UpstreamError('UPSTREAM_PROTOCOL_ERROR', 'bad chunk size'));
          return false;
        }
        this.pending = this.pending.subarray(eol + 2);
        framing.remaining = parseInt(sizeText, 16);
        framing.step = framing.remaining === 0 ? 'trailer' : 'data';
      } else if (framing.step === 'data') {
        if (this.pending.length === 0) return false;
        const take = Math.min(framing.remaining, this.pending.length);
        const chunk = this.pending.subarray(0, take);
        this.pending = this.pending.subarray(take);
        framing.remaining -= take;
        if (framing.remaining === 0) framing.step = 'data-end';
        this.deliver(job, chunk);
      } else if (framing.step === 'data-end') {
        if (this.pending.length < 2) return false;
        if (this.pending[0] !== 13 || this.pending[1] !== 10) {
          this.fail(new UpstreamError('UPSTREAM_PROTOCOL_ERROR', 'bad chunk end'));
          return false;
        }
        this.pending = this.pending.subarray(2);
        framing.step = 'size';
      } else {
        // Trailer lines (dropped) up to the empty line.
        const eol = this.pending.indexOf(CRLF);
        if (eol < 0) return false;
        this.pending = this.pending.subarray(eol + 2);
        if (eol === 0) return this.complete(job);
      }
    }
    return false;
  }

  /** The first exchange's answer ended: true when the connection goes on with the next one. */
  private complete(job: Job): boolean {
    this.jobs.shift();
    this.framing = undefined;
    this.answered = false;
    this.socket.resume();
    if (!this.keepAlive || (this.jobs.length === 0 && this.pending.length > 0)) {
      // Not kept (or bytes after the last answer: out of step): those behind it go elsewhere.
      const behind = this.jobs.splice(0);
      this.destroy();
      this.finish(job);
      this.pool.sendAgain(behind, serviceClosed());
      return false;
    }
    this.keepAlive = true;
    this.reused = true;
    this.finish(job);
    if (this.closed) return false;
    if (this.jobs.length > 0) this.arm('UPSTREAM_HEADERS_TIMEOUT');
    this.pool.release(this);
    return this.jobs.length > 0;
  }

  private finish(job: Job): void {
    if (job.settled) return;
    job.settled = true;
    job.handler.onEnd();
  }
}

/**
 * The raw client of one service: at most `connections` sockets, each carrying up to `pipelining`
 * requests at a time; requests beyond them wait in order.
 *
 * Pipelining (requests sent behind one another on a connection, answered in order) is safe here
 * because everything this client carries is GET or HEAD; a request sent behind another that the
 * service never answered (the connection closed, the one before timed out) is sent again once.
 * The requests of one event-loop turn go out together: packed onto as few connections as
 * `pipelining` allows, one write each. The service then reads a turn's requests in one read and
 * writes their answers together: `infra/bench/experiments/proxy-floor.mjs` measured a proxy's
 * CPU per request 54 → 36 µs and the service's 106 → 67 µs, +40 % throughput on two cores,
 * more than any per-request saving in the proxy gave. An idle connection is still taken before
 * a busy one: a lone request never waits behind another.
 */
export class RawUpstreamPool {
  readonly hostHeader: string;
  /** @internal (Connection): the service's usual first answer lines. */
  readonly leadingLines = new LeadingLines();
  private readonly idleConnections: Connection[] = [];
  /** Requests of this turn, sent together at its end. */
  private turn: Job[] = [];
  private turnQueued = false;
  private readonly waiting: Job[] = [];
  private readonly all = new Set<Connection>();
  private readonly depth: number;
  private closing = false;

  constructor(
    private readonly host: string,
    private readonly port: number,
    private readonly options: RawPoolOptions,
  ) {
    this.hostHeader = `${host.includes(':') ? `[${host}]` : host}:${port}`;
    this.depth = Math.max(1, options.pipelining ?? 1);
  }

  static forOrigin(origin: string, options: RawPoolOptions): RawUpstreamPool {
    const url = new URL(origin);
    const port = Number(url.port || (url.protocol === 'https:' ? 443 : 80));
    return new RawUpstreamPool(url.hostname.replace(/^\[|\]$/g, ''), port, options);
  }

  /** Sends one bodiless request; the handler hears each step of the answer, or one error. */
  request(request: BodilessRequest, handler: AnswerHandler): Exchange {
    const job: Job = { request, handler, settled: false, retried: false };
    if (this.closing) failJob(job, shuttingDown());
    else {
      this.turn.push(job);
      if (!this.turnQueued) {
        this.turnQueued = true;
        // After every socket read of this turn (setImmediate, not a timer): no added wait.
        setImmediate(() => this.sendTurn());
      }
    }
    return {
      abort: () => {
        if (job.settled) return;
        const aborted = new UpstreamError('UPSTREAM_ABORTED', 'the client closed the connection');
        const conn = job.conn;
        // Alone on its connection: that connection goes (the rest of the answer is not read).
        if (conn && !conn.closed && conn.jobs.length === 1 && conn.jobs[0] === job) return conn.fail(aborted);
        // Not sent yet (it is dropped when its turn comes), or with others on its connection
        // (its answer, when it comes, is read and dropped; the connection reads on).
        failJob(job, aborted);
        if (conn && !conn.closed && conn.jobs[0] === job) conn.resume(); // were it holding the answers back
      },
      resume: () => job.conn?.resume(),
    };
  }

  /** The turn's requests: on the connection just taken while it has room, else the next one. */
  private sendTurn(): void {
    this.turnQueued = false;
    const jobs = this.turn;
    this.turn = [];
    let conn: Connection | undefined;
    for (const job of jobs) {
      if (job.settled) continue;
      if (this.closing) {
        failJob(job, shuttingDown());
        continue;
      }
      if (!conn || conn.closed || conn.jobs.length >= this.depth) {
        conn?.write();
        conn = this.take();
      }
      if (conn) conn.assign(job);
      else this.waiting.push(job);
    }
    conn?.write();
  }

  /** A connection with room: an idle one, a new one, else the least busy (undefined: all full). */
  private take(): Connection | undefined {
    let idle = this.idleConnections.pop();
    while (idle?.closed) idle = this.idleConnections.pop();
    if (idle) return idle;
    if (this.all.size < this.options.connections) return this.connect();
    let least: Connection | undefined;
    for (const c of this.all)
      if (!c.closed && c.jobs.length < this.depth && (!least || c.jobs.length < least.jobs.length)) least = c;
    return least;
  }

  /**
   * @internal: requests sent on a connection that went before answering them, on a new
   * connection each, once (GET and HEAD: nothing happened twice that had not happened once);
   * one already sent again ends with `err`.
   */
  sendAgain(jobs: Job[], err: UpstreamError): void {
    for (const job of jobs) {
      if (job.settled) continue;
      if (job.retried || this.closing) {
        failJob(job, this.closing ? shuttingDown() : err);
        continue;
      }
      job.retried = true;
      job.conn = undefined;
      this.connect().start(job);
    }
  }

  /** @internal: an answer ended cleanly; the connection takes waiting requests, or idles. */
  release(conn: Connection): void {
    let taken = false;
    while (this.waiting.length > 0 && conn.jobs.length < this.depth) {
      const next = this.waiting.shift()!;
      if (next.settled) continue;
      conn.assign(next);
      taken = true;
    }
    if (taken) conn.write();
    else if (conn.jobs.length === 0) {
      conn.idle(this.options.idleMs);
      this.idleConnections.push(conn);
    }
  }

  /** @internal: the connection is gone. */
  forget(conn: Connection): void {
    this.all.delete(conn);
    const at = this.idleConnections.indexOf(conn);
    if (at >= 0) this.idleConnections.splice(at, 1);
    // Waiting requests get the freed place.
    if (this.waiting.length > 0 && !this.closing) this.release(this.connect());
  }

  private connect(): Connection {
    // Reads land in one buffer per connection (net's `onread`), not a stream: no push, 'data'
    // event and read-more tick per read, ~2 % of the proxy's CPU per request.
    const readBuffer = Buffer.allocUnsafe(READ_BUFFER_BYTES);
    const socket = net.connect({
      host: this.host,
      port: this.port,
      noDelay: true,
      onread: {
        buffer: readBuffer,
        callback: (bytes: number): boolean => {
          conn.onRead(readBuffer.subarray(0, bytes));
          return true; // back-pressure pauses the socket itself (Connection.deliver)
        },
      },
    });
    // Registered before the connection's own listeners: a refused connect is told as such.
    socket.once('error', (err: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      if (!conn.connected)
        conn.failAll(new UpstreamError('UPSTREAM_CONNECT_FAILED', err.code ?? 'connect failed'));
    });
    const conn = new Connection(socket, this);
    this.all.add(conn);
    const timer = setTimeout(
      () => conn.failAll(new UpstreamError('UPSTREAM_CONNECT_FAILED', 'connect timed out')),
      this.options.connectTimeoutMs,
    );
    socket.once('connect', () => {
      clearTimeout(timer);
      conn.connected = true;
    });
    return conn;
  }

  /** Closes every connection; waiting requests get an error. */
  async close(): Promise<void> {
    this.closing = true;
    for (const job of [...this.turn.splice(0), ...this.waiting.splice(0)]) failJob(job, shuttingDown());
    for (const conn of [...this.all]) conn.destroy();
  }
}
