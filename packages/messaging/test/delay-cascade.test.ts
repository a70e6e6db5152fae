import { infraUrls, testBrokerPrefix, waitFor } from '@signal/test-kit';
import { connect, type ChannelModel, type ConfirmChannel } from 'amqplib';
import {
  DELAY_LEVELS,
  brokerNames,
  declareDelayCascade,
  delayRoutingKey,
  delayUnits,
  entryLevel,
  levelPattern,
  removeBrokerPrefix,
} from '../src';

describe('delay cascade rules', () => {
  it('when a wait is turned into units, then it is rounded up (never early) and capped at one pass', () => {
    expect(delayUnits(0)).toBe(0);
    expect(delayUnits(1)).toBe(1);
    expect(delayUnits(250)).toBe(1);
    expect(delayUnits(251)).toBe(2);
    expect(delayUnits(10 * 3_600_000)).toBe(2 ** DELAY_LEVELS - 1);
  });

  it('when a wait is written as a routing key, then each level has its bit, the highest first', () => {
    expect(delayRoutingKey(5).split('.')).toHaveLength(DELAY_LEVELS);
    expect(delayRoutingKey(5).endsWith('.1.0.1')).toBe(true);
    expect(entryLevel(5)).toBe(2);
    expect(levelPattern(0, 1)).toBe(`${'*.'.repeat(DELAY_LEVELS - 1)}1`);
    expect(levelPattern(2, 0)).toBe(`${'*.'.repeat(DELAY_LEVELS - 3)}0.#`);
  });
});

describe('delay cascade against RabbitMQ', () => {
  const broker = testBrokerPrefix('cascade', removeBrokerPrefix);
  const names = brokerNames(broker.prefix);
  let conn: ChannelModel;
  let channel: ConfirmChannel;
  beforeAll(async () => {
    conn = await connect(infraUrls().amqpUrl);
    channel = await conn.createConfirmChannel();
    await channel.assertQueue(names.deliveriesQueue, { durable: true });
    await declareDelayCascade(channel, names.deliveryDelayLevel, names.deliveriesQueue);
  });
  afterAll(async () => {
    await conn.close();
    await broker.cleanup();
  });

  it('when messages wait different times, then each arrives when due (not early, within a unit), a long one never holding back a short one', async () => {
    const arrived = new Map<string, number>();
    await channel.consume(names.deliveriesQueue, (msg) => {
      if (!msg) return;
      arrived.set(msg.content.toString(), Date.now());
      channel.ack(msg);
    });
    const waits = [3250, 250, 1000, 1750];
    const sent = Date.now();
    for (const ms of waits) {
      const units = delayUnits(ms);
      channel.publish(
        names.deliveryDelayLevel(entryLevel(units)),
        delayRoutingKey(units),
        Buffer.from(String(ms)),
      );
    }
    await channel.waitForConfirms();
    await waitFor(() => arrived.size === waits.length, 60_000, 20, 'all four delayed messages');
    // Never early, and in the order of their waits: a long wait holding back a short one (a
    // per-message TTL in one shared queue) would deliver the 250 ms one after the 3,250 ms one.
    for (const ms of waits) {
      const took = (arrived.get(String(ms)) ?? Infinity) - sent;
      expect(took).toBeGreaterThanOrEqual(ms - 20);
    }
    expect([...arrived.keys()]).toEqual([...waits].sort((a, b) => a - b).map(String));
  }, 180_000);
});
