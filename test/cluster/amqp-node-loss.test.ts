import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { z } from 'zod';
import {
  AmqpClient,
  brokerNames,
  Consumer,
  declareDelayCascade,
  declareEventExchange,
  delayLevelNames,
  removeBrokerPrefix,
} from '@signal/messaging';
import { silentLogger, testBrokerPrefix, waitFor } from '@signal/test-kit';

/**
 * The AMQP client on the three-node RabbitMQ of infra/local/cluster.sh: the node the client is
 * connected to is killed (SIGKILL of that node's own process, never the shared broker), and the
 * client has to carry on through the two others — publishes confirmed again, its consumer fed
 * again — with the topology the services declare (quorum queues, the webhooks' delay cascade).
 */
const ROOT = path.join(__dirname, '..', '..');
const CLUSTER_SH = path.join(ROOT, 'infra', 'local', 'cluster.sh');
const AMQP_BASE = Number(process.env.CLUSTER_AMQP_BASE ?? 5780);

const broker = testBrokerPrefix('amqp-node-loss', removeBrokerPrefix);
const names = brokerNames(broker.prefix);
const EventSchema = z.object({ n: z.number() });
/** The node this file killed, started again at the end whatever happened. */
let killed: number | undefined;

function cluster(...args: string[]): string {
  return execFileSync('bash', [CLUSTER_SH, ...args], {
    cwd: ROOT,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'ignore'],
  });
}

/** The types of this file's queues, as the cluster reports them. */
function queueTypes(): Map<string, string> {
  const types = new Map<string, string>();
  for (const line of cluster('queues').split('\n')) {
    const [name, type] = line.split('\t');
    if (name?.startsWith(broker.prefix) && type) types.set(name, type);
  }
  return types;
}

/** The cluster node (1-3) behind a broker URL of `.run/cluster.env`. */
function nodeOf(url: string): number {
  const n = Number(new URL(url).port) - AMQP_BASE;
  if (!(n >= 1 && n <= 3)) throw new Error(`${url} is not a node of infra/local/cluster.sh`);
  return n;
}

/**
 * Publishes until the broker confirms. A publish may fail while the client is between nodes;
 * one that neither confirms nor fails is the fault under test, so each try has a deadline.
 */
async function publishConfirmed(client: AmqpClient, n: number): Promise<void> {
  await waitFor(
    async () => {
      await client.waitUntilConnected(60_000);
      let timer: NodeJS.Timeout | undefined;
      try {
        await Promise.race([
          client.publish(names.signalEvents, 'signal.new', Buffer.from(JSON.stringify({ n })), {
            messageId: `m${n}`,
          }),
          new Promise<never>((_, reject) => {
            timer = setTimeout(() => reject(new Error('publish neither confirmed nor failed')), 30_000);
          }),
        ]);
      } finally {
        clearTimeout(timer);
      }
      return true;
    },
    120_000,
    200,
    `publish ${n} to be confirmed`,
  );
}

afterAll(async () => {
  if (killed !== undefined) cluster('start-rabbit', String(killed));
  await broker.cleanup();
});

describe('AmqpClient on a three-node RabbitMQ cluster', () => {
  it('when the node the client is connected to is killed, then it reconnects through another node and its publishes are confirmed and consumed again', async () => {
    const url = process.env.AMQP_URL ?? '';
    if (url.split(',').length !== 3) throw new Error('AMQP_URL must list the three nodes (cluster.sh up)');
    const client = new AmqpClient({
      url,
      logger: silentLogger,
      name: 'test-amqp-node-loss',
      minBackoffMs: 100,
      maxBackoffMs: 1000,
    });
    const received = new Set<number>();
    const consumer = new Consumer({
      client,
      logger: silentLogger,
      queue: names.statsQueue,
      schema: EventSchema,
      policy: { maxAttempts: 3, retryDelayMs: 100, handlerTimeoutMs: 5000 },
      prefetch: 10,
      bindings: { exchange: names.signalEvents, routingKeys: ['signal.*'] },
      handler: async ({ n }) => {
        received.add(n);
      },
    });
    try {
      // What the services declare on connect: the consumer's queues, the event exchange, and the
      // webhooks' delay cascade in front of a queue.
      await consumer.start();
      await client.addSetup(async (ch) => {
        await declareEventExchange(ch, names.signalEvents);
        await declareDelayCascade(ch, delayLevelNames(names, 'quorum'), names.statsQueue, 'quorum');
      });
      client.start();
      await client.waitUntilConnected(60_000);
      await publishConfirmed(client, 1);
      await waitFor(() => received.has(1), 30_000, 50, 'the first event to be consumed');
      // Replicated, every one: a queue of another type lives on one node and is gone with it.
      const types = queueTypes();
      expect(types.size).toBe(3 + 14);
      expect([...types].filter(([, type]) => type !== 'quorum')).toEqual([]);

      const before = client.connectedUrl ?? '';
      killed = nodeOf(before);
      cluster('kill-rabbit', String(killed));
      await waitFor(() => client.connectedUrl !== before, 60_000, 50, 'the loss to be seen');

      await publishConfirmed(client, 2);
      expect(nodeOf(client.connectedUrl ?? '')).not.toBe(killed);
      await waitFor(() => received.has(2), 60_000, 50, 'the event published after the loss to be consumed');
    } finally {
      await consumer.stop();
      await client.close();
    }
  });
});
