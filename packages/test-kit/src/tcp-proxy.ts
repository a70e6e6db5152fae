import { createServer, connect, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';

/**
 * A loopback TCP forwarder in front of a real service, to cut it off and bring it back
 * (outage tests), or to hold its traffic (a service that stops answering), without stopping the
 * shared broker or database other tests use.
 */
export interface TcpProxy {
  port: number;
  /** Drops every connection and refuses new ones. */
  cut(): void;
  restore(): void;
  /** Holds every byte both ways with the connections left open: the service stops answering. */
  stall(): void;
  /** Lets the held bytes, and later ones, through again. */
  resume(): void;
  close(): Promise<void>;
}

export async function startTcpProxy(targetHost: string, targetPort: number): Promise<TcpProxy> {
  let open = true;
  let stalled = false;
  const sockets = new Set<Socket>();
  const pairs = new Set<[Socket, Socket]>();
  const flow = ([client, upstream]: [Socket, Socket]) => {
    client.pipe(upstream);
    upstream.pipe(client);
  };
  const hold = ([client, upstream]: [Socket, Socket]) => {
    client.unpipe(upstream);
    upstream.unpipe(client);
    client.pause();
    upstream.pause();
  };
  const server = createServer((client) => {
    if (!open) {
      client.destroy();
      return;
    }
    const upstream = connect(targetPort, targetHost);
    const pair: [Socket, Socket] = [client, upstream];
    sockets.add(client);
    sockets.add(upstream);
    pairs.add(pair);
    const drop = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
      pairs.delete(pair);
    };
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
    if (stalled) hold(pair);
    else flow(pair);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    port,
    cut() {
      open = false;
      for (const s of sockets) s.destroy();
      sockets.clear();
    },
    restore() {
      open = true;
    },
    stall() {
      stalled = true;
      for (const pair of pairs) hold(pair);
    },
    resume() {
      stalled = false;
      for (const pair of pairs) flow(pair);
    },
    close: () =>
      new Promise<void>((resolve) => {
        open = false;
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

/** Rewrites a URL's host:port to go through the proxy. */
export function viaProxy(url: string, proxy: TcpProxy): string {
  const u = new URL(url);
  u.hostname = '127.0.0.1';
  u.port = String(proxy.port);
  return u.toString();
}
