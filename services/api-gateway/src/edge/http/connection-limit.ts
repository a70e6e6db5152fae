import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { errorResponse, metrics, requestIdOf } from '@signal/service-kit';
import { clientGroup, type RequestThrottle } from '../domain/throttle';
import { rateLimitHeaders } from './rate-limit-headers';

export interface ConnectionLimit {
  /** Counts a new connection against its client's address group (the server's 'connection'). */
  onConnection(socket: Socket): void;
  /**
   * Whether the request came on a connection over its client's bound; if so it has been
   * refused (429, the connection closed after the response).
   */
  refuses(req: IncomingMessage, res: ServerResponse): boolean;
}

/**
 * Open connections per client address group (an IPv4 address, an IPv6 /64), so that one client
 * holding many connections holds its own share of the gateway only. A connection past the bound
 * is let in long enough to be told why: its first request gets a 429 envelope and the
 * connection closes. `max` undefined: no bound (behind a trusted proxy every connection comes
 * from the proxy, which bounds its own clients).
 */
export function connectionLimit(
  max: number | undefined,
  guard: RequestThrottle,
  securityHeaders: readonly string[],
  /** The bound as configured for the whole gateway, when this process holds a share of it. */
  announced = max,
): ConnectionLimit {
  if (max === undefined) return { onConnection: () => undefined, refuses: () => false };
  const open = new Map<string, number>();
  const over = new WeakSet<Socket>();
  const refusals = metrics.fairnessRefusals().labels('client_connections');
  return {
    onConnection(socket) {
      const group = clientGroup(socket.remoteAddress ?? '');
      const n = (open.get(group) ?? 0) + 1;
      open.set(group, n);
      if (n > max) over.add(socket);
      socket.once('close', () => {
        const left = (open.get(group) ?? 1) - 1;
        if (left <= 0) open.delete(group);
        else open.set(group, left);
      });
    },
    refuses(req, res) {
      if (!over.has(req.socket)) return false;
      refusals.inc();
      const requestId = requestIdOf(req.headers['x-request-id']);
      const { status, body } = errorResponse(
        {
          code: 'RATE_LIMIT_EXCEEDED',
          message: `Too many open connections from this address (at most ${announced}); reuse the ones you have.`,
          retryAfter: 1,
        },
        requestId,
      );
      const send = (rateHeaders: string[]) => {
        if (res.destroyed) return;
        res.writeHead(status, [
          ...securityHeaders,
          'X-Request-Id',
          requestId,
          ...rateHeaders,
          'Retry-After',
          '1',
          'Connection',
          'close',
          'Content-Type',
          'application/json; charset=utf-8',
          'Content-Length',
          String(Buffer.byteLength(body)),
        ]);
        res.end(body);
      };
      guard.count(req.socket.remoteAddress ?? '').then(
        (decision) => send(rateLimitHeaders(decision.rate)),
        () => send([]),
      );
      return true;
    },
  };
}
