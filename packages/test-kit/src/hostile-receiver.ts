import type { Socket } from 'node:net';
import { startRawReceiver } from './raw-receiver';

/** What a hostile receiver answers, in turn: none of it is a success. */
export const HOSTILE_RESPONSES = [
  'nul-body',
  'invalid-utf8',
  'odd-header-bytes',
  'huge-body',
  'slow',
  'reset',
] as const;
export type HostileResponse = (typeof HOSTILE_RESPONSES)[number];

export interface HostileRequest {
  path: string;
  headers: Record<string, string>;
  body: string;
  /** What it was answered. */
  response: HostileResponse;
}

export interface HostileReceiver {
  url: string;
  requests: HostileRequest[];
  close(): Promise<void>;
}

const raw = (status: string, headers: Buffer[], body: Buffer) =>
  Buffer.concat([
    Buffer.from(`HTTP/1.1 ${status}\r\n`, 'latin1'),
    ...headers.map((h) => Buffer.concat([h, Buffer.from('\r\n')])),
    Buffer.from(`content-length: ${body.length}\r\nconnection: close\r\n\r\n`, 'latin1'),
    body,
  ]);

/**
 * A webhook receiver written on raw TCP, so that it can send what no well-behaved HTTP server
 * would: it reads each request whole (recorded), then answers the next of HOSTILE_RESPONSES in
 * turn — a 500 whose body holds NUL, one of invalid UTF-8, headers with control and non-ASCII
 * bytes and a name a document store would read as an operator, 3 MB of body, an answer after
 * `slowMs` (set it past the worker's timeout), a connection reset.
 */
export async function startHostileReceiver(options: { slowMs: number }): Promise<HostileReceiver> {
  const requests: HostileRequest[] = [];
  const timers = new Set<NodeJS.Timeout>();
  let turn = 0;
  const answer = (socket: Socket, kind: HostileResponse) => {
    const send = (bytes: Buffer) => socket.end(bytes);
    switch (kind) {
      case 'nul-body':
        return send(
          raw('500 Internal Server Error', [], Buffer.from('{"error":"bad\u0000byte"}\u0000', 'utf8')),
        );
      case 'invalid-utf8':
        return send(
          raw('502 Bad Gateway', [], Buffer.from([0x6f, 0x6b, 0xff, 0xfe, 0xc3, 0x28, 0x00, 0x80])),
        );
      case 'odd-header-bytes':
        return send(
          raw(
            '503 Service Unavailable',
            [
              Buffer.from('x-latin: caf\xe9 \xff\xc3\x28', 'latin1'),
              Buffer.from('$set.x: 1', 'latin1'),
              Buffer.from('x-tab: a\tb', 'latin1'),
            ],
            Buffer.from('odd headers'),
          ),
        );
      case 'huge-body':
        return send(raw('500 Internal Server Error', [], Buffer.alloc(3 * 1024 * 1024, 0x41)));
      case 'slow': {
        const timer = setTimeout(() => {
          timers.delete(timer);
          if (!socket.destroyed) send(raw('500 Internal Server Error', [], Buffer.from('late')));
        }, options.slowMs);
        timers.add(timer);
        return;
      }
      case 'reset':
        return socket.resetAndDestroy();
    }
  };
  // One request per connection: each answer ends it.
  const receiver = await startRawReceiver((socket, request, nth) => {
    if (nth > 0) return;
    const kind = HOSTILE_RESPONSES[turn++ % HOSTILE_RESPONSES.length]!;
    requests.push({ ...request, response: kind });
    answer(socket, kind);
  });
  return {
    url: receiver.url,
    requests,
    close: () => {
      for (const t of timers) clearTimeout(t);
      return receiver.close();
    },
  };
}
