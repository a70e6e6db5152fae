import { infraUrls, testBrokerPrefix, waitFor } from '@signal/test-kit';
import { connect } from 'amqplib';
import { brokerNames, removeBrokerPrefix, spillingQueueArguments, type QueueType } from '../src';

/**
 * A lane no consumer reads (a rollback to a release before lanes, fewer lanes configured) hands
 * its messages to the queue every release reads: nothing waits for a consumer that is gone.
 */
describe('a spilling queue against RabbitMQ', () => {
  it.each<QueueType>(['quorum', 'classic'])(
    'when no consumer takes a %s lane, then each of its messages moves to the shared queue once, as sent',
    async (queueType) => {
      const broker = testBrokerPrefix(`spill_${queueType}`, removeBrokerPrefix);
      const names = brokerNames(broker.prefix);
      const conn = await connect(infraUrls().amqpUrl);
      try {
        const channel = await conn.createConfirmChannel();
        await channel.assertQueue(names.deliveriesQueue, {
          durable: true,
          arguments: { 'x-queue-type': queueType },
        });
        const lane = names.deliveryLane(3);
        await channel.assertQueue(lane, {
          durable: true,
          arguments: spillingQueueArguments(queueType, 300, names.deliveriesQueue),
        });
        for (let i = 0; i < 5; i++)
          channel.sendToQueue(lane, Buffer.from(`job-${i}`), { persistent: true, messageId: `m${i}` });
        await channel.waitForConfirms();

        const arrived: Array<{ body: string; messageId: unknown }> = [];
        await channel.consume(names.deliveriesQueue, (msg) => {
          if (!msg) return;
          arrived.push({ body: msg.content.toString(), messageId: msg.properties.messageId });
          channel.ack(msg);
        });
        await waitFor(() => arrived.length >= 5, 30_000, 20, 'the lane to spill');
        await new Promise((r) => setTimeout(r, 500));
        expect(arrived).toEqual([0, 1, 2, 3, 4].map((i) => ({ body: `job-${i}`, messageId: `m${i}` })));
        expect((await channel.checkQueue(lane)).messageCount).toBe(0);
      } finally {
        await conn.close();
        await broker.cleanup();
      }
    },
    60_000,
  );
});
