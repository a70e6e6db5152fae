import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A stand-in for the signals service's live stream: an event every 20 ms to each open stream. */
export interface StreamStandIn {
  url: string;
  close(): Promise<void>;
}

export async function startStreamStandIn(): Promise<StreamStandIn> {
  const open = new Set<ServerResponse>();
  const service = createServer((req: IncomingMessage, res: ServerResponse) => {
    if (!req.url?.startsWith('/v1/signals/stream')) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-store' });
    // A HEAD is answered with the stream's head alone, as the service answers it.
    if (req.method === 'HEAD') {
      res.end();
      return;
    }
    res.write('retry: 2000\n\n');
    open.add(res);
    let n = 0;
    const timer = setInterval(() => {
      n += 1;
      res.write(`id: ${n}\nevent: signal.new\ndata: {"n":${n}}\n\n`);
    }, 20);
    res.once('close', () => {
      clearInterval(timer);
      open.delete(res);
    });
  });
  await new Promise<void>((resolve) => service.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(service.address() as AddressInfo).port}`,
    close: async () => {
      for (const res of open) res.destroy();
      await new Promise<void>((resolve) => service.close(() => resolve()));
    },
  };
}
