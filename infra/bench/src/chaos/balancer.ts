import { connect, createServer, type AddressInfo, type Socket } from 'node:net';

/**
 * A round-robin TCP balancer in front of one deployable's replicas, as a Kubernetes Service is
 * in front of its pods: each new connection goes to the next replica, and a replica that refuses
 * the connection (killed, not started again yet) is passed over for the next one. Connections
 * already open to a replica that dies break with it, as they do behind a Service.
 */
export interface Balancer {
  url: string;
  /** New connections handed to each replica, by replica index. */
  handedOut: number[];
  close(): Promise<void>;
}

export async function startBalancer(backendPorts: number[]): Promise<Balancer> {
  let next = 0;
  const handedOut = backendPorts.map(() => 0);
  const sockets = new Set<Socket>();
  const track = (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  };

  const server = createServer((client) => {
    track(client);
    client.pause();
    client.on('error', () => undefined);
    const first = next;
    next = (next + 1) % backendPorts.length;
    const attempt = (tried: number) => {
      if (tried === backendPorts.length || client.destroyed) {
        client.destroy();
        return;
      }
      const index = (first + tried) % backendPorts.length;
      const upstream = connect(backendPorts[index]!, '127.0.0.1');
      upstream.once('error', () => attempt(tried + 1));
      upstream.once('connect', () => {
        handedOut[index]! += 1;
        track(upstream);
        upstream.removeAllListeners('error');
        const drop = () => {
          client.destroy();
          upstream.destroy();
        };
        upstream.on('error', drop).on('close', drop);
        client.on('error', drop).on('close', drop);
        client.pipe(upstream);
        upstream.pipe(client);
        client.resume();
      });
    };
    attempt(0);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    handedOut,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
