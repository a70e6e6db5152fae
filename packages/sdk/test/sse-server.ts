/**
 * A local Server-Sent Events server that keeps a log like the signals service's: replay after
 * Last-Event-ID, then live. It resends the event Last-Event-ID names too, so a client's own
 * "each event once" is what a test of it shows.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface LogEntry {
  id: string;
  event: string;
  data: string;
}

export interface SseServer {
  url: string;
  /** Last-Event-ID of each request, in order (undefined: none sent). */
  opened: (string | undefined)[];
  /** The Authorization header of each request, in order. */
  authorizations: (string | undefined)[];
  publish(event?: string): LogEntry;
  /** Ends every open stream without a word (a dropped connection). */
  drop(): void;
  close(): Promise<void>;
}

const payload = (n: number, event: string) =>
  JSON.stringify({
    event,
    timestamp: '2026-01-15T09:30:00.000Z',
    data: { id: `sig_${n}`, type: 'premium', is_premium: true },
  });

export async function sseServer(
  handle?: (req: IncomingMessage, res: ServerResponse, server: SseServer) => boolean,
): Promise<SseServer> {
  const log: LogEntry[] = [];
  const open = new Set<ServerResponse>();
  const frame = (e: LogEntry) => `id: ${e.id}\nevent: ${e.event}\ndata: ${e.data}\n\n`;
  const self: SseServer = {
    url: '',
    opened: [],
    authorizations: [],
    publish(event = 'signal.new') {
      const n = log.length + 1;
      const entry = { id: `${n}-0`, event, data: payload(n, event) };
      log.push(entry);
      for (const res of open) res.write(frame(entry));
      return entry;
    },
    drop() {
      for (const res of open) res.destroy();
      open.clear();
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const res of open) res.destroy();
        http.close(() => resolve());
      }),
  };
  const http: Server = createServer((req, res) => {
    const last = req.headers['last-event-id'];
    const lastId = typeof last === 'string' ? last : undefined;
    self.opened.push(lastId);
    self.authorizations.push(req.headers.authorization);
    if (handle?.(req, res, self)) return;
    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8' });
    res.write('retry: 20\n\n');
    if (lastId !== undefined) {
      const at = log.findIndex((e) => e.id === lastId);
      // From the named event itself: an overlap a careless client would hand out twice.
      for (const e of log.slice(Math.max(at, 0))) res.write(frame(e));
    }
    open.add(res);
    res.once('close', () => open.delete(res));
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  self.url = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
  return self;
}

/** Runs `fn` once the server has taken `n` requests (polled: the stream's opening is the client's). */
export function whenOpened(server: SseServer, n: number, fn: () => void): void {
  const timer = setInterval(() => {
    if (server.opened.length >= n) {
      clearInterval(timer);
      fn();
    }
  }, 5);
}
