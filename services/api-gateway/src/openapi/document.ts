import {
  ERROR_STATUS,
  deliveryListQuerySchema,
  signalListQuerySchema,
  statsQuerySchema,
  webhookListQuerySchema,
  keyListQuerySchema,
  type ErrorCode,
} from '@signal/contracts';
import { z } from 'zod';

type JsonObject = Record<string, unknown>;

/**
 * Components come from the zod contracts themselves (each carries `.meta({ id })`), so the
 * document cannot drift from the code; these are the ids the paths refer to.
 */
type ComponentName =
  | 'ErrorEnvelope'
  | 'SignalListResponse'
  | 'SignalDetailResponse'
  | 'StatisticsResponse'
  | 'CreateWebhookRequest'
  | 'UpdateWebhookRequest'
  | 'WebhookSubscription'
  | 'WebhookSubscriptionWithSecret'
  | 'WebhookDelivery'
  | 'WebhookTestRequest'
  | 'RecoverWebhookRequest'
  | 'RecoverWebhookResult'
  | 'WebhookPayload'
  | 'PageMeta'
  | 'ApiKey'
  | 'ApiKeyWithSecret'
  | 'CreateApiKeyRequest'
  | 'LoginRequest'
  | 'ChangePasswordRequest';

const ref = (name: ComponentName) => ({ $ref: `#/components/schemas/${name}` });
const envelope = (data: JsonObject, meta?: JsonObject) => ({
  type: 'object',
  required: ['success', 'data', ...(meta ? ['meta'] : [])],
  properties: { success: { const: true }, data, ...(meta ? { meta } : {}) },
});

function componentSchemas(): Record<string, JsonObject> {
  // Every contract schema carries `.meta({ id })`, so the global registry holds them all,
  // nested ones (SignalListItem, Statistics, …) included, and refs stay inside components.
  const out = z.toJSONSchema(z.globalRegistry, {
    target: 'draft-2020-12',
    io: 'output',
    unrepresentable: 'any',
    uri: (id) => `#/components/schemas/${id}`,
  }) as { schemas: Record<string, JsonObject> };
  for (const s of Object.values(out.schemas)) {
    delete s.$schema;
    // zod marks each with `$id: '#/components/schemas/X'`; a 2020-12 `$id` may not carry a
    // fragment (Ajv 2020 refuses the document), and `$ref`s reach components by pointer anyway.
    delete s.$id;
  }
  return out.schemas;
}

function queryParameters(schema: z.ZodType): JsonObject[] {
  const json = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as {
    properties?: Record<string, JsonObject>;
    required?: string[];
  };
  return Object.entries(json.properties ?? {}).map(([name, s]) => {
    const { description, ...rest } = s;
    return { name, in: 'query', required: (json.required ?? []).includes(name), description, schema: rest };
  });
}

const pathParam = (name: string, description: string) => ({
  name,
  in: 'path',
  required: true,
  description,
  schema: { type: 'string' },
});

/** Who may call an operation: decides its security and the refusals every call of it can get. */
type Caller = 'apiKey' | 'session' | 'anyone';
type Method = 'get' | 'post' | 'patch' | 'delete';
const METHODS: readonly Method[] = ['get', 'post', 'patch', 'delete'];

interface OperationSpec {
  summary: string;
  caller: Caller;
  parameters?: JsonObject[];
  requestBody?: JsonObject;
  /** Success answers by status (`ok(…)`). */
  answers: Record<string, JsonObject>;
  /** Errors of this operation's own logic; the ones every call of its kind can get are added. */
  errors?: ErrorCode[];
}

/**
 * The error codes an operation can answer. Besides its own: any request can be refused (401,
 * 429), fail (500, 503) or carry headers too large (413, from Node or, on the API-key path, the
 * gateway's forward limit); the API-key path also answers KEY_EXPIRED and a service's 504, the
 * session routes 403 to an API key; a path parameter with a malformed percent-escape is a 400;
 * every POST/PATCH body is read as JSON whether the operation needs one or not (broken JSON 400,
 * another media type 415, over the size limit 413), and the API-key path refuses a body that is
 * not JSON on any method but GET before a service sees it (so a DELETE with one is a 415 too).
 */
function errorCodes(method: Method, spec: OperationSpec): ErrorCode[] {
  const codes: ErrorCode[] = [
    'UNAUTHORIZED',
    'RATE_LIMIT_EXCEEDED',
    'PAYLOAD_TOO_LARGE',
    'INTERNAL_ERROR',
    'SERVICE_UNAVAILABLE',
  ];
  if (spec.caller === 'apiKey') codes.push('KEY_EXPIRED', 'GATEWAY_TIMEOUT');
  if (spec.caller === 'session') codes.push('FORBIDDEN');
  if ((spec.parameters ?? []).some((p) => p.in === 'path')) codes.push('VALIDATION_ERROR');
  if (method === 'post' || method === 'patch') codes.push('VALIDATION_ERROR', 'UNSUPPORTED_MEDIA_TYPE');
  if (spec.caller === 'apiKey' && method !== 'get') codes.push('UNSUPPORTED_MEDIA_TYPE');
  return [...new Set([...codes, ...(spec.errors ?? [])])];
}

/**
 * One response per status; its schema narrows `error.code` to the codes that status carries
 * here, so a client (and the tests) can tell which refusals an operation really gives.
 */
function errors(codes: ErrorCode[]): Record<string, JsonObject> {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of codes) {
    const status = ERROR_STATUS[code];
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  return Object.fromEntries(
    [...byStatus]
      .sort(([a], [b]) => a - b)
      .map(([status, list]) => [
        String(status),
        {
          description: `Error: ${list.join(', ')}`,
          headers: rateHeaders,
          content: {
            'application/json': {
              schema: {
                allOf: [
                  ref('ErrorEnvelope'),
                  { properties: { error: { properties: { code: { enum: list } } } } },
                ],
              },
            },
          },
        },
      ]),
  );
}

const SECURITY: Record<Caller, JsonObject[] | undefined> = {
  apiKey: [{ apiKey: [] }],
  session: [{ dashboardSession: [] }],
  anyone: undefined,
};

function operation(method: Method, spec: OperationSpec): JsonObject {
  const security = SECURITY[spec.caller];
  return {
    summary: spec.summary,
    ...(security ? { security } : {}),
    ...(spec.parameters ? { parameters: spec.parameters } : {}),
    ...(spec.requestBody ? { requestBody: spec.requestBody } : {}),
    responses: { ...spec.answers, ...errors(errorCodes(method, spec)) },
  };
}

function pathItem(operations: Partial<Record<Method, OperationSpec>>): JsonObject {
  const item: JsonObject = {};
  for (const method of METHODS) {
    const spec = operations[method];
    if (spec) item[method] = operation(method, spec);
  }
  return item;
}

const rateHeaders = {
  'X-RateLimit-Limit': {
    description: 'Requests allowed in the window closest to exhaustion',
    schema: { type: 'integer' },
  },
  'X-RateLimit-Remaining': { description: 'Requests left in that window', schema: { type: 'integer' } },
  'X-RateLimit-Reset': {
    description: 'Unix time (seconds) when that window resets',
    schema: { type: 'integer' },
  },
  'X-Request-Id': { description: 'Request id, also in error.request_id', schema: { type: 'string' } },
};

const ok = (description: string, schema: JsonObject, status = '200') => ({
  [status]: { description, headers: rateHeaders, content: { 'application/json': { schema } } },
});
const body = (name: ComponentName) => ({
  required: true,
  content: { 'application/json': { schema: ref(name) } },
});

/**
 * Both create operations take one: the same key and body again within 24 h answer what the first
 * request made (200), another body is 409 IDEMPOTENCY_CONFLICT, and a retry while the first is
 * still running is 409 CONFLICT.
 */
const idempotencyKey = {
  name: 'Idempotency-Key',
  in: 'header',
  required: false,
  description: '1–255 visible ASCII characters, unique per intended creation',
  schema: { type: 'string', minLength: 1, maxLength: 255 },
};

/** The 200 a create operation answers when its Idempotency-Key comes again with the same body. */
const replayed = (description: string, schema: JsonObject) => ({
  '200': {
    description,
    headers: {
      ...rateHeaders,
      'Idempotent-Replayed': {
        description: "`true`: this answer repeats the first request's",
        schema: { type: 'string', const: 'true' },
      },
    },
    content: { 'application/json': { schema } },
  },
});

const sessionEnvelope = envelope({
  type: 'object',
  properties: { token: { type: 'string' }, expires_at: { type: 'string' } },
});

/** `plan`: the plan new accounts get, as configured (DEFAULT_PLAN_PER_*). */
export function buildOpenApiDocument(
  serverUrl: string,
  plan: { per_minute: number; per_day: number },
): JsonObject {
  const webhookId = pathParam('webhook_id', 'Subscription id `wh_…`');
  const deliveryId = pathParam('delivery_id', 'Delivery id `dlv_…`');
  return {
    openapi: '3.1.0',
    info: {
      title: 'Signal Service API',
      version: '1.0.0',
      description:
        'Token signals, aggregated statistics and webhooks. Every request needs `Authorization: Bearer <API_KEY>`. ' +
        `Limits: ${plan.per_minute.toLocaleString('en-US')} requests/minute and ${plan.per_day.toLocaleString('en-US')}/day on the listed plan, per account; headers describe the window closest to exhaustion.`,
    },
    servers: [{ url: serverUrl }],
    components: {
      schemas: componentSchemas(),
      securitySchemes: {
        apiKey: { type: 'http', scheme: 'bearer', description: 'API key `sk_live_…`' },
        dashboardSession: {
          type: 'http',
          scheme: 'bearer',
          bearerFormat: 'JWT',
          description: 'From POST /v1/auth/login',
        },
      },
    },
    paths: {
      '/v1/signals': pathItem({
        get: {
          summary: 'List signals, newest first',
          caller: 'apiKey',
          parameters: queryParameters(signalListQuerySchema),
          answers: ok('A page of signals', ref('SignalListResponse')),
          errors: ['VALIDATION_ERROR'],
        },
      }),
      '/v1/signals/{signal_id}': pathItem({
        get: {
          summary: 'One signal in detail',
          caller: 'apiKey',
          parameters: [pathParam('signal_id', 'Signal id `sig_…`')],
          answers: ok('The signal', ref('SignalDetailResponse')),
          errors: ['NOT_FOUND'],
        },
      }),
      '/v1/stats': pathItem({
        get: {
          summary: 'Aggregated performance statistics',
          caller: 'apiKey',
          parameters: queryParameters(statsQuerySchema),
          answers: ok('Statistics', ref('StatisticsResponse')),
          errors: ['VALIDATION_ERROR'],
        },
      }),
      '/v1/webhooks': pathItem({
        post: {
          summary:
            'Subscribe a URL to events. With an Idempotency-Key, a retry with the same body within 24 h answers the same subscription (200, Idempotent-Replayed: true); another body is 409. An account holds at most its plan’s number of subscriptions (25 by default): one more is 409 CONFLICT naming the limit.',
          caller: 'apiKey',
          parameters: [idempotencyKey],
          requestBody: body('CreateWebhookRequest'),
          answers: {
            ...ok(
              'Created; the signing secret is shown only here',
              envelope(ref('WebhookSubscriptionWithSecret')),
              '201',
            ),
            ...replayed(
              'The subscription a first request with this Idempotency-Key made, with its current secret',
              envelope(ref('WebhookSubscriptionWithSecret')),
            ),
          },
          errors: ['VALIDATION_ERROR', 'IDEMPOTENCY_CONFLICT', 'CONFLICT'],
        },
        get: {
          summary: 'List subscriptions, newest first',
          caller: 'apiKey',
          parameters: queryParameters(webhookListQuerySchema),
          answers: ok(
            'A page of subscriptions',
            envelope({ type: 'array', items: ref('WebhookSubscription') }, ref('PageMeta')),
          ),
          errors: ['VALIDATION_ERROR'],
        },
      }),
      '/v1/webhooks/{webhook_id}': pathItem({
        get: {
          summary: 'One subscription',
          caller: 'apiKey',
          parameters: [webhookId],
          answers: ok('Subscription', envelope(ref('WebhookSubscription'))),
          errors: ['NOT_FOUND'],
        },
        patch: {
          summary: 'Change url, events, types or enabled',
          caller: 'apiKey',
          parameters: [webhookId],
          requestBody: body('UpdateWebhookRequest'),
          answers: ok('Updated', envelope(ref('WebhookSubscription'))),
          errors: ['NOT_FOUND', 'VALIDATION_ERROR'],
        },
        delete: {
          summary: 'Delete a subscription',
          caller: 'apiKey',
          parameters: [webhookId],
          answers: ok('Deleted', envelope(ref('WebhookSubscription'))),
          errors: ['NOT_FOUND'],
        },
      }),
      '/v1/webhooks/{webhook_id}/rotate-secret': pathItem({
        post: {
          summary: 'New signing secret; the old one stays valid for the overlap period',
          caller: 'apiKey',
          parameters: [webhookId],
          answers: ok('New secret', envelope(ref('WebhookSubscriptionWithSecret'))),
          errors: ['NOT_FOUND'],
        },
      }),
      '/v1/webhooks/{webhook_id}/test': pathItem({
        post: {
          summary:
            'Send a signed test event: webhook.test, or a sample of any event (`event`) in that event’s payload shape, marked `test: true`; 409 CONFLICT while the subscription is disabled',
          caller: 'apiKey',
          parameters: [webhookId],
          requestBody: { ...body('WebhookTestRequest'), required: false },
          answers: ok('Queued', envelope(ref('WebhookDelivery')), '202'),
          errors: ['NOT_FOUND', 'CONFLICT', 'VALIDATION_ERROR'],
        },
      }),
      '/v1/webhooks/{webhook_id}/recover': pathItem({
        post: {
          summary:
            'Re-send every delivery created since `since` that is failed now (one more attempt each); answers how many were queued. Idempotent: a repeat finds them pending or succeeded and queues none again. 409 CONFLICT while the subscription is disabled',
          caller: 'apiKey',
          parameters: [webhookId],
          requestBody: body('RecoverWebhookRequest'),
          answers: ok('Queued', envelope(ref('RecoverWebhookResult')), '202'),
          errors: ['NOT_FOUND', 'CONFLICT', 'VALIDATION_ERROR'],
        },
      }),
      '/v1/webhooks/{webhook_id}/deliveries': pathItem({
        get: {
          summary: 'Delivery log, newest first',
          caller: 'apiKey',
          parameters: [webhookId, ...queryParameters(deliveryListQuerySchema)],
          answers: ok(
            'Deliveries',
            envelope({ type: 'array', items: ref('WebhookDelivery') }, ref('PageMeta')),
          ),
          errors: ['NOT_FOUND', 'VALIDATION_ERROR'],
        },
      }),
      '/v1/webhooks/{webhook_id}/deliveries/{delivery_id}': pathItem({
        get: {
          summary: 'One delivery with its attempts',
          caller: 'apiKey',
          parameters: [webhookId, deliveryId],
          answers: ok('Delivery', envelope(ref('WebhookDelivery'))),
          errors: ['NOT_FOUND'],
        },
      }),
      '/v1/webhooks/{webhook_id}/deliveries/{delivery_id}/retry': pathItem({
        post: {
          summary: 'Send a delivery again',
          caller: 'apiKey',
          parameters: [webhookId, deliveryId],
          answers: ok('Queued', envelope(ref('WebhookDelivery')), '202'),
          errors: ['NOT_FOUND', 'CONFLICT'],
        },
      }),
      '/v1/auth/login': pathItem({
        post: {
          summary:
            'Dashboard login (email + password) → short-lived session token. After 5 failures for an email (20 for a network) each attempt waits twice as long: 429 with retry_after.',
          caller: 'anyone',
          requestBody: body('LoginRequest'),
          answers: ok('Session', sessionEnvelope),
          errors: ['VALIDATION_ERROR'],
        },
      }),
      '/v1/auth/logout': pathItem({
        post: {
          summary: 'End this session token',
          caller: 'session',
          answers: ok(
            'Logged out',
            envelope({ type: 'object', properties: { logged_out: { const: true } } }),
          ),
        },
      }),
      '/v1/account/password': pathItem({
        post: {
          summary: 'Change the password: every session so far ends; the answer is a new session',
          caller: 'session',
          requestBody: body('ChangePasswordRequest'),
          answers: ok('A new session', sessionEnvelope),
          errors: ['VALIDATION_ERROR'],
        },
      }),
      '/v1/account/keys': pathItem({
        get: {
          summary: "This account's API keys, newest first",
          caller: 'session',
          parameters: queryParameters(keyListQuerySchema),
          answers: ok('Keys', envelope({ type: 'array', items: ref('ApiKey') }, ref('PageMeta'))),
          errors: ['VALIDATION_ERROR'],
        },
        post: {
          summary:
            'Create an API key (shown once). With an Idempotency-Key, a retry with the same body within 24 h answers the same key (200, Idempotent-Replayed: true); another body is 409.',
          caller: 'session',
          parameters: [idempotencyKey],
          requestBody: body('CreateApiKeyRequest'),
          answers: {
            ...ok('The new key', envelope(ref('ApiKeyWithSecret')), '201'),
            ...replayed(
              'The key a first request with this Idempotency-Key made',
              envelope(ref('ApiKeyWithSecret')),
            ),
          },
          errors: ['VALIDATION_ERROR', 'IDEMPOTENCY_CONFLICT', 'CONFLICT'],
        },
      }),
      '/v1/account/keys/{key_id}': pathItem({
        delete: {
          summary: 'Revoke a key, immediately and everywhere',
          caller: 'session',
          parameters: [pathParam('key_id', 'Key id `key_…`')],
          answers: ok('Revoked', envelope(ref('ApiKey'))),
          errors: ['NOT_FOUND'],
        },
      }),
    },
    webhooks: {
      signalEvent: {
        post: {
          summary:
            'signal.new, signal.winner, signal.dead, signal.rugged, webhook.test — signed per Standard Webhooks',
          parameters: [
            { name: 'webhook-id', in: 'header', required: true, schema: { type: 'string' } },
            { name: 'webhook-timestamp', in: 'header', required: true, schema: { type: 'string' } },
            { name: 'webhook-signature', in: 'header', required: true, schema: { type: 'string' } },
          ],
          requestBody: body('WebhookPayload'),
          responses: { '200': { description: 'Any 2xx within 5 seconds acknowledges the delivery' } },
        },
      },
    },
  };
}
