import { connectRedis } from '@signal/service-kit';
import { freePort, infraUrls, silentLogger, testBrokerPrefix, waitFor } from '@signal/test-kit';
import { connect } from 'amqplib';
import { z } from 'zod';
import { AmqpClient, Consumer, OutboxRelay, removeBrokerPrefix } from '../src';

describe('Consumer against RabbitMQ', () => {
  const broker = testBrokerPrefix('consumer', removeBrokerPrefix);
  const queue = `${broker.prefix}jobs`;
  let client: AmqpClient;
  beforeAll(async () => {
    client = new AmqpClient({ url: infraUrls().amqpUrl, logger: silentLogger, name: 'test' });
    client.start();
    await client.waitUntilConnected();
  });
  afterAll(async () => {
    await client.close();
    await broker.cleanup([queue]);
  });

  it('when a handler fails, then the message is retried up to maxAttempts and then dead-lettered; poison goes straight there', async () => {
    const seen: Array<{ n: number; attempt: number }> = [];
    const consumer = new Consumer({
      client,
      logger: silentLogger,
      queue,
      schema: z.object({ n: z.number() }),
      policy: { maxAttempts: 3, retryDelayMs: 50, handlerTimeoutMs: 1000 },
      prefetch: 5,
      queueType: 'classic',
      handler: async (m, meta) => {
        seen.push({ n: m.n, attempt: meta.attempt });
        if (m.n === 1) throw new Error('always fails');
      },
    });
    await consumer.start();
    await client.publish('', queue, Buffer.from(JSON.stringify({ n: 1 })), { messageId: 'm1' });
    await client.publish('', queue, Buffer.from(JSON.stringify({ n: 2 })), { messageId: 'm2' });
    await client.publish('', queue, Buffer.from('not json'), { messageId: 'm3' });
    await waitFor(() => seen.filter((s) => s.n === 1).length === 3, 5000, 20, 'three attempts');
    await new Promise((r) => setTimeout(r, 300));
    expect(seen.filter((s) => s.n === 1).map((s) => s.attempt)).toEqual([1, 2, 3]);
    expect(seen.filter((s) => s.n === 2)).toHaveLength(1);
    await consumer.stop();

    const conn = await connect(infraUrls().amqpUrl);
    const ch = await conn.createChannel();
    const dead = await ch.checkQueue(`${queue}.dead`);
    expect(dead.messageCount).toBe(2);
    await conn.close();
  });
});

describe('Consumer when a store is down', () => {
  const broker = testBrokerPrefix('consumer_store', removeBrokerPrefix);
  const queue = `${broker.prefix}jobs`;
  let client: AmqpClient;
  let unreachable: Awaited<ReturnType<typeof connectRedis>>;
  beforeAll(async () => {
    client = new AmqpClient({ url: infraUrls().amqpUrl, logger: silentLogger, name: 'test' });
    client.start();
    await client.waitUntilConnected();
    // The services' own Redis client, pointed at a port where no Redis listens: it fails fast.
    unreachable = await connectRedis(`redis://127.0.0.1:${await freePort()}`, silentLogger, 100);
  });
  afterAll(async () => {
    unreachable.disconnect();
    await client.close();
    await broker.cleanup([queue]);
  });

  it('when the handler fails because Redis is unreachable, then the message waits beyond maxAttempts without spending them, and is handled once it is back', async () => {
    const attempts: number[] = [];
    const consumer = new Consumer({
      client,
      logger: silentLogger,
      queue,
      schema: z.object({ n: z.number() }),
      policy: { maxAttempts: 2, retryDelayMs: 50, handlerTimeoutMs: 1000 },
      prefetch: 5,
      queueType: 'classic',
      handler: async (_m, meta) => {
        attempts.push(meta.attempt);
        if (attempts.length <= 5) await unreachable.get('k');
      },
    });
    await consumer.start();
    await client.publish('', queue, Buffer.from(JSON.stringify({ n: 1 })), { messageId: 'm1' });
    await waitFor(() => attempts.length === 6, 5000, 20, 'six tries');
    await new Promise((r) => setTimeout(r, 200));
    await consumer.stop();
    expect(attempts).toEqual([1, 1, 1, 1, 1, 1]);
    const conn = await connect(infraUrls().amqpUrl);
    const ch = await conn.createChannel();
    expect((await ch.checkQueue(`${queue}.dead`)).messageCount).toBe(0);
    await conn.close();
  });
});

describe('OutboxRelay', () => {
  it('when a pending document has no event left to publish, then it is marked done and not found again', async () => {
    const outbox = new Map<string, string[]>([['empty-batch', []]]);
    const marked: Array<{ id: string; ids: string[]; all: boolean }> = [];
    const relay = new OutboxRelay<string>({
      logger: silentLogger,
      eventId: (e) => e,
      publish: async () => undefined,
      store: {
        findPending: async () =>
          [...outbox].map(([documentId, events]) => ({ documentId, events: [...events] })),
        findPendingByIds: async (ids) =>
          [...outbox]
            .filter(([id]) => ids.includes(id))
            .map(([documentId, events]) => ({ documentId, events: [...events] })),
        markPublished: async (id, ids, all) => {
          marked.push({ id, ids, all });
          if (all) outbox.delete(id);
        },
      },
    });
    await relay.drain();
    expect(marked).toEqual([{ id: 'empty-batch', ids: [], all: true }]);
    expect(outbox.size).toBe(0);
  });

  it('when publishing fails half-way, then only confirmed events leave the outbox and the rest go on the next pass', async () => {
    const outbox = new Map<string, string[]>([
      ['doc1', ['e1', 'e2']],
      ['doc2', ['e3']],
    ]);
    let brokerUp = false;
    const published: string[] = [];
    const relay = new OutboxRelay<string>({
      logger: silentLogger,
      eventId: (e) => e,
      publish: async (e) => {
        if (!brokerUp && e !== 'e1') throw new Error('down');
        published.push(e);
      },
      store: {
        findPending: async () =>
          [...outbox]
            .filter(([, ev]) => ev.length)
            .map(([documentId, events]) => ({ documentId, events: [...events] })),
        findPendingByIds: async (ids) =>
          [...outbox]
            .filter(([id, ev]) => ids.includes(id) && ev.length)
            .map(([documentId, events]) => ({ documentId, events: [...events] })),
        markPublished: async (id, ids) =>
          void outbox.set(
            id,
            outbox.get(id)!.filter((e) => !ids.includes(e)),
          ),
      },
    });
    expect(await relay.drain()).toBe(1);
    expect(outbox.get('doc1')).toEqual(['e2']);
    brokerUp = true;
    // The failed sweep is retried within a second; a hint is served at once.
    relay.runSoon(['doc2']);
    expect(await relay.drain()).toBe(1);
    await new Promise((r) => setTimeout(r, 1100));
    expect(await relay.drain()).toBe(1);
    expect(published.sort()).toEqual(['e1', 'e2', 'e3']);
    expect([...outbox.values()].flat()).toEqual([]);
  });
});
