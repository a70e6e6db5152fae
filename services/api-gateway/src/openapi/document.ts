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
  for (const s of Object.values(out.schemas)) delete s.$schema;
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

function errors(...codes: ErrorCode[]): Record<string, JsonObject> {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of [
    'UNAUTHORIZED',
    'KEY_EXPIRED',
    'RATE_LIMIT_EXCEEDED',
    'INTERNAL_ERROR',
    'SERVICE_UNAVAILABLE',
    ...codes,
  ] as ErrorCode[]) {
    const status = ERROR_STATUS[code];
    byStatus.set(status, [...new Set([...(byStatus.get(status) ?? []), code])]);
  }
  return Object.fromEntries(
    [...byStatus].map(([status, list]) => [
      String(status),
      {
        description: `Error: ${list.join(', ')}`,
        headers: rateHeaders,
        content: { 'application/json': { schema: ref('ErrorEnvelope') } },
      },
    ]),
  );
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
const secured = [{ apiKey: [] }];
const session = [{ dashboardSession: [] }];

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
      '/v1/signals': {
        get: {
          summary: 'List signals, newest first',
          security: secured,
          parameters: queryParameters(signalListQuerySchema),
          responses: { ...ok('A page of signals', ref('SignalListResponse')), ...errors('VALIDATION_ERROR') },
        },
      },
      '/v1/signals/{signal_id}': {
        get: {
          summary: 'One signal in detail',
          security: secured,
          parameters: [pathParam('signal_id', 'Signal id `sig_…`')],
          responses: { ...ok('The signal', ref('SignalDetailResponse')), ...errors('NOT_FOUND') },
        },
      },
      '/v1/stats': {
        get: {
          summary: 'Aggregated performance statistics',
          security: secured,
          parameters: queryParameters(statsQuerySchema),
          responses: { ...ok('Statistics', ref('StatisticsResponse')), ...errors('VALIDATION_ERROR') },
        },
      },
      '/v1/webhooks': {
        post: {
          summary: 'Subscribe a URL to events',
          security: secured,
          requestBody: body('CreateWebhookRequest'),
          responses: {
            ...ok(
              'Created; the signing secret is shown only here',
              envelope(ref('WebhookSubscriptionWithSecret')),
              '201',
            ),
            ...errors('VALIDATION_ERROR', 'UNSUPPORTED_MEDIA_TYPE', 'PAYLOAD_TOO_LARGE'),
          },
        },
        get: {
          summary: 'List subscriptions, newest first',
          security: secured,
          parameters: queryParameters(webhookListQuerySchema),
          responses: {
            ...ok(
              'A page of subscriptions',
              envelope({ type: 'array', items: ref('WebhookSubscription') }, ref('PageMeta')),
            ),
            ...errors('VALIDATION_ERROR'),
          },
        },
      },
      '/v1/webhooks/{webhook_id}': {
        get: {
          summary: 'One subscription',
          security: secured,
          parameters: [webhookId],
          responses: { ...ok('Subscription', envelope(ref('WebhookSubscription'))), ...errors('NOT_FOUND') },
        },
        patch: {
          summary: 'Change url, events, types or enabled',
          security: secured,
          parameters: [webhookId],
          requestBody: body('UpdateWebhookRequest'),
          responses: {
            ...ok('Updated', envelope(ref('WebhookSubscription'))),
            ...errors('NOT_FOUND', 'VALIDATION_ERROR'),
          },
        },
        delete: {
          summary: 'Delete a subscription',
          security: secured,
          parameters: [webhookId],
          responses: { ...ok('Deleted', envelope(ref('WebhookSubscription'))), ...errors('NOT_FOUND') },
        },
      },
      '/v1/webhooks/{webhook_id}/rotate-secret': {
        post: {
          summary: 'New signing secret; the old one stays valid for the overlap period',
          security: secured,
          parameters: [webhookId],
          responses: {
            ...ok('New secret', envelope(ref('WebhookSubscriptionWithSecret'))),
            ...errors('NOT_FOUND'),
          },
        },
      },
      '/v1/webhooks/{webhook_id}/test': {
        post: {
          summary: 'Send a signed webhook.test event; 409 CONFLICT while the subscription is disabled',
          security: secured,
          parameters: [webhookId],
          responses: {
            ...ok('Queued', envelope(ref('WebhookDelivery')), '202'),
            ...errors('NOT_FOUND', 'CONFLICT'),
          },
        },
      },
      '/v1/webhooks/{webhook_id}/deliveries': {
        get: {
          summary: 'Delivery log, newest first',
          security: secured,
          parameters: [webhookId, ...queryParameters(deliveryListQuerySchema)],
          responses: {
            ...ok('Deliveries', envelope({ type: 'array', items: ref('WebhookDelivery') }, ref('PageMeta'))),
            ...errors('NOT_FOUND', 'VALIDATION_ERROR'),
          },
        },
      },
      '/v1/webhooks/{webhook_id}/deliveries/{delivery_id}': {
        get: {
          summary: 'One delivery with its attempts',
          security: secured,
          parameters: [webhookId, deliveryId],
          responses: { ...ok('Delivery', envelope(ref('WebhookDelivery'))), ...errors('NOT_FOUND') },
        },
      },
      '/v1/webhooks/{webhook_id}/deliveries/{delivery_id}/retry': {
        post: {
          summary: 'Send a delivery again',
          security: secured,
          parameters: [webhookId, deliveryId],
          responses: {
            ...ok('Queued', envelope(ref('WebhookDelivery')), '202'),
            ...errors('NOT_FOUND', 'CONFLICT'),
          },
        },
      },
      '/v1/auth/login': {
        post: {
          summary:
            'Dashboard login (email + password) → short-lived session token. After 5 failures for an email (20 for a network) each attempt waits twice as long: 429 with retry_after.',
          requestBody: body('LoginRequest'),
          responses: { ...ok('Session', sessionEnvelope), ...errors('VALIDATION_ERROR') },
        },
      },
      '/v1/auth/logout': {
        post: {
          summary: 'End this session token',
          security: session,
          responses: {
            ...ok('Logged out', envelope({ type: 'object', properties: { logged_out: { const: true } } })),
            ...errors('FORBIDDEN'),
          },
        },
      },
      '/v1/account/password': {
        post: {
          summary: 'Change the password: every session so far ends; the answer is a new session',
          security: session,
          requestBody: body('ChangePasswordRequest'),
          responses: { ...ok('A new session', sessionEnvelope), ...errors('VALIDATION_ERROR', 'FORBIDDEN') },
        },
      },
      '/v1/account/keys': {
        get: {
          summary: "This account's API keys, newest first",
          security: session,
          parameters: queryParameters(keyListQuerySchema),
          responses: {
            ...ok('Keys', envelope({ type: 'array', items: ref('ApiKey') }, ref('PageMeta'))),
            ...errors('VALIDATION_ERROR', 'FORBIDDEN'),
          },
        },
        post: {
          summary:
            'Create an API key (shown once). With an Idempotency-Key, a retry with the same body within 24 h answers the same key (200, Idempotent-Replayed: true); another body is 409.',
          security: session,
          parameters: [
            {
              name: 'Idempotency-Key',
              in: 'header',
              required: false,
              description: '1–255 visible ASCII characters, unique per intended creation',
              schema: { type: 'string', minLength: 1, maxLength: 255 },
            },
          ],
          requestBody: body('CreateApiKeyRequest'),
          responses: {
            ...ok('The new key', envelope(ref('ApiKeyWithSecret')), '201'),
            ...ok(
              'The key a first request with this Idempotency-Key made',
              envelope(ref('ApiKeyWithSecret')),
            ),
            ...errors('VALIDATION_ERROR', 'FORBIDDEN', 'IDEMPOTENCY_CONFLICT'),
          },
        },
      },
      '/v1/account/keys/{key_id}': {
        delete: {
          summary: 'Revoke a key, immediately and everywhere',
          security: session,
          parameters: [pathParam('key_id', 'Key id `key_…`')],
          responses: { ...ok('Revoked', envelope(ref('ApiKey'))), ...errors('NOT_FOUND', 'FORBIDDEN') },
        },
      },
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
