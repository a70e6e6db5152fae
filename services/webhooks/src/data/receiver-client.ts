import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import type { ReceivedResponse, ReceiverClient, ReceiverResponse } from '../domain/ports';
import { headerLinesOf } from '../domain/receiver-bytes';

const field = (value: unknown, key: string): unknown =>
  typeof value === 'object' && value !== null && key in value ? Reflect.get(value, key) : undefined;

const codeOf = (err: unknown): string => {
  const raw = field(err, 'code') ?? field(field(err, 'cause'), 'code');
  return typeof raw === 'string' ? raw : '';
};

/** What went wrong in words the deliveries log keeps (`timeout`, `connection_refused`, …). */
function errorClass(err: unknown): string {
  const name = field(err, 'name');
  const code = codeOf(err);
  if (name === 'TimeoutError' || name === 'AbortError' || code === 'ETIMEDOUT') return 'timeout';
  // A head past the client's bound (RECEIVER_MAX_HEAD_BYTES): nothing of it is readable.
  if (code === 'HPE_HEADER_OVERFLOW') return 'response_head_too_large';
  // Bytes that are not an HTTP response (control bytes in a header, a garbled status line).
  if (code.startsWith('HPE_')) return 'invalid_response';
  if (code === 'ECONNREFUSED') return 'connection_refused';
  if (code === 'EBLOCKEDADDRESS') return 'blocked_address';
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return 'dns_error';
  if (code === 'ECONNRESET' || code === 'EPIPE') return 'connection_reset';
  if (code.startsWith('ERR_TLS') || code.includes('CERT')) return 'tls_error';
  return 'network_error';
}

/**
 * The most bytes of a receiver's response head read. Node's default, 16 KiB, made a 2xx with one
 * long header (a framework's debug header, a large cookie) an unreadable answer that was retried,
 * so the receiver got the delivery again and again; past this bound the attempt fails as
 * `response_head_too_large`. What is kept of the head is bounded far lower (`storedHeaders`).
 */
export const RECEIVER_MAX_HEAD_BYTES = 256 * 1024;

/**
 * The most interim (1xx) responses read past before the final one. Real servers send one or two
 * (`100 Continue`, `103 Early Hints`); node:http parses any number, each a head of its own under
 * `maxHeaderSize`, so a receiver streaming `100 Continue` without end kept the worker's one
 * thread parsing them until the attempt's timeout, and every other account's deliveries waited
 * for the CPU. Past this count, or past `RECEIVER_MAX_HEAD_BYTES` of interim heads together,
 * the attempt is a `response_head_too_large`.
 */
export const RECEIVER_MAX_INTERIM_RESPONSES = 16;

// eslint-disable-next-line no-control-regex -- the point is to find control bytes
const CONTROL_BYTE = /[\x00-\x08\x0a-\x1f\x7f]/;

/**
 * A status line RFC 9112 does not allow: a code outside 100–599 (RFC 9110 §15), or a reason
 * phrase with a control byte other than tab (llhttp reads past them).
 */
const invalidStatusLine = (status: number | undefined, reason: string | undefined): boolean =>
  status === undefined || status < 100 || status > 599 || CONTROL_BYTE.test(reason ?? '');

/** The bytes of an interim response's head as it came: status line, headers, blank line. */
function interimHeadBytes(info: http.InformationEvent): number {
  let n = 17 + info.statusMessage.length;
  for (const part of info.rawHeaders) n += part.length + 2;
  return n;
}

/**
 * Connections to receivers, each checked by the URL guard: kept-alive ones, one pool per origin
 * with no cap of its own, and new ones for a request that found a kept-alive connection closed.
 * How many POSTs are in flight is the worker's slots' to bound (per subscription, per account):
 * a cap per origin would be shared by every subscription on that host, whatever its account, so
 * one account's slow receiver would queue another's POSTs behind its own, their timeouts
 * running while they waited for a connection.
 */
export interface ReceiverAgents extends AgentPair {
  /** One new connection per request, closed after it. */
  fresh: AgentPair;
}

/** An agent for each scheme. */
interface AgentPair {
  http: http.Agent;
  https: https.Agent;
}

export interface ReceiverAgentOptions {
  /** Resolves a receiver's host, refusing addresses the URL guard blocks (at connect time). */
  lookup: LookupFunction;
  /** An idle connection is closed after this long. */
  idleMs: number;
  /** Extra trusted CA (tests' TLS receivers). */
  ca?: string;
}

/**
 * How long a connection to one of a name's addresses is given before the next address is tried
 * too (Node's happy eyeballs, when a name has IPv4 and IPv6 addresses). Node's 250 ms is kept by a
 * timer, and timers run before the event loop reads its sockets: a worker busy for 250 ms
 * (other accounts' work) abandoned a connection that had already succeeded, tried the next
 * address, and failed the attempt as a `timeout` that never reached the receiver (one of two
 * `localhost` attempts, ::1 refused). Two seconds leaves a family that never answers time to
 * be passed over within the attempt's 5.
 */
export const RECEIVER_ADDRESS_ATTEMPT_MS = 2_000;

export function receiverAgents(o: ReceiverAgentOptions): ReceiverAgents {
  const tls = o.ca ? { ca: o.ca } : {};
  const connect = { lookup: o.lookup, autoSelectFamilyAttemptTimeout: RECEIVER_ADDRESS_ATTEMPT_MS };
  const kept = { keepAlive: true, timeout: o.idleMs, ...connect };
  const fresh = { keepAlive: false, ...connect };
  return {
    http: new http.Agent(kept),
    https: new https.Agent({ ...kept, ...tls }),
    fresh: { http: new http.Agent(fresh), https: new https.Agent({ ...fresh, ...tls }) },
  };
}

export function closeReceiverAgents(agents: ReceiverAgents): void {
  for (const agent of [agents.http, agents.https, agents.fresh.http, agents.fresh.https]) agent.destroy();
}

/**
 * A kept-alive connection the receiver had closed when the request went out on it: the receiver
 * never read the request, so it goes again on a new connection, within the same attempt.
 */
const STALE_CONNECTION = Symbol('stale connection');

/**
 * Receivers over node:http, whose client reads what RFC 9110 lets a server send: interim 1xx
 * responses before the final one (a `100 Continue` nobody asked for failed every attempt on
 * undici, which refuses them). A response body is read up to `maxResponseBytes` and the rest
 * dropped; the whole attempt, connection included, is bounded by `timeoutMs`.
 */
export function nodeReceiverClient(agents: ReceiverAgents): ReceiverClient {
  return {
    async post(url, headers, body, limits): Promise<ReceiverResponse> {
      // The attempt's deadline, cleared as soon as it ends: `AbortSignal.timeout` would keep a
      // timer and a signal alive for the whole timeout after every attempt and then build a
      // DOMException for each (thousands a second, a share of the worker's garbage collection).
      const deadline = new AbortController();
      const timer = setTimeout(() => deadline.abort(), limits.timeoutMs);
      const signal = deadline.signal;
      try {
        // A receiver may close a kept-alive connection after any response without saying so
        // (HTTP/1.1 allows it); a request sent on it meanwhile is reset before any answer. Node
        // marks such a request `reusedSocket`, and its documentation retries it: the receiver
        // never saw it. The retry takes a new connection: the pool's other idle ones may have
        // been closed alike (a receiver that closes each after one answer), and a reset on a new
        // one is the receiver's.
        const outcome = await postOnce(agents, url, headers, body, limits.maxResponseBytes, signal);
        if (outcome !== STALE_CONNECTION) return outcome;
        const again = await postOnce(agents.fresh, url, headers, body, limits.maxResponseBytes, signal);
        return again === STALE_CONNECTION ? { ok: false, error: 'connection_reset' } : again;
      } finally {
        clearTimeout(timer);
      }
    },
  };
}

function postOnce(
  agents: AgentPair,
  url: string,
  headers: Record<string, string>,
  body: string,
  maxResponseBytes: number,
  signal: AbortSignal,
): Promise<ReceiverResponse | typeof STALE_CONNECTION> {
  return new Promise((resolve) => {
    let settled = false;
    /** Ends the exchange (once the request exists). */
    let cancel = (): void => undefined;
    /** What came of the response so far, once its head did (a body that has not ended). */
    let received: (() => ReceivedResponse) | undefined;
    // The attempt ends at its deadline whatever state the exchange is in (a request node:http
    // has let go of, an upgrade, emits nothing more), judged once the bytes already received are
    // read: the deadline's timer runs before the event loop's poll for I/O, `setImmediate` after
    // it. A worker kept busy past a deadline (its CPU taken) would otherwise record an answer
    // that came in time as a timeout, and its retry would POST the delivery again.
    const expire = () => {
      if (settled) return;
      settle(failed('timeout'));
      cancel();
    };
    const failed = (error: string): ReceiverResponse =>
      received ? { ok: false, error, partial: received() } : { ok: false, error };
    const deadline = () => setImmediate(expire);
    const settle = (outcome: ReceiverResponse | typeof STALE_CONNECTION) => {
      if (settled) return;
      settled = true;
      signal.removeEventListener('abort', deadline);
      resolve(outcome);
    };
    if (signal.aborted) {
      settle({ ok: false, error: 'timeout' });
      return;
    }
    let target: URL;
    try {
      target = new URL(url);
    } catch (err) {
      settle({ ok: false, error: errorClass(err) });
      return;
    }
    const secure = target.protocol === 'https:';
    const req = (secure ? https : http).request(target, {
      method: 'POST',
      agent: secure ? agents.https : agents.http,
      headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
      maxHeaderSize: RECEIVER_MAX_HEAD_BYTES,
    });
    cancel = () => req.destroy();
    /** The answer is refused for what it is: the attempt fails with `error`, the exchange ends. */
    const refuse = (error: string) => {
      settle({ ok: false, error });
      req.destroy();
    };
    let answered = false;
    signal.addEventListener('abort', deadline, { once: true });
    let interimCount = 0;
    let interimBytes = 0;
    req.on('information', (info) => {
      if (settled) return;
      if (invalidStatusLine(info.statusCode, info.statusMessage)) return refuse('invalid_response');
      interimCount += 1;
      interimBytes += interimHeadBytes(info);
      if (interimCount > RECEIVER_MAX_INTERIM_RESPONSES || interimBytes > RECEIVER_MAX_HEAD_BYTES)
        refuse('response_head_too_large');
    });
    // A 101 nobody asked for is no answer to a POST: node:http hands the connection over and the
    // request would wait for nothing.
    req.on('upgrade', (_res, socket) => {
      socket.destroy();
      settle({ ok: false, error: 'invalid_response' });
    });
    req.on('error', (err) => {
      if (!answered && req.reusedSocket && codeOf(err) === 'ECONNRESET' && !signal.aborted) {
        settle(STALE_CONNECTION);
        return;
      }
      settle(failed(errorClass(err)));
    });
    req.on('response', (res) => {
      answered = true;
      if (invalidStatusLine(res.statusCode, res.statusMessage)) return refuse('invalid_response');
      const chunks: Buffer[] = [];
      let read = 0;
      const readSoFar = (): ReceivedResponse => ({
        status: res.statusCode ?? 0,
        headers: headerLinesOf(res.rawHeaders),
        body: Buffer.concat(chunks),
        truncated: true,
      });
      received = readSoFar;
      const finish = (truncated: boolean) => {
        const retryAfter = res.headers['retry-after'];
        settle({
          ok: true,
          ...readSoFar(),
          truncated,
          retryAfter: typeof retryAfter === 'string' ? retryAfter : undefined,
        });
      };
      res.on('data', (chunk: Buffer) => {
        if (settled) return;
        if (read < maxResponseBytes) chunks.push(chunk.subarray(0, maxResponseBytes - read));
        read += chunk.length;
        if (read > maxResponseBytes) {
          finish(true);
          res.destroy();
        }
      });
      res.on('end', () => finish(false));
      res.on('error', (err) => settle(failed(errorClass(err))));
      // The connection ended before the body did (no 'end'): the answer is incomplete.
      res.on('close', () => {
        if (!res.complete) settle(failed(signal.aborted ? 'timeout' : 'connection_reset'));
      });
    });
    req.end(body);
  });
}
