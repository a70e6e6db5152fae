import { SIGNAL_EVENT_VERSION, type Statistics } from '@signal/contracts';
import { removeBrokerPrefix, brokerNames, runDeadLetterCli } from '@signal/messaging';
import { infraUrls, startReceiver, testBrokerPrefix, waitFor, type Receiver } from '@signal/test-kit';
import { connect, type ChannelModel, type ConfirmChannel } from 'amqplib';
import request from 'supertest';
import { startStats, type StatsHarness } from './stats-harness';
import { startWebhooks, type WebhooksHarness } from '../../webhooks/test/webhooks-harness';

/**
 * Independent deploys: consumers deployed before a producer's next version keep working, and
 * what they cannot handle is parked where an operator can see and replay it.
 */
const broker = testBrokerPrefix('evver', removeBrokerPrefix);
const names = brokerNames(broker.prefix);
const ACC = 'acc_event_versions';
let stats: StatsHarness;
let hooks: WebhooksHarness;
let receiver: Receiver;
let conn: ChannelModel;
let channel: ConfirmChannel;
let seq = 0;

beforeAll(async () => {
  stats = await startStats('evver_stats', broker.prefix);
  hooks = await startWebhooks({ label: 'evver_wh', prefix: broker.prefix });
  receiver = await startReceiver();
  conn = await connect(infraUrls().amqpUrl);
  channel = await conn.createConfirmChannel();
});
afterAll(async () => {
  await conn.close().catch(() => undefined);
  await hooks.stop();
  await stats.stop();
  await receiver.close();
  await broker.cleanup();
});

/** A ULID-shaped id unique to this run (26 Crockford characters). */
function ulidish(): string {
  seq += 1;
  return `01KAB${Date.now().toString(32).toUpperCase().padStart(11, '0')}${String(seq).padStart(10, '0')}`
    .replace(/[ILOU]/g, 'X')
    .slice(0, 26);
}

/** A signal event as a producer one version ahead writes it: fields added at every level. */
function nextVersionEvent(name: string, type: 'new' | 'wallet' = 'wallet') {
  const now = new Date().toISOString();
  return {
    schema_version: SIGNAL_EVENT_VERSION + 1,
    id: `evt_${ulidish()}`,
    name,
    occurred_at: now,
    producer_region: 'eu-1',
    signal: {
      id: `sig_${ulidish()}`,
      chain: 'solana',
      token: {
        symbol: 'NEXT',
        name: 'Next',
        contract: 'So1anaNext000000000000000pump',
        age_hours: 1,
        dex_paid: false,
        decimals: 9,
        socials: { twitter: null, telegram: null, website: null, discord: null },
      },
      metrics: {
        mcap_entry: 1000,
        mcap_current: 3000,
        volume_24h: 10,
        holders: 5,
        liquidity: 100,
        mcap_ath: 3000,
        price_usd: 0.1,
      },
      performance: { roi: 200, ath_roi: 200, status: 'winner', time_to_ath_hours: 1, drawdown: 0 },
      type,
      is_premium: false,
      created_at: now,
      updated_at: now,
      version: 2,
    },
  };
}

async function publish(
  event: { id: string; name: string },
  queue?: string,
  headers: Record<string, string> = {},
) {
  const body = Buffer.from(JSON.stringify(event));
  if (queue) channel.sendToQueue(queue, body, { messageId: event.id, persistent: true, headers });
  else channel.publish(names.signalEvents, event.name, body, { messageId: event.id, persistent: true });
  await channel.waitForConfirms();
}

const getStats = async () =>
  (await request(stats.url).get('/v1/stats?period=all').set(stats.auth).expect(200)).body.data as Statistics;
const deadCount = async (queue: string) => (await channel.checkQueue(`${queue}.dead`)).messageCount;
/** Quorum queues report counts once the log applied the acks: poll, briefly. */
const deadCountSettles = (queue: string, n: number) =>
  waitFor(async () => (await deadCount(queue)) === n, 5000, 50, `${queue}.dead to hold ${n}`);

async function dlq(service: string, queues: Record<string, string>, argv: string[]) {
  let out = '';
  const code = await runDeadLetterCli({
    service,
    queues,
    argv,
    env: { AMQP_URL: infraUrls().amqpUrl, AMQP_PREFIX: broker.prefix },
    out: (t) => (out += t),
  });
  return { code, out };
}
const statsQueues = { 'signal-events': brokerNames().statsQueue };

describe('a producer one version ahead', () => {
  it("when it publishes events with added fields, then today's stats and webhooks consumers handle them and dead-letter nothing", async () => {
    const sub = await request(hooks.url)
      .post('/v1/webhooks')
      .set(hooks.auth(ACC))
      .send({ url: `${receiver.url}/next`, events: ['signal.winner'] })
      .expect(201);
    const before = await getStats();
    const event = nextVersionEvent('signal.winner');
    await publish(event);

    await waitFor(
      async () => (await getStats()).total_signals === before.total_signals + 1,
      10_000,
      100,
      'stats',
    );
    const after = await getStats();
    expect(after.by_type.wallet.winners).toBe(before.by_type.wallet.winners + 1);

    await waitFor(() => receiver.requests.some((r) => r.path === '/next'), 10_000, 50, 'delivery');
    const delivered = JSON.parse(receiver.requests.find((r) => r.path === '/next')!.body);
    // Subscribers get today's contract: the producer's added fields do not leak to them.
    expect(delivered.event).toBe('signal.winner');
    expect(delivered.data.id).toBe(event.signal.id);
    expect(delivered.data.metrics).not.toHaveProperty('price_usd');
    expect(delivered.data).not.toHaveProperty('chain');
    expect(delivered.data.token).not.toHaveProperty('decimals');
    expect(sub.body.data.id).toMatch(/^wh_/);

    expect(await deadCount(names.statsQueue)).toBe(0);
    expect(await deadCount(names.webhooksQueue)).toBe(0);
  });

  it("when it announces an event name today's consumers do not know, then they skip it: no dead letter, no delivery", async () => {
    const delivered = receiver.requests.length;
    const before = await getStats();
    await publish(nextVersionEvent('signal.archived'));
    // The stats queue binds signal.*: it receives the event and must skip it, not park it.
    await waitFor(
      async () => (await channel.checkQueue(names.statsQueue)).messageCount === 0,
      5000,
      50,
      'drained',
    );
    await new Promise((r) => setTimeout(r, 300));
    expect(await deadCount(names.statsQueue)).toBe(0);
    expect(receiver.requests.length).toBe(delivered);
    expect(await getStats()).toEqual(before);
  });
});

describe('dead letters', () => {
  it('when a message cannot be read, then it is parked in .dead, and `dlq list` and `dlq show` show it with the reason', async () => {
    await publish({ id: 'evt_poison', name: 'signal.updated', garbage: true } as {
      id: string;
      name: string;
    });
    await waitFor(async () => (await deadCount(names.statsQueue)) === 1, 10_000, 50, 'poison parked');

    const listed = await dlq('stats', statsQueues, ['list']);
    expect(listed.code).toBe(0);
    expect(listed.out).toContain(`${names.statsQueue}.dead: 1 dead letter(s)`);
    expect(listed.out).toMatch(/evt_poison\s+signal\.updated\s+attempts=1 .*invalid message/);

    const shown = await dlq('stats', statsQueues, ['show', '--id', 'evt_poison']);
    expect(shown.code).toBe(0);
    expect(shown.out).toContain('"garbage": true');
    // Listing and showing leave the letter in place.
    await deadCountSettles(names.statsQueue, 1);

    const dropped = await dlq('stats', statsQueues, ['drop', '--id', 'evt_poison']);
    expect(dropped).toEqual({ code: 0, out: `dropped 1 dead letter(s) from ${names.statsQueue}.dead\n` });
    await deadCountSettles(names.statsQueue, 0);
  });

  it('when a good event was parked after its retries ran out, then `dlq replay --id` hands it back and it is projected', async () => {
    const before = await getStats();
    const parked = nextVersionEvent('signal.updated', 'new');
    const other = nextVersionEvent('signal.updated', 'new');
    await publish(parked, `${names.statsQueue}.dead`, { 'x-error': 'mongo unreachable' });
    await publish(other, `${names.statsQueue}.dead`, { 'x-error': 'mongo unreachable' });

    const missing = await dlq('stats', statsQueues, ['replay', '--id', 'evt_does_not_exist']);
    expect(missing.code).toBe(1);
    await deadCountSettles(names.statsQueue, 2);

    const replayed = await dlq('stats', statsQueues, ['replay', '--id', parked.id]);
    expect(replayed).toEqual({ code: 0, out: `replayed 1 dead letter(s) to ${names.statsQueue}\n` });
    await waitFor(
      async () => (await getStats()).total_signals === before.total_signals + 1,
      10_000,
      100,
      'replayed',
    );
    // Only the chosen one moved; the other is still parked, in place.
    await deadCountSettles(names.statsQueue, 1);
    const rest = await dlq('stats', statsQueues, ['list']);
    expect(rest.out).toContain(other.id);
    expect(rest.out).not.toContain(parked.id);

    const all = await dlq('stats', statsQueues, ['replay', '--all']);
    expect(all.code).toBe(0);
    await waitFor(
      async () => (await getStats()).total_signals === before.total_signals + 2,
      10_000,
      100,
      'all',
    );
    await deadCountSettles(names.statsQueue, 0);
  });

  it('when the command is misspelt or incomplete, then it is a usage error (exit 2) and touches nothing', async () => {
    expect((await dlq('stats', statsQueues, ['list', '--limt', '5'])).code).toBe(2);
    expect((await dlq('stats', statsQueues, ['replay'])).code).toBe(2);
    expect((await dlq('stats', statsQueues, ['list', '--queue', 'nope'])).code).toBe(2);
    expect((await dlq('stats', statsQueues, ['purge'])).code).toBe(2);
    const noBroker = await runDeadLetterCli({
      service: 'stats',
      queues: statsQueues,
      argv: ['list'],
      env: {},
      out: () => undefined,
    });
    expect(noBroker).toBe(2);
  });
});
