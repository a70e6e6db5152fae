import type { Connection } from 'mongoose';
import type { Logger } from './logger';

/**
 * Works around a wedge in the MongoDB driver's server monitor (mongodb 7.8, reproduced by
 * `pnpm chaos`): when a network cut closes the monitor's socket in the same tick as a heartbeat
 * starts, the heartbeat writes to the destroyed socket, waits for a 'drain' that never comes,
 * and the monitor never checks again. The server then stays "Unknown" and every operation fails
 * server selection for good, long after the database is back, until the process restarts.
 *
 * A heartbeat has a bound: a polling one ends within the connect timeout (twice, with the
 * handshake), an awaited (streaming) one within the heartbeat interval plus that. One still
 * open well past its bound is wedged; closing and reconnecting the client replaces the monitor
 * (public API; the Db and collections the service holds keep working).
 */
/** The rule: which servers have a heartbeat open past its bound. */
export class HeartbeatWatch {
  private readonly open = new Map<string, { since: number; boundMs: number }>();
  private readonly polledBoundMs: number;
  private readonly awaitedBoundMs: number;

  constructor(timing: { connectTimeoutMS: number; heartbeatFrequencyMS: number }) {
    this.polledBoundMs = 2 * timing.connectTimeoutMS + 2000;
    this.awaitedBoundMs = timing.heartbeatFrequencyMS + this.polledBoundMs;
  }

  started(server: string, awaited: boolean, now = Date.now()): void {
    if (!this.open.has(server))
      this.open.set(server, { since: now, boundMs: awaited ? this.awaitedBoundMs : this.polledBoundMs });
  }

  ended(server: string): void {
    this.open.delete(server);
  }

  wedged(now = Date.now()): string[] {
    return [...this.open].filter(([, h]) => now - h.since > h.boundMs).map(([server]) => server);
  }

  clear(): void {
    this.open.clear();
  }
}

export function watchMongoMonitors(
  connection: Connection,
  timing: { connectTimeoutMS: number; heartbeatFrequencyMS: number },
  logger?: Logger,
  checkEveryMs = 1000,
): () => void {
  const client = connection.getClient();
  const watch = new HeartbeatWatch(timing);
  const onStarted = (e: { connectionId: string; awaited: boolean }) =>
    watch.started(e.connectionId, e.awaited);
  const onEnded = (e: { connectionId: string }) => watch.ended(e.connectionId);
  client.on('serverHeartbeatStarted', onStarted);
  client.on('serverHeartbeatSucceeded', onEnded);
  client.on('serverHeartbeatFailed', onEnded);

  let restarting = false;
  const timer = setInterval(() => {
    const wedged = watch.wedged();
    if (wedged.length === 0 || restarting) return;
    restarting = true;
    watch.clear();
    logger?.warn({ servers: wedged }, 'mongodb monitor wedged: reconnecting the client');
    void client
      .close()
      .then(() => client.connect())
      .then(
        () => logger?.info('mongodb client reconnected'),
        (err: unknown) =>
          logger?.warn({ err: err instanceof Error ? err.message : String(err) }, 'mongodb reconnect failed'),
      )
      .finally(() => (restarting = false));
  }, checkEveryMs);
  timer.unref();
  return () => {
    clearInterval(timer);
    client.off('serverHeartbeatStarted', onStarted);
    client.off('serverHeartbeatSucceeded', onEnded);
    client.off('serverHeartbeatFailed', onEnded);
  };
}
