import { createHmac, createSecretKey, randomBytes } from 'node:crypto';
import { Agent, createServer, request } from 'node:http';
import { payloadFor, type WebhookEvent } from '@signal/contracts';
import { connect, type ConsumeMessage } from 'amqplib';
import mongoose from 'mongoose';
import { requiredEnv } from './proxy-env';

/**
 * The webhooks bench's floor: the least a webhook service with a delivery log can do per first
 * attempt on this platform (RabbitMQ, the MongoDB-wire store, node:http), and nothing more.
 * An event from a durable queue is fanned out to every subscription: one delivery document per
 * subscription (batched inserts) and one persistent job per subscription (confirmed), then the
 * event is acknowledged. A job is a signed POST (Standard Webhooks' HMAC, the key prepared once),
 * one log entry in the store (batched), a failure's retry published to wait 10 s in a TTL queue
 * (the service's first retry delay), then the acknowledgement. No claims, fair shares, lanes,
 * health, open-delivery index, subscription cache, SSRF guard, metrics or logs: the service's
 * worker against this floor is what its own design costs, and this floor against the direct
 * baseline is what the platform allows. Environment: AMQP_URL, MONGO_URL, FLOOR_DB, FLOOR_PREFIX
 * (its exchange is `${FLOOR_PREFIX}signal.events`), FLOOR_URLS (comma-separated receivers),
 * FLOOR_CONNECTIONS (per receiver origin), PORT (readiness).
 */
const prefix = requiredEnv('FLOOR_PREFIX');
const urls = requiredEnv('FLOOR_URLS').split(',');
const connections = Number(requiredEnv('FLOOR_CONNECTIONS'));
const PREFETCH = 4000;
const EVENT_PREFETCH = 64;
const TIMEOUT_MS = 5000;
const RETRY_DELAYS_MS = [10_000, 120_000, 900_000];

const subscriptions = urls.map((url, i) => ({
  id: `wh_floor_${i}`,
  url: new URL(url),
  key: createSecretKey(randomBytes(24)),
}));
const agent = new Agent({ keepAlive: true, maxSockets: connections });

/** Inserts of one collection, one write in flight, the next carrying whatever arrived meanwhile. */
function batcher(collection: mongoose.mongo.Collection<mongoose.mongo.Document>) {
  let waiting: Array<{ doc: mongoose.mongo.Document; done: (err?: unknown) => void }> = [];
  let running = false;
  const flush = async () => {
    running = true;
    while (waiting.length > 0) {
      const batch = waiting;
      waiting = [];
      try {
        await collection.insertMany(
          batch.map((b) => b.doc),
          { ordered: false },
        );
        for (const b of batch) b.done();
      } catch (err) {
        for (const b of batch) b.done(err);
      }
    }
    running = false;
  };
  return (doc: mongoose.mongo.Document) =>
    new Promise<void>((resolve, reject) => {
      waiting.push({ doc, done: (err) => (err === undefined ? resolve() : reject(err)) });
      if (!running) void flush();
    });
}

function post(sub: (typeof subscriptions)[number], id: string, body: string): Promise<number> {
  const timestamp = Math.floor(Date.now() / 1000);
  const signature = createHmac('sha256', sub.key).update(`${id}.${timestamp}.${body}`).digest('base64');
  return new Promise((resolve) => {
    const req = request(
      sub.url,
      {
        method: 'POST',
        agent,
        timeout: TIMEOUT_MS,
        headers: {
          'content-type': 'application/json',
          'webhook-id': id,
          'webhook-timestamp': String(timestamp),
          'webhook-signature': `v1,${signature}`,
        },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
        res.on('error', () => resolve(0));
      },
    );
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(0));
    req.end(body);
  });
}

interface Job {
  delivery: string;
  sub: number;
  attempt: number;
  body: string;
}

async function main() {
  const client = await new mongoose.mongo.MongoClient(requiredEnv('MONGO_URL')).connect();
  const db = client.db(requiredEnv('FLOOR_DB'));
  const insertDelivery = batcher(db.collection('deliveries'));
  const insertEntry = batcher(db.collection('delivery_log'));
  const amqp = await connect(requiredEnv('AMQP_URL'));
  const publisher = await amqp.createConfirmChannel();
  const events = await amqp.createChannel();
  const jobs = await amqp.createChannel();
  const exchange = `${prefix}signal.events`;
  const eventQueue = `${prefix}floor.events`;
  const jobQueue = `${prefix}floor.jobs`;
  const retryQueue = `${prefix}floor.retry`;
  await publisher.assertExchange(exchange, 'topic', { durable: true });
  await publisher.assertQueue(eventQueue, { durable: true });
  await publisher.bindQueue(eventQueue, exchange, '#');
  await publisher.assertQueue(jobQueue, { durable: true });
  await publisher.assertQueue(retryQueue, {
    durable: true,
    arguments: { 'x-dead-letter-exchange': '', 'x-dead-letter-routing-key': jobQueue },
  });
  const send = (queue: string, job: Job, expiration?: number) =>
    new Promise<void>((resolve, reject) =>
      publisher.sendToQueue(
        queue,
        Buffer.from(JSON.stringify(job)),
        { persistent: true, ...(expiration === undefined ? {} : { expiration: String(expiration) }) },
        (err) => (err ? reject(err) : resolve()),
      ),
    );

  await events.prefetch(EVENT_PREFETCH);
  await events.consume(eventQueue, (msg: ConsumeMessage | null) => {
    if (msg === null) return;
    // The bench publishes only well-formed signal.new events; the floor checks nothing.
    const event = JSON.parse(msg.content.toString('utf8')) as WebhookEvent;
    const body = JSON.stringify(payloadFor(event));
    const now = new Date();
    void Promise.all(
      subscriptions.map((sub, i) => {
        const delivery = `${sub.id}:${event.id}`;
        return Promise.all([
          insertDelivery({
            _id: delivery,
            webhook_id: sub.id,
            event_id: event.id,
            payload: body,
            created_at: now,
          }),
          send(jobQueue, { delivery, sub: i, attempt: 1, body }),
        ]);
      }),
    ).then(
      () => events.ack(msg),
      () => events.nack(msg),
    );
  });

  await jobs.prefetch(PREFETCH);
  await jobs.consume(jobQueue, (msg: ConsumeMessage | null) => {
    if (msg === null) return;
    const job = JSON.parse(msg.content.toString('utf8')) as Job;
    const sub = subscriptions[job.sub]!;
    const started = Date.now();
    void post(sub, job.delivery, job.body)
      .then(async (status) => {
        const ok = status >= 200 && status < 300;
        await insertEntry({
          _id: `${job.delivery}:${job.attempt}`,
          delivery_id: job.delivery,
          attempt: job.attempt,
          status,
          ok,
          at: new Date(started),
          duration_ms: Date.now() - started,
        });
        const delay = RETRY_DELAYS_MS[job.attempt - 1];
        if (!ok && delay !== undefined) await send(retryQueue, { ...job, attempt: job.attempt + 1 }, delay);
      })
      .then(
        () => jobs.ack(msg),
        () => jobs.nack(msg),
      );
  });

  const ready = createServer((req, res) => res.writeHead(req.url === '/readyz' ? 200 : 404).end());
  ready.listen(Number(requiredEnv('PORT')), '127.0.0.1');
  process.once('SIGTERM', () => {
    ready.close();
    void amqp
      .close()
      .catch(() => undefined)
      .then(() => client.close())
      .finally(() => process.exit(0));
  });
}

main().catch((err: unknown) => {
  console.error('webhook floor:', err);
  process.exit(1);
});
