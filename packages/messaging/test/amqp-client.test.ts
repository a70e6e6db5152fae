import {
  freePort,
  infraUrls,
  silentLogger,
  startTcpProxy,
  testBrokerPrefix,
  viaProxy,
  waitFor,
} from '@signal/test-kit';
import { connect } from 'amqplib';
import { AmqpClient, removeBrokerPrefix } from '../src';

/** Several brokers in AMQP_URL: the client goes round them against the real RabbitMQ. */
describe('AmqpClient with several broker URLs', () => {
  const broker = testBrokerPrefix('amqp-urls', removeBrokerPrefix);
  const queues: string[] = [];
  afterAll(async () => {
    await broker.cleanup(queues);
  });

  async function declare(queue: string): Promise<void> {
    queues.push(queue);
    const conn = await connect(infraUrls().amqpUrl);
    try {
      const ch = await conn.createChannel();
      await ch.assertQueue(queue, { durable: false, autoDelete: false });
    } finally {
      await conn.close();
    }
  }

  async function take(queue: string): Promise<string | undefined> {
    const conn = await connect(infraUrls().amqpUrl);
    try {
      const ch = await conn.createChannel();
      const msg = await ch.get(queue, { noAck: true });
      return msg ? msg.content.toString() : undefined;
    } finally {
      await conn.close();
    }
  }

  function closedLoopbackUrl(port: number): string {
    const u = new URL(infraUrls().amqpUrl);
    u.hostname = '127.0.0.1';
    u.port = String(port);
    return u.toString();
  }

  it('when the first URL is a closed loopback port and the second the real broker, then the client connects and publishes', async () => {
    const queue = `${broker.prefix}first-down`;
    await declare(queue);
    const closed = closedLoopbackUrl(await freePort());
    const client = new AmqpClient({
      url: `${closed},${infraUrls().amqpUrl}`,
      logger: silentLogger,
      name: 'test-amqp-urls',
      minBackoffMs: 10_000,
    });
    try {
      client.start();
      // Well inside the 10 s backoff: the second broker is tried at once, not after a wait.
      await client.waitUntilConnected(3000);
      await client.publish('', queue, Buffer.from('via the second broker'), { messageId: 'm1' });
      expect(await take(queue)).toBe('via the second broker');
    } finally {
      await client.close();
    }
  });

  it('when the broker in use goes away, then the client reconnects to the next one in the list', async () => {
    const queue = `${broker.prefix}failover`;
    await declare(queue);
    const { hostname, port } = new URL(infraUrls().amqpUrl);
    const proxy = await startTcpProxy(hostname, Number(port || 5672));
    const client = new AmqpClient({
      url: [viaProxy(infraUrls().amqpUrl, proxy), infraUrls().amqpUrl],
      logger: silentLogger,
      name: 'test-amqp-urls',
      minBackoffMs: 20,
      maxBackoffMs: 100,
    });
    try {
      client.start();
      await client.waitUntilConnected(3000);
      await client.publish('', queue, Buffer.from('first'), { messageId: 'm1' });

      // Losing the connection proves it went through the proxy; the proxy now refuses everyone,
      // so being connected again means the client moved on to the second URL.
      proxy.cut();
      await waitFor(() => !client.connected, 5000, 10, 'the loss to be seen');
      await client.waitUntilConnected(5000);
      await client.publish('', queue, Buffer.from('second'), { messageId: 'm2' });
      expect([await take(queue), await take(queue)]).toEqual(['first', 'second']);
    } finally {
      await client.close();
      await proxy.close();
    }
  });
});
