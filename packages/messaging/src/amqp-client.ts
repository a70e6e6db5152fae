import { connect, type ChannelModel, type ConfirmChannel, type Options } from 'amqplib';
import type { Logger } from 'pino';

export type ChannelSetup = (channel: ConfirmChannel) => Promise<void>;

export interface AmqpClientOptions {
  url: string;
  logger: Logger;
  /** Shown in the broker's connection list. */
  name: string;
  minBackoffMs?: number;
  maxBackoffMs?: number;
}

/**
 * One AMQP connection that heals itself: on loss it reconnects with capped exponential
 * backoff and re-runs every registered setup (topology, consumers) on fresh channels.
 */
export class AmqpClient {
  private connection?: ChannelModel;
  private publishChannel?: ConfirmChannel;
  private readonly setups: ChannelSetup[] = [];
  private closing = false;
  private attempt = 0;
  private reconnectTimer?: NodeJS.Timeout;
  private connectedWaiters: Array<() => void> = [];
  private connectingPromise?: Promise<void>;

  constructor(private readonly options: AmqpClientOptions) {}

  get connected(): boolean {
    return this.publishChannel !== undefined;
  }

  /** Starts connecting in the background; never throws. */
  start(): void {
    void this.connectOnce();
  }

  /** Resolves once connected (or at once if already), rejects after `timeoutMs`. */
  waitUntilConnected(timeoutMs = 10_000): Promise<void> {
    if (this.connected) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('AMQP not connected in time')), timeoutMs);
      this.connectedWaiters.push(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  /** Registers a setup that runs now (if connected) and after every reconnect. */
  async addSetup(setup: ChannelSetup): Promise<void> {
    this.setups.push(setup);
    if (this.publishChannel) await setup(this.publishChannel);
  }

  /** Opens a dedicated channel (e.g. for a consumer with its own prefetch). */
  async createChannel(): Promise<ConfirmChannel> {
    if (!this.connection) throw new Error('AMQP not connected');
    return this.connection.createConfirmChannel();
  }

  /** Publishes and waits for the broker's confirm; throws when not connected or nacked. */
  async publish(exchange: string, routingKey: string, body: Buffer, options: Options.Publish): Promise<void> {
    const channel = this.publishChannel;
    if (!channel) throw new Error('AMQP not connected');
    await new Promise<void>((resolve, reject) => {
      channel.publish(
        exchange,
        routingKey,
        body,
        { persistent: true, contentType: 'application/json', ...options },
        (err) => (err ? reject(err instanceof Error ? err : new Error(String(err))) : resolve()),
      );
    });
  }

  async close(): Promise<void> {
    this.closing = true;
    clearTimeout(this.reconnectTimer);
    const connection = this.connection;
    this.connection = undefined;
    this.publishChannel = undefined;
    if (connection) await connection.close().catch(() => undefined);
  }

  private connectOnce(): Promise<void> {
    this.connectingPromise ??= this.doConnect().finally(() => {
      this.connectingPromise = undefined;
    });
    return this.connectingPromise;
  }

  private async doConnect(): Promise<void> {
    if (this.closing) return;
    const { logger, url, name } = this.options;
    try {
      const connection = await connect(url, { clientProperties: { connection_name: name }, timeout: 5000 });
      connection.on('error', (err: Error) => logger.warn({ err: err.message }, 'amqp connection error'));
      connection.on('close', () => this.onLost());
      const channel = await connection.createConfirmChannel();
      channel.on('error', (err: Error) => logger.warn({ err: err.message }, 'amqp channel error'));
      channel.on('close', () => {
        if (this.publishChannel === channel) {
          this.publishChannel = undefined;
          // A channel closed by the broker (e.g. a 404 on publish) leaves the connection up; start over.
          if (!this.closing) void connection.close().catch(() => undefined);
        }
      });
      this.connection = connection;
      for (const setup of this.setups) await setup(channel);
      this.publishChannel = channel;
      this.attempt = 0;
      logger.info({ name }, 'amqp connected');
      const waiters = this.connectedWaiters;
      this.connectedWaiters = [];
      waiters.forEach((w) => w());
    } catch (err) {
      logger.warn({ err: (err as Error).message }, 'amqp connect failed');
      if (this.connection) await this.connection.close().catch(() => undefined);
      this.connection = undefined;
      this.publishChannel = undefined;
      this.scheduleReconnect();
    }
  }

  private onLost(): void {
    this.connection = undefined;
    this.publishChannel = undefined;
    if (this.closing) return;
    this.options.logger.warn('amqp connection lost; reconnecting');
    this.scheduleReconnect();
  }

  private scheduleReconnect(): void {
    if (this.closing || this.reconnectTimer) return;
    const min = this.options.minBackoffMs ?? 200;
    const max = this.options.maxBackoffMs ?? 5000;
    const delay = Math.min(max, min * 2 ** this.attempt) * (0.8 + Math.random() * 0.4);
    this.attempt += 1;
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = undefined;
      void this.connectOnce();
    }, delay);
  }
}
