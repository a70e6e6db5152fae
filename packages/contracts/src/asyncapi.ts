import { z } from 'zod';
import {
  BUS_DELAY_CASCADE,
  BUS_DELIVERY_LANES,
  BUS_EXCHANGE,
  BUS_HEADERS,
  BUS_QUEUES,
  type BusQueue,
  type Deployable,
} from './bus';
import {
  MESSAGE_POLICIES,
  SIGNAL_EVENT_VERSION,
  signalEventSchema,
  webhookDeliveryJobSchema,
} from './events';

/**
 * The AsyncAPI 3.0 document of the broker: the `signal.events` exchange, every queue, each
 * message's headers and payload schema, and which deployable sends and receives what. Built from
 * the bus table (bus.ts) and the zod schemas the producers write with, like the OpenAPI document
 * from the route table; docs/asyncapi.yaml and docs/bus.md are its committed renderings.
 */

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Removes `additionalProperties: false` below `node`: consumers read tolerantly (events.ts). */
function openUp(node: unknown): void {
  if (Array.isArray(node)) return node.forEach(openUp);
  if (!isObject(node)) return;
  if (node.additionalProperties === false) delete node.additionalProperties;
  for (const v of Object.values(node)) openUp(v);
}

/**
 * A schema as JSON Schema, every object inline (no registry ids). What is written (`output`) is
 * read tolerantly, so its objects are open; what is read (`input`) keeps `additionalProperties:
 * false` where the reader refuses unknown fields.
 */
export function payloadSchema(schema: z.ZodType, io: 'input' | 'output' = 'output'): Json {
  const { $schema: _schema, ...json } = z.toJSONSchema(schema, {
    target: 'draft-7',
    io,
    unrepresentable: 'any',
    metadata: z.registry<{ id?: string }>(),
  });
  if (io === 'output') openUp(json);
  return json;
}

/** Operation and channel ids: `stats.signal-events` → `statsSignalEvents`. */
export const idOf = (address: string) =>
  address.replace(/[^A-Za-z0-9]+([A-Za-z0-9])/g, (_m, c: string) => c.toUpperCase());

const messageIdOf = (eventName: string) => idOf(eventName);

const SIGNAL_EVENT_HEADERS = {
  type: 'object',
  properties: Object.fromEntries(
    Object.entries(BUS_HEADERS).map(([name, description]) => [name, { type: 'string', description }]),
  ),
};
// `x-attempt` is a number on the wire; the others are strings.
(SIGNAL_EVENT_HEADERS.properties['x-attempt'] as Json).type = 'integer';

function eventMessage(eventName: string): Json {
  const payload = payloadSchema(signalEventSchema);
  const properties = payload.properties;
  if (isObject(properties)) properties.name = { type: 'string', const: eventName };
  return {
    name: eventName,
    title: eventName,
    summary:
      eventName === 'signal.updated'
        ? 'Metrics or performance of a signal moved (internal: never sent to subscribers).'
        : `A signal event subscribers can receive (webhooks, the live stream) as \`${eventName}\`.`,
    contentType: 'application/json',
    headers: SIGNAL_EVENT_HEADERS,
    payload,
    correlationId: {
      description: 'The event id, also the AMQP message id',
      location: '$message.payload#/id',
    },
    bindings: {
      amqp: { contentEncoding: 'utf-8', messageType: eventName, bindingVersion: '0.3.0' },
    },
    'x-schema-version': SIGNAL_EVENT_VERSION,
  };
}

const DELIVERY_JOB: Json = {
  name: 'webhook.delivery-job',
  title: 'Webhook delivery job',
  summary:
    'One attempt of one delivery: the subscription, event and body it needs (all optional: an older producer sends ids only).',
  contentType: 'application/json',
  headers: SIGNAL_EVENT_HEADERS,
  payload: payloadSchema(webhookDeliveryJobSchema),
  correlationId: {
    description: 'AMQP message id `<delivery_id>:<attempt>`',
    location: '$message.payload#/delivery_id',
  },
  bindings: { amqp: { contentEncoding: 'utf-8', bindingVersion: '0.3.0' } },
};

const DELIVERY_JOB_ID = 'webhookDeliveryJob';

const queueBinding = (name: string) => ({
  amqp: {
    is: 'queue',
    queue: { name, durable: true, exclusive: false, autoDelete: false, vhost: '/' },
    bindingVersion: '0.3.0',
  },
});

const ref = (pointer: string) => ({ $ref: pointer });

function queueMessages(queue: BusQueue): Record<string, Json> {
  if (MESSAGE_POLICIES[queue.policy].schema === webhookDeliveryJobSchema)
    return { [DELIVERY_JOB_ID]: ref(`#/components/messages/${DELIVERY_JOB_ID}`) };
  const bound = BUS_EXCHANGE.events.filter((e) =>
    (queue.bindings ?? []).some((key) =>
      new RegExp(`^${key.replace('.', '\\.').replace('*', '[^.]+')}$`).test(e),
    ),
  );
  return Object.fromEntries(
    bound.map((e) => [messageIdOf(e), ref(`#/components/messages/${messageIdOf(e)}`)]),
  );
}

const DEPLOYABLE_TAGS: { name: Deployable; description: string }[] = [
  { name: 'gateway', description: 'services/api-gateway (uses no queue)' },
  { name: 'signals', description: 'services/signals: the outbox relay and the live stream feeder' },
  { name: 'stats', description: 'services/stats: the statistics projection' },
  { name: 'webhooks-api', description: 'services/webhooks, `node dist/main.js`' },
  { name: 'webhooks-worker', description: 'services/webhooks, `node dist/worker.js`' },
];

export function buildAsyncApiDocument(): Json {
  const channels: Record<string, Json> = {};
  const operations: Record<string, Json> = {};
  const messages: Record<string, Json> = {};
  for (const e of BUS_EXCHANGE.events) messages[messageIdOf(e)] = eventMessage(e);
  messages[DELIVERY_JOB_ID] = DELIVERY_JOB;

  const exchangeId = idOf(BUS_EXCHANGE.address);
  channels[exchangeId] = {
    address: BUS_EXCHANGE.address,
    title: `Exchange ${BUS_EXCHANGE.address}`,
    description: BUS_EXCHANGE.description,
    messages: Object.fromEntries(
      BUS_EXCHANGE.events.map((e) => [messageIdOf(e), ref(`#/components/messages/${messageIdOf(e)}`)]),
    ),
    bindings: {
      amqp: {
        is: 'routingKey',
        exchange: { name: BUS_EXCHANGE.address, type: 'topic', durable: true, autoDelete: false, vhost: '/' },
        bindingVersion: '0.3.0',
      },
    },
  };
  operations[`${BUS_EXCHANGE.producer}Publishes${exchangeId.replace(/^./, (c) => c.toUpperCase())}`] = {
    action: 'send',
    channel: ref(`#/channels/${exchangeId}`),
    summary:
      'The outbox relay publishes each stored change, routing key = event name, persistent, publisher-confirmed.',
    tags: [{ name: BUS_EXCHANGE.producer }],
    messages: BUS_EXCHANGE.events.map((e) => ref(`#/channels/${exchangeId}/messages/${messageIdOf(e)}`)),
  };

  for (const queue of BUS_QUEUES) {
    const id = idOf(queue.address);
    const policy = MESSAGE_POLICIES[queue.policy];
    const queueMessageRefs = queueMessages(queue);
    channels[id] = {
      address: queue.address,
      title: `Queue ${queue.address}`,
      description:
        `${queue.description} ` +
        (queue.bindings
          ? `Bound to \`${BUS_EXCHANGE.address}\` by ${queue.bindings.map((k) => `\`${k}\``).join(', ')}. `
          : '') +
        `A failed handling goes to \`${queue.address}.retry.quorum\` (\`.retry\` with classic queues; back after ${policy.retryDelayMs} ms) up to ` +
        `${policy.maxAttempts} attempts, then to \`${queue.address}.dead\`; a message its schema refuses goes there at once.`,
      messages: queueMessageRefs,
      bindings: queueBinding(queue.address),
      'x-bindings': queue.bindings ?? [],
    };
    const messageRefs = Object.keys(queueMessageRefs).map((m) => ref(`#/channels/${id}/messages/${m}`));
    operations[`${idOf(queue.consumer)}Receives${id.replace(/^./, (c) => c.toUpperCase())}`] = {
      action: 'receive',
      channel: ref(`#/channels/${id}`),
      summary: `Manual acknowledgement after the work is stored; a handling may take ${policy.handlerTimeoutMs} ms.`,
      tags: [{ name: queue.consumer }],
      messages: messageRefs,
    };
    for (const producer of queue.directProducers ?? [])
      operations[`${idOf(producer)}Sends${id.replace(/^./, (c) => c.toUpperCase())}`] = {
        action: 'send',
        channel: ref(`#/channels/${id}`),
        summary:
          'Sent through the default exchange (routing key = queue name), persistent, publisher-confirmed.',
        tags: [{ name: producer }],
        messages: messageRefs,
      };
  }

  const lanesId = 'webhooksDeliveryLanes';
  const lanes = BUS_DELIVERY_LANES;
  channels[lanesId] = {
    address: lanes.address,
    title: 'Lanes of first attempts',
    description:
      `First attempts from fan-out, each account's in its own lane, FNV-1a (32 bits) of the account id modulo ` +
      `the lanes the worker is configured with (\`WEBHOOK_LANES\`, at most ${lanes.max}), or in its second lane, ` +
      'FNV-1a of the id again from the first hash, modulo the other lanes, added to its own (while the worker ' +
      "holds a backlog from its own), so one account's backlog waits in its own lanes; test events from the " +
      "API in their account's own lane. " +
      `A job not taken within ${lanes.spillMs} ms dead-letters into \`${lanes.into}\` ` +
      `(a lane no worker reads any more hands its jobs on); a failed handling goes to \`${lanes.into}\`'s ` +
      'retry and dead-letter queues.',
    parameters: {
      lane: {
        description: `0–${lanes.max - 1}`,
        enum: Array.from({ length: lanes.max }, (_, i) => String(i)),
      },
    },
    messages: { [DELIVERY_JOB_ID]: ref(`#/components/messages/${DELIVERY_JOB_ID}`) },
    bindings: queueBinding(lanes.address),
  };
  for (const producer of lanes.producers)
    operations[`${idOf(producer)}SendsWebhooksDeliveryLanes`] = {
      action: 'send',
      channel: ref(`#/channels/${lanesId}`),
      summary:
        'Sent through the default exchange (routing key = queue name), persistent, publisher-confirmed.',
      tags: [{ name: producer }],
      messages: [ref(`#/channels/${lanesId}/messages/${DELIVERY_JOB_ID}`)],
    };
  operations[`${idOf(lanes.consumer)}ReceivesWebhooksDeliveryLanes`] = {
    action: 'receive',
    channel: ref(`#/channels/${lanesId}`),
    summary: `Manual acknowledgement after the work is stored; a handling may take ${MESSAGE_POLICIES['webhooks.deliveries'].handlerTimeoutMs} ms.`,
    tags: [{ name: lanes.consumer }],
    messages: [ref(`#/channels/${lanesId}/messages/${DELIVERY_JOB_ID}`)],
  };

  const cascadeId = 'webhooksDelayCascade';
  channels[cascadeId] = {
    address: BUS_DELAY_CASCADE.address,
    title: 'Delay cascade of webhook retries',
    description:
      `${BUS_DELAY_CASCADE.levels} levels, an exchange and a queue each; level i holds a job 2^i × ${BUS_DELAY_CASCADE.unitMs} ms. ` +
      'A job enters at the level of its wait’s highest bit; its routing key is the wait in binary, one word per level, ' +
      `highest first (\`0.0.0.0.0.0.0.0.0.0.0.1.0.1\`). Level 0 dead-letters into \`${BUS_DELAY_CASCADE.target}\`.`,
    parameters: {
      level: {
        description: `0–${BUS_DELAY_CASCADE.levels - 1}`,
        enum: Array.from({ length: BUS_DELAY_CASCADE.levels }, (_, i) => String(i)),
      },
    },
    messages: { [DELIVERY_JOB_ID]: ref(`#/components/messages/${DELIVERY_JOB_ID}`) },
    bindings: {
      amqp: {
        is: 'routingKey',
        exchange: {
          name: BUS_DELAY_CASCADE.address,
          type: 'topic',
          durable: true,
          autoDelete: false,
          vhost: '/',
        },
        bindingVersion: '0.3.0',
      },
    },
  };
  for (const producer of BUS_DELAY_CASCADE.producers)
    operations[`${idOf(producer)}SchedulesWebhooksRetry`] = {
      action: 'send',
      channel: ref(`#/channels/${cascadeId}`),
      summary: 'An attempt that is not due yet waits in the cascade (no process holds it meanwhile).',
      tags: [{ name: producer }],
      messages: [ref(`#/channels/${cascadeId}/messages/${DELIVERY_JOB_ID}`)],
    };

  return {
    asyncapi: '3.0.0',
    info: {
      title: 'Signal Service bus',
      version: '1.0.0',
      description:
        'The messages the deployables exchange through RabbitMQ. Every name carries the deployment’s ' +
        '`AMQP_PREFIX`. Producers write the payloads below; consumers read them tolerantly (unknown ' +
        'fields ignored at every level, any `schema_version` from 1 on, unknown event names skipped), so ' +
        'a version only ever adds fields (docs/versioning.md).',
      tags: DEPLOYABLE_TAGS,
    },
    defaultContentType: 'application/json',
    servers: {
      rabbitmq: { host: 'rabbitmq:5672', protocol: 'amqp', description: '`AMQP_URL` of each service' },
    },
    channels,
    operations,
    components: { messages },
  };
}

/**
 * The bus as an OpenAPI-shaped document, so one diff tool (oasdiff) judges both documents: each
 * message is a response (what producers write and consumers read) of a path named after the
 * channel and message, with its headers as response headers.
 */
export function asyncApiAsOpenApi(asyncapi: Json): Json {
  const messages =
    isObject(asyncapi.components) && isObject(asyncapi.components.messages)
      ? asyncapi.components.messages
      : {};
  const channels = isObject(asyncapi.channels) ? asyncapi.channels : {};
  const paths: Record<string, Json> = {};
  for (const channel of Object.values(channels)) {
    if (!isObject(channel) || !isObject(channel.messages)) continue;
    for (const [messageId, r] of Object.entries(channel.messages)) {
      const target = isObject(r) && typeof r.$ref === 'string' ? r.$ref.split('/').pop() : undefined;
      const message = target ? messages[target] : undefined;
      if (!isObject(message)) continue;
      const headers =
        isObject(message.headers) && isObject(message.headers.properties) ? message.headers.properties : {};
      paths[`/${String(channel.address)}/${messageId}`] = {
        post: {
          operationId: `${idOf(String(channel.address))}.${messageId}`,
          summary: String(message.summary ?? ''),
          responses: {
            '200': {
              description: String(message.title ?? messageId),
              headers: Object.fromEntries(
                Object.entries(headers).map(([name, schema]) => [name, { required: false, schema }]),
              ),
              content: { 'application/json': { schema: message.payload } },
            },
          },
        },
      };
    }
  }
  return {
    openapi: '3.1.0',
    info: { title: 'Signal Service bus (as OpenAPI, for the breaking-change check)', version: '1.0.0' },
    paths,
  };
}
