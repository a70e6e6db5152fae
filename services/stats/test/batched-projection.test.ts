import { statsResponseSchema, type SignalSnapshot } from '@signal/contracts';
import { removeBrokerPrefix, brokerNames } from '@signal/messaging';
import { newId } from '@signal/service-kit';
import { infraUrls, signalSnapshotFixture, testBrokerPrefix, waitFor } from '@signal/test-kit';
import { connect } from 'amqplib';
import request from 'supertest';
import { startStats, type StatsHarness } from './stats-harness';

/**
 * The consumer projects events by the batch (first versions in one insert, the newest state of
 * each signal only). A burst straight onto the bus — creates, later versions before and after
 * their creates, duplicates — must count exactly as the events one by one would.
 */
const broker = testBrokerPrefix('stats_batch', removeBrokerPrefix);
let stats: StatsHarness;

beforeAll(async () => {
  stats = await startStats('stats_batch', broker.prefix);
});
afterAll(async () => {
  await stats.stop();
  await broker.cleanup();
});

const stateOf = (id: string, version: number, winner: boolean): SignalSnapshot => {
  const at = new Date(Date.now() - 60_000).toISOString();
  const s = signalSnapshotFixture(id, at);
  return {
    ...s,
    type: 'premium',
    is_premium: true,
    version,
    performance: winner ? { roi: 150, ath_roi: 150, status: 'winner', time_to_ath_hours: 1 } : s.performance,
  };
};

async function publishAll(events: Array<{ name: string; signal: SignalSnapshot }>): Promise<void> {
  const conn = await connect(infraUrls().amqpUrl);
  const ch = await conn.createConfirmChannel();
  const exchange = brokerNames(broker.prefix).signalEvents;
  for (const e of events) {
    const id = newId('evt');
    const body = { id, name: e.name, occurred_at: e.signal.updated_at, signal: e.signal };
    ch.publish(exchange, e.name, Buffer.from(JSON.stringify(body)), { messageId: id, persistent: true });
  }
  await ch.waitForConfirms();
  await conn.close();
}

const premium = async () => {
  const res = await request(stats.url).get('/v1/stats?type=premium').set(stats.auth).expect(200);
  return statsResponseSchema.parse(res.body).data;
};

describe('stats consumer, batched projection', () => {
  it('when a burst carries creates, later versions in either order and duplicates, then every signal counts once in its newest state', async () => {
    const ids = Array.from({ length: 300 }, () => newId('sig'));
    const events: Array<{ name: string; signal: SignalSnapshot }> = [];
    for (const [i, id] of ids.entries()) {
      const created = { name: 'signal.new', signal: stateOf(id, 1, false) };
      if (i % 5 === 0) {
        const won = { name: 'signal.winner', signal: stateOf(id, 2, true) };
        // Half of the winners arrive before their create.
        events.push(...(i % 10 === 0 ? [won, created] : [created, won]));
      } else events.push(created);
      if (i % 7 === 0) events.push(created); // redelivered
    }
    await publishAll(events);
    await waitFor(async () => (await premium()).total_signals === 300, 15_000, 100, 'all 300 projected');
    // Settled: nothing more moves, and exactly the 60 winners count as such.
    await new Promise((r) => setTimeout(r, 500));
    const figures = await premium();
    expect(figures.total_signals).toBe(300);
    expect(figures.winners).toBe(60);
    expect(figures.best_roi).toBe(150);
  });

  it('when the same burst arrives again, then nothing changes', async () => {
    const before = await premium();
    const id = newId('sig');
    await publishAll([
      { name: 'signal.winner', signal: stateOf(id, 2, true) },
      { name: 'signal.new', signal: stateOf(id, 1, false) },
    ]);
    await waitFor(
      async () => (await premium()).total_signals === before.total_signals + 1,
      10_000,
      100,
      'one more',
    );
    await publishAll([
      { name: 'signal.new', signal: stateOf(id, 1, false) },
      { name: 'signal.winner', signal: stateOf(id, 2, true) },
    ]);
    await new Promise((r) => setTimeout(r, 1000));
    const after = await premium();
    expect(after.total_signals).toBe(before.total_signals + 1);
    expect(after.winners).toBe(before.winners + 1);
  });
});
