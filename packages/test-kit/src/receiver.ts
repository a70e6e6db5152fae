import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  receivedAt: number;
}

export type ReceiverBehaviour = (req: ReceivedRequest) => {
  status: number;
  delayMs?: number;
  headers?: Record<string, string>;
  /** Bytes are sent as they are (a receiver that answers what is not text). */
  body?: string | Uint8Array;
};

/** A real HTTP endpoint on loopback that records what it is sent (webhook receivers, upstreams). */
export interface Receiver {
  url: string;
  requests: ReceivedRequest[];
  setBehaviour(b: ReceiverBehaviour): void;
  close(): Promise<void>;
}

export async function startReceiver(
  behaviour: ReceiverBehaviour = () => ({ status: 200 }),
): Promise<Receiver> {
  let current = behaviour;
  const requests: ReceivedRequest[] = [];
  /** Delayed responses not yet sent: cleared on close, so a test's end waits for none of them. */
  const delayed = new Set<NodeJS.Timeout>();
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const received: ReceivedRequest = {
        method: req.method ?? '',
        path: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
        receivedAt: Date.now(),
      };
      requests.push(received);
      const response = current(received);
      const respond = () => {
        if (res.destroyed) return;
        res.writeHead(response.status, { 'content-type': 'text/plain', ...response.headers });
        res.end(response.body ?? 'ok');
      };
      if (response.delayMs) {
        const timer = setTimeout(() => {
          delayed.delete(timer);
          respond();
        }, response.delayMs);
        delayed.add(timer);
      } else respond();
    });
  });
  server.keepAliveTimeout = 5000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    setBehaviour(b) {
      current = b;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const timer of delayed) clearTimeout(timer);
        delayed.clear();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
