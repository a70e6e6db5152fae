import { connect, type ChannelModel, type ConfirmChannel, type Options } from 'amqplib';
import { currentRequestId } from '@signal/service-kit';
import type { Logger } from 'pino';

export type ChannelSetup = (channel: ConfirmChannel) => Promise<void>;

export interface AmqpClientOptions {
  /**
   * One broker URL, several (an array, or one string of comma-separated URLs, as in `AMQP_URL`).
   * With several, connecting tries them in turn from the last one that worked.
   */
  url: string | readonly string[];
  logger: Logger;
  /** Shown in the broker's connection list. */
  name: string;
  minBackoffMs?: number;
  maxBackoffMs?: number;
}

/**
 * One AMQP connection that heals itself: on loss it reconnects with capped exponential
 * backoff and re-runs every registered setup (topology, consumers) on fresh channels.
 * Given several brokers (e.g. the nodes of a cluster), each attempt goes round the list once,
 * starting from the broker that last worked and moving on at each failure; the backoff only
 * applies once every broker has failed.
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
  private readonly urls: readonly string[];
  /** The broker tried first on the next attempt: the last that worked, or the next after a failure. */
  private urlIndex = 0;
  private connectedTo?: string;

  constructor(private readonly options: AmqpClientOptions) {
    const urls = typeof options.url === 'string' ? options.url.split(',') : options.url;
    this.urls = urls.map((u) => u.trim()).filter((u) => u.length > 0);
    if (this.urls.length === 0) throw new Error('AmqpClient needs at least one broker URL');
  }

  get connected(): boolean {
    return this.publishChannel !== undefined;
  }

  /** The broker in use (its URL as given), or undefined while not connected. */
  get connectedUrl(): string | undefined {
    return this.connected ? this.connectedTo : undefined;
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
    const requestId = currentRequestId();
    await new Promise<void>((resolve, reject) => {
      channel.publish(
        exchange,
        routingKey,
        body,
        {
          persistent: true,
          contentType: 'application/json',
          ...options,
          // The request that caused a message travels with it (and on with what it causes).
          headers: requestId ? { 'x-request-id': requestId, ...options.headers } : options.headers,
        },
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
    for (let tried = 0; tried < this.urls.length; tried += 1) {
      if (this.closing || this.connected) return;
      const index = this.urlIndex;
      if (await this.connectTo(index)) return;
      this.urlIndex = (index + 1) % this.urls.length;
    }
    this.scheduleReconnect();
  }

  /** One attempt against one broker; true once connected and set up. */
  private async connectTo(index: number): Promise<boolean> {
    const { logger, name } = this.options;
    const url = this.urls[index]!;
    const broker = { broker: brokerLabel(url), index: index + 1, of: this.urls.length };
    let opened: ChannelModel | undefined;
    try {
      const connection = await connect(url, { clientProperties: { connection_name: name }, timeout: 5000 });
      opened = connection;
      if (this.closing) throw new Error('client closed while connecting');
      connection.on('error', (err: Error) => logger.warn({ err: err.message }, 'amqp connection error'));
      // Only the current connection's loss matters (not one dropped while trying the next broker).
      connection.on('close', () => {
        if (this.connection === connection) this.onLost();
      });
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
      this.connectedTo = url;
      this.attempt = 0;
      clearTimeout(this.reconnectTimer);
      this.reconnectTimer = undefined;
      logger.info({ name, ...broker }, 'amqp connected');
      const waiters = this.connectedWaiters;
      this.connectedWaiters = [];
      waiters.forEach((w) => w());
      return true;
    } catch (err) {
      logger.warn({ err: (err as Error).message, ...broker }, 'amqp connect failed');
      if (opened && this.connection === opened) {
        this.connection = undefined;
        this.publishChannel = undefined;
      }
      if (opened) await opened.close().catch(() => undefined);
      return false;
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

/** host:port of a broker URL, for logs (never the credentials). */
function brokerLabel(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return '(unparsable URL)';
  }
}
