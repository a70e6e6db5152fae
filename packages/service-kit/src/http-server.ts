import { createServer, type RequestListener, type Server } from 'node:http';

export interface RunningServer {
  server: Server;
  port: number;
  url: string;
  /** Stops accepting, lets in-flight requests finish (up to `graceMs`), then cuts the rest. */
  close(graceMs?: number): Promise<void>;
}

export async function startHttpServer(
  app: RequestListener,
  port: number,
  host = '127.0.0.1',
): Promise<RunningServer> {
  const server = createServer(app);
  // Longer than typical load-balancer idle timeouts, so the balancer closes first.
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 66_000;
  server.requestTimeout = 30_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('the server is not listening on TCP');
  const actual = address.port;
  return {
    server,
    port: actual,
    url: `http://${host}:${actual}`,
    close: (graceMs = 5000) =>
      new Promise<void>((resolve) => {
        const timer = setTimeout(() => server.closeAllConnections(), graceMs);
        server.close(() => {
          clearTimeout(timer);
          resolve();
        });
        server.closeIdleConnections();
      }),
  };
}
