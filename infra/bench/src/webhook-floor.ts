import { createHmac, createSecretKey, randomBytes } from 'node:crypto';
import { Agent, createServer, request } from 'node:http';
import { payloadFor, type WebhookEvent } from '@signal/contracts';
import { connect, type ConsumeMessage } from 'amqplib';
import mongoose from 'mongoose';
import { storeIdCommands } from '@signal/service-kit';
import { ensureIndexes, webhookCollections } from '@signal/webhooks/dist/data/webhook.models';
import { toStoredLogEntry } from '@signal/webhooks/dist/data/stored-log-entry';
import { attemptSeq, deliveryIdFor, logEntryId } from '@signal/webhooks/dist/domain/delivery-state';
import { headerLinesOf, storedBody, storedHeaders } from '@signal/webhooks/dist/domain/receiver-bytes';
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
 *
 * FLOOR_STORE=service: the same floor writing what the service writes, where it writes it: its
 * collections and indexes (`ensureIndexes`), its delivery documents, an attempt claim before each
 * POST, its log entry (the request and response as one string), a failure's open mark. Against
 * the plain floor it is the cost of the service's data model; ours against it, the rest of our
 * worker's design (fair shares, lanes, cache, health, metrics, logs).
 *
 * FLOOR_WITHOUT (service shape only; comma-separated): `claim` writes no attempt claim, `log-index`
 * creates no `delivery_id` index on the log (as the service does anyway where the store's wrapper
 * lists ids by prefix, so then it changes nothing): what each piece of our data model costs,
 * measured by leaving it out.
 */
const serviceStore = process.env.FLOOR_STORE === 'service';
const LEFT_OUT = ['claim', 'log-index'];
const leftOut = new Set((process.env.FLOOR_WITHOUT ?? '').split(',').filter((s) => s !== ''));
for (const piece of leftOut)
  if (!LEFT_OUT.includes(piece) || !serviceStore)
    throw new Error(`FLOOR_WITHOUT: ${piece} is not one of ${LEFT_OUT.join(', ')} of FLOOR_STORE=service`);
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
function batcher<T extends mongoose.mongo.Document>(collection: mongoose.mongo.Collection<T>) {
  let waiting: Array<{ doc: mongoose.mongo.OptionalUnlessRequiredId<T>; done: (err?: unknown) => void }> = [];
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
  return (doc: mongoose.mongo.OptionalUnlessRequiredId<T>) =>
    new Promise<void>((resolve, reject) => {
      waiting.push({ doc, done: (err) => (err === undefined ? resolve() : reject(err)) });
      if (!running) void flush();
    });
}

interface Answer {
  status: number;
  rawHeaders: string[];
  body: Buffer;
  headers: Record<string, string>;
}

function post(sub: (typeof subscriptions)[number], id: string, body: string): Promise<Answer> {
  const timestamp = Math.floor(Date.now() / 1000);
  const signature = createHmac('sha256', sub.key).update(`${id}.${timestamp}.${body}`).digest('base64');
  const headers = {
    'content-type': 'application/json',
    'webhook-id': id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': `v1,${signature}`,
  };
  const failed = { status: 0, rawHeaders: [], body: Buffer.alloc(0), headers };
  return new Promise((resolve) => {
    const req = request(sub.url, { method: 'POST', agent, timeout: TIMEOUT_MS, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          rawHeaders: res.rawHeaders,
          body: Buffer.concat(chunks),
          headers,
        }),
      );
      res.on('error', () => resolve(failed));
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(failed));
    req.end(body);
  });
}

interface Job {
  delivery: string;
  sub: number;
  attempt: number;
  body: string;
  /** Its delivery's open mark is written (service shape: a failure again writes none). */
  open?: boolean;
}

type Subscription = (typeof subscriptions)[number];
const ACCOUNT = 'acc_floor';

/** What the floor writes, in one of the two shapes. */
interface FloorStore {
  deliveryId(sub: Subscription, event: WebhookEvent): string;
  delivery(id: string, sub: Subscription, event: WebhookEvent, body: string, at: Date): Promise<void>;
  /** Before the POST (service shape only). */
  claim(job: Job): Promise<void>;
  entry(job: Job, sub: Subscription, started: Date, answer: Answer, nextAt: Date | null): Promise<void>;
  /** A failure's open mark (service shape only). */
  open(job: Job, sub: Subscription, at: Date): Promise<void>;
}

/** A plain floor's document: its own id, nothing else typed. */
interface PlainDocument {
  _id: string;
  [field: string]: unknown;
}

function plainStore(connection: mongoose.Connection): FloorStore {
  const db = connection.db;
  if (!db) throw new Error('MongoDB connection is not open');
  const deliveries = batcher(db.collection<PlainDocument>('deliveries'));
  const entries = batcher(db.collection<PlainDocument>('delivery_log'));
  return {
    deliveryId: (sub, event) => `${sub.id}:${event.id}`,
    delivery: (_id, sub, event, payload, at) =>
      deliveries({ _id, webhook_id: sub.id, event_id: event.id, payload, created_at: at }),
    claim: () => Promise.resolve(),
    entry: (job, _sub, started, answer) =>
      entries({
        _id: `${job.delivery}:${job.attempt}`,
        delivery_id: job.delivery,
        attempt: job.attempt,
        status: answer.status,
        at: started,
        duration_ms: Date.now() - started.getTime(),
      }),
    open: () => Promise.resolve(),
  };
}

async function serviceShapedStore(connection: mongoose.Connection): Promise<FloorStore> {
  const c = webhookCollections(connection);
  // The indexes the service creates on this store.
  const storeIds = await storeIdCommands(connection);
  await ensureIndexes(c, {
    pagedByStore: storeIds?.pageByLatest !== undefined,
    // The log index as the service has it on this store; `log-index` leaves it out anyway.
    logByIdPrefix: storeIds?.idsByPrefix !== undefined || leftOut.has('log-index'),
  });
  const deliveries = batcher(c.deliveries);
  const claims = batcher(c.attemptClaims);
  const entries = batcher(c.deliveryLog);
  const open = batcher(c.openDeliveries);
  const attemptId = (job: Job) => logEntryId(job.delivery, attemptSeq(job.attempt));
  return {
    deliveryId: (sub, event) => deliveryIdFor(sub.id, event.id, Date.parse(event.occurred_at)),
    delivery: (_id, sub, event, payload, created_at) =>
      deliveries({
        _id,
        account_id: ACCOUNT,
        webhook_id: sub.id,
        event_id: event.id,
        event: event.name,
        payload,
        status: 'pending',
        created_at,
      }),
    claim: (job) =>
      leftOut.has('claim')
        ? Promise.resolve()
        : claims({ _id: attemptId(job), job_id: `job_${job.delivery}_${job.attempt}`, at: new Date() }),
    entry: (job, sub, started, answer, nextAt) => {
      const ok = answer.status >= 200 && answer.status < 300;
      const seq = attemptSeq(job.attempt);
      return entries(
        toStoredLogEntry({
          _id: logEntryId(job.delivery, seq),
          delivery_id: job.delivery,
          webhook_id: sub.id,
          seq,
          kind: 'attempt',
          attempt: job.attempt,
          status: ok ? 'succeeded' : nextAt ? 'pending' : 'failed',
          next_attempt_at: nextAt,
          at: new Date(),
          started_at: started,
          duration_ms: Date.now() - started.getTime(),
          status_code: answer.status === 0 ? null : answer.status,
          error: ok ? null : answer.status === 0 ? 'connection_error' : `http_${answer.status}`,
          trace_id: null,
          request: { url: sub.url.href, headers: answer.headers },
          response:
            answer.status === 0
              ? null
              : {
                  status: answer.status,
                  ...storedHeaders(headerLinesOf(answer.rawHeaders)),
                  ...storedBody(answer.body),
                  body_truncated: false,
                },
        }),
      );
    },
    open: (job, sub, at) => open({ _id: job.delivery, webhook_id: sub.id, account_id: ACCOUNT, at }),
  };
}

async function main() {
  const connection = await mongoose
    .createConnection(requiredEnv('MONGO_URL'), { dbName: requiredEnv('FLOOR_DB') })
    .asPromise();
  const store = serviceStore ? await serviceShapedStore(connection) : plainStore(connection);
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
        const delivery = store.deliveryId(sub, event);
        return Promise.all([
          store.delivery(delivery, sub, event, body, now),
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
    const started = new Date();
    void store
      .claim(job)
      .then(() => post(sub, job.delivery, job.body))
      .then(async (answer) => {
        const ok = answer.status >= 200 && answer.status < 300;
        const delay = ok ? undefined : RETRY_DELAYS_MS[job.attempt - 1];
        await store.entry(
          job,
          sub,
          started,
          answer,
          delay === undefined ? null : new Date(Date.now() + delay),
        );
        if (ok) return;
        if (!job.open) await store.open(job, sub, started);
        if (delay !== undefined)
          await send(retryQueue, { ...job, attempt: job.attempt + 1, open: true }, delay);
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
      .then(() => connection.close())
      .finally(() => process.exit(0));
  });
}

main().catch((err: unknown) => {
  console.error('webhook floor:', err);
  process.exit(1);
});
