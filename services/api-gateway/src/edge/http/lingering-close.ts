import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';

/** How much of a refused body is read and dropped after the response, at most. */
export interface LingerLimits {
  maxBytes: number;
  maxMs: number;
}

/**
 * nginx lingers up to 30 s; 5 s and 16 MiB let a client on a slow link finish writing a body
 * several times any route's 64 KiB, and bound what one refused request costs.
 */
export const LINGER_LIMITS: LingerLimits = { maxBytes: 16 * 1024 * 1024, maxMs: 5000 };

/**
 * A lingering close, as nginx does it: a response that ends its connection (`Connection: close`)
 * while the request's body is still arriving goes out with a FIN, and the rest of the body is
 * read and dropped — up to `maxBytes` or `maxMs` — before the connection closes. Closing at once
 * with unread bytes makes the kernel answer with a reset, and a client still writing its body
 * (one that sends no `Expect: 100-continue`) gets EPIPE or ECONNRESET instead of the response.
 *
 * node:http ends such a connection through `socket.destroySoon()` once the response is written;
 * this gives the request's socket one that lingers while the body is incomplete.
 */
export function lingerBeforeClose(req: IncomingMessage, limits: LingerLimits = LINGER_LIMITS): void {
  const socket = req.socket;
  const lingering = latest.has(socket);
  latest.set(socket, req);
  if (lingering) return;
  const closeNow = socket.destroySoon.bind(socket);
  socket.destroySoon = () => {
    const last = latest.get(socket);
    if (!last || last.complete || socket.destroyed) {
      closeNow();
      return;
    }
    // node:http reads the socket in its parser, not through 'data' events, and stops handing a
    // dropped body to the request: the bytes are counted where the socket counts them.
    const start = socket.bytesRead;
    const deadline = Date.now() + limits.maxMs;
    const check = setInterval(() => {
      if (socket.bytesRead - start > limits.maxBytes || Date.now() >= deadline) cut();
    }, LINGER_CHECK_MS);
    check.unref();
    const cut = () => {
      clearInterval(check);
      socket.destroy();
    };
    socket.once('close', () => clearInterval(check));
    last.once('end', cut);
    last.once('error', cut);
    last.resume();
    socket.end();
  };
}

/**
 * A body with no declared length (chunked) past `maxBytes`: the route's body reader refuses it,
 * but reads the rest to its end before it answers (body-parser's way, to keep the connection).
 * Past the limit, what is still read is bounded as a lingering close bounds it, and the
 * connection is cut beyond that: a client cannot hold it for as long as it keeps sending.
 */
export function boundBodyPast(
  req: IncomingMessage,
  maxBytes: number,
  limits: LingerLimits = LINGER_LIMITS,
): void {
  if (req.headers['content-length'] !== undefined || req.complete) return;
  const socket = req.socket;
  const start = socket.bytesRead;
  // Chunk framing adds a few bytes a chunk: twice the limit is past it in any framing.
  const refusedPast = start + 2 * maxBytes;
  let refusedAt: { bytes: number; ms: number } | undefined;
  const check = setInterval(() => {
    if (req.complete || socket.destroyed) return stop();
    const bytes = socket.bytesRead;
    if (!refusedAt) {
      if (bytes > refusedPast) refusedAt = { bytes, ms: Date.now() };
      return;
    }
    if (bytes - refusedAt.bytes > limits.maxBytes || Date.now() - refusedAt.ms >= limits.maxMs) {
      stop();
      socket.destroy();
    }
  }, LINGER_CHECK_MS);
  check.unref();
  // A kept-alive connection carries many requests: each takes its listener off when it is done.
  const stop = () => {
    clearInterval(check);
    req.off('end', stop);
    socket.off('close', stop);
  };
  req.once('end', stop);
  socket.once('close', stop);
}

/** How often a lingering connection's bytes and time are looked at. */
const LINGER_CHECK_MS = 100;

/** The latest request with a body on each connection whose close lingers. */
const latest = new WeakMap<Socket, IncomingMessage>();
