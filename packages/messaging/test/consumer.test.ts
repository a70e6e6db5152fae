import { infraUrls, silentLogger, testBrokerPrefix, waitFor } from '@signal/test-kit';
import { connect } from 'amqplib';
import { z } from 'zod';
import { AmqpClient, Consumer, OutboxRelay } from '../src';

describe('Consumer against RabbitMQ', () => {
  const broker = testBrokerPrefix('consumer');
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

describe('OutboxRelay', () => {
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
    relay.kick(['doc2']);
    expect(await relay.drain()).toBe(1);
    await new Promise((r) => setTimeout(r, 1100));
    expect(await relay.drain()).toBe(1);
    expect(published.sort()).toEqual(['e1', 'e2', 'e3']);
    expect([...outbox.values()].flat()).toEqual([]);
  });
});
