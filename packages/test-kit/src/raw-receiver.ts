import { createServer, type AddressInfo, type Socket } from 'node:net';

/** One request as a raw receiver read it. */
export interface RawRequest {
  path: string;
  /** Lower-case names. */
  headers: Record<string, string>;
  body: string;
}

/**
 * Reads the requests a client sends on one connection, one after another (keep-alive), and hands
 * each, whole, to `onRequest` with its place on the connection (0 for the first). Bytes past a
 * request are kept for the next; nothing is answered here.
 */
export function readRequests(socket: Socket, onRequest: (request: RawRequest, nth: number) => void): void {
  let buffered = Buffer.alloc(0);
  let nth = 0;
  socket.on('data', (chunk: Buffer) => {
    buffered = Buffer.concat([buffered, chunk]);
    for (;;) {
      const end = buffered.indexOf('\r\n\r\n');
      if (end < 0) return;
      const [line = '', ...lines] = buffered.subarray(0, end).toString('latin1').split('\r\n');
      const headers: Record<string, string> = {};
      for (const l of lines) {
        const colon = l.indexOf(':');
        headers[l.slice(0, colon).trim().toLowerCase()] = l.slice(colon + 1).trim();
      }
      const length = Number(headers['content-length'] ?? 0);
      if (buffered.length < end + 4 + length) return;
      const body = buffered.subarray(end + 4, end + 4 + length).toString('utf8');
      buffered = buffered.subarray(end + 4 + length);
      onRequest({ path: line.split(' ')[1] ?? '', headers, body }, nth++);
    }
  });
}

export interface RawReceiver {
  url: string;
  /** Every request read, in order, with its place on its connection. */
  requests: Array<RawRequest & { nth: number }>;
  close(): Promise<void>;
}

/**
 * A webhook receiver on raw TCP that answers each request with whatever bytes `answer` writes to
 * the socket (or none): for what a well-behaved HTTP server never sends — interim responses, a
 * connection closed without a word, control bytes in a head.
 */
export async function startRawReceiver(
  answer: (socket: Socket, request: RawRequest, nth: number) => void,
): Promise<RawReceiver> {
  const requests: RawReceiver['requests'] = [];
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
    readRequests(socket, (request, nth) => {
      requests.push({ ...request, nth });
      answer(socket, request, nth);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
