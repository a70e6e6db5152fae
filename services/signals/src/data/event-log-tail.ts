import { redisClient, type Logger, type RedisClient } from '@signal/service-kit';
import type { ReadEntry } from '../domain/live-stream';
import type { EventLog } from './event-log';

export interface EventLogTailOptions {
  log: EventLog;
  redisUrl: string;
  /** Receives every entry after the log's end at start, in order, once each. */
  deliver(entries: readonly ReadEntry[]): void;
  /** Told the tail's first position (the log's last entry, or `0-0` for an empty log). */
  startAt(position: string): void;
  logger: Logger;
  blockMs?: number;
}

/**
 * Entries per read: what one hand-over writes to each stream before its bound is checked again
 * (see StreamHub.deliver), so it bounds a stream's memory with the bound.
 */
const READ_COUNT = 100;

/**
 * The process's one reader of the event log: XREAD BLOCK on a connection of its own, always from
 * the last id it handed on. A Redis outage only pauses it: it retries with a short back-off and
 * goes on from the same id, so the streams it feeds see every entry, late but none missing.
 */
export class EventLogTail {
  private connection?: RedisClient;
  private stopped = false;
  private running?: Promise<void>;
  private position: string | undefined;

  constructor(private readonly options: EventLogTailOptions) {}

  start(): void {
    const retry = (times: number) => Math.min(times * 100, 2000);
    const blockMs = this.options.blockMs ?? 2000;
    // Fails fast while Redis is away (the loop retries from its own position, not ioredis), and
    // a blocked read that never returns is given up a little after its block time.
    const connection = redisClient(this.options.redisUrl, {
      enableOfflineQueue: false,
      autoResendUnfulfilledCommands: false,
      maxRetriesPerRequest: 1,
      commandTimeout: blockMs + 3000,
      connectTimeout: 2000,
      disconnectTimeout: 200,
      retryStrategy: retry,
      connectionName: 'signals:stream-tail',
    });
    connection.on('error', () => undefined);
    this.connection = connection;
    this.running = this.run(connection, blockMs);
  }

  private async run(connection: RedisClient, blockMs: number): Promise<void> {
    let failures = 0;
    while (!this.stopped) {
      try {
        if (this.position === undefined) {
          this.position = (await this.options.log.last()) ?? '0-0';
          this.options.startAt(this.position);
        }
        const entries = await this.options.log.waitAfter(connection, this.position, READ_COUNT, blockMs);
        if (failures > 0) this.options.logger.info({ failures }, 'event log tail reading again');
        failures = 0;
        if (entries.length === 0) continue;
        this.position = entries[entries.length - 1]!.id;
        this.options.deliver(entries);
        // The sockets send what the hand-over wrote before the next one is checked against the bound.
        await new Promise((resolve) => setImmediate(resolve));
      } catch (err) {
        if (this.stopped) return;
        failures += 1;
        if (failures === 1)
          this.options.logger.warn(
            { err: err instanceof Error ? err.message : String(err) },
            'event log tail cannot read; retrying from its last position',
          );
        await new Promise((resolve) => setTimeout(resolve, Math.min(50 * failures, 1000)));
      }
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.connection?.disconnect();
    await this.running;
  }
}
