import type { GracefulShutdown } from './shutdown';

/** A background worker of a service (relay, consumer, keeper), started and stopped by the one runner. */
export interface BackgroundWorker {
  name: string;
  start(): Promise<void> | void;
  stop(): Promise<void>;
}

/** Starts a service's workers in their declared order (main.ts and the test harnesses alike). */
export async function startWorkers(workers: BackgroundWorker[]): Promise<void> {
  for (const worker of workers) await worker.start();
}

/**
 * The one shutdown order: the HTTP server stops taking requests, then the workers stop in
 * reverse start order, then the connections close in the order given.
 */
export function registerShutdown(
  shutdown: GracefulShutdown,
  parts: {
    http: { close(): Promise<void> };
    workers: BackgroundWorker[];
    connections: Array<[name: string, close: () => Promise<void>]>;
  },
): GracefulShutdown {
  shutdown.register('http', () => parts.http.close());
  for (const worker of [...parts.workers].reverse()) shutdown.register(worker.name, () => worker.stop());
  for (const [name, close] of parts.connections) shutdown.register(name, close);
  return shutdown;
}
