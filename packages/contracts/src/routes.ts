import { z } from 'zod';
import {
  apiKeyIdSchema,
  apiKeySchema,
  apiKeyWithSecretSchema,
  rollApiKeyInputSchema,
  renameApiKeyInputSchema,
  rolledApiKeySchema,
  changePasswordInputSchema,
  createApiKeyInputSchema,
  keyListQuerySchema,
  loginInputSchema,
  sessionSchema,
} from './accounts';
import type { ErrorCode } from './errors';
import { pageMetaSchema } from './paging';
import { signalDetailResponseSchema, signalListQuerySchema, signalListResponseSchema } from './signals';
import { statsQuerySchema, statsResponseSchema } from './stats';
import { STREAM_RETRY_MS, signalStreamQuerySchema } from './stream';
import {
  createWebhookInputSchema,
  deliveryDetailSchema,
  deliveryIdSchema,
  deliveryListMetaSchema,
  deliveryListQuerySchema,
  deliverySchema,
  recoverWebhookInputSchema,
  recoverWebhookResultSchema,
  updateWebhookInputSchema,
  webhookIdSchema,
  webhookListQuerySchema,
  webhookSubscriptionSchema,
  webhookTestInputSchema,
  webhookWithSecretSchema,
} from './webhooks';

/**
 * The public API, each route once: its path, method, parameters, body, success responses with
 * their headers, and its own errors. The OpenAPI document (openapi.ts), the services' request
 * validation and their 405 responses, and through the document the SDK's types, are read from here.
 */

/** A success body `{ success: true, data[, meta] }`, registered under `id` for the document. */
const envelope = <T extends z.ZodType>(id: string, data: T) =>
  z.strictObject({ success: z.literal(true), data }).meta({ id });
const listEnvelope = <T extends z.ZodType>(id: string, item: T) =>
  z.strictObject({ success: z.literal(true), data: z.array(item), meta: pageMetaSchema }).meta({ id });

export const webhookResponseSchema = envelope('WebhookSubscriptionResponse', webhookSubscriptionSchema);
export const webhookWithSecretResponseSchema = envelope(
  'WebhookSubscriptionWithSecretResponse',
  webhookWithSecretSchema,
);
export const webhookListResponseSchema = listEnvelope(
  'WebhookSubscriptionListResponse',
  webhookSubscriptionSchema,
);
export const deliveryResponseSchema = envelope('WebhookDeliveryResponse', deliverySchema);
export const deliveryDetailResponseSchema = envelope('WebhookDeliveryDetailResponse', deliveryDetailSchema);
export const deliveryListResponseSchema = z
  .strictObject({ success: z.literal(true), data: z.array(deliverySchema), meta: deliveryListMetaSchema })
  .meta({ id: 'WebhookDeliveryListResponse' });
export const recoverWebhookResponseSchema = envelope('RecoverWebhookResponse', recoverWebhookResultSchema);
export const sessionResponseSchema = envelope('SessionResponse', sessionSchema);
export const logoutResponseSchema = envelope(
  'LogoutResponse',
  z.strictObject({ logged_out: z.literal(true) }),
);
export const apiKeyResponseSchema = envelope('ApiKeyResponse', apiKeySchema);
export const apiKeyWithSecretResponseSchema = envelope('ApiKeyWithSecretResponse', apiKeyWithSecretSchema);
export const apiKeyListResponseSchema = listEnvelope('ApiKeyListResponse', apiKeySchema);
export const rolledApiKeyResponseSchema = envelope('RolledApiKeyResponse', rolledApiKeySchema);

/** Who may call a route: decides its security and the refusals every call of it can get. */
export type Caller = 'apiKey' | 'session' | 'anyone';
export type HttpMethod = 'get' | 'post' | 'patch' | 'delete';
/** Which process serves the route: a service behind the gateway, or the gateway itself. */
export type RouteOwner = 'signals' | 'stats' | 'webhooks' | 'gateway';

/** Response headers beyond the ones every response carries (rate limit, request id). */
export type ResponseHeader = 'Idempotent-Replayed';

export interface SuccessResponse {
  description: string;
  /** The JSON body's schema; for `text/event-stream`, what the document names the stream's text. */
  schema: z.ZodType;
  /** Headers every response of this status carries. */
  headers?: readonly ResponseHeader[];
  /** Headers some responses of this status carry (a repeat's `Idempotent-Replayed`). */
  optionalHeaders?: readonly ResponseHeader[];
  /** Default `application/json`; a live stream is `text/event-stream`. */
  mediaType?: 'application/json' | 'text/event-stream';
}

/** A request header the route reads (besides Authorization and Idempotency-Key). */
export interface HeaderParam {
  name: string;
  description: string;
}

export interface PathParam {
  name: string;
  description: string;
  /**
   * The form every such id has: a value of another form names nothing, so the route answers 404
   * before any lookup (`%00`, overlong, another prefix), in the words of an unknown id's 404:
   * "`notFound` <the id as sent> was not found."
   */
  schema?: z.ZodType<string>;
  /** What the id names, as its 404 says it: `Webhook`, `API key`, `Delivery`. */
  notFound?: string;
}

export interface RouteDef {
  operationId: string;
  method: HttpMethod;
  /** OpenAPI form: `/v1/webhooks/{webhook_id}`. */
  path: string;
  owner: RouteOwner;
  caller: Caller;
  tag: string;
  /** A short title: the reference's sidebar and heading (plain text, one line). */
  summary: string;
  /** What the title cannot hold, in Markdown: shown under the heading. */
  description?: string;
  pathParams?: readonly PathParam[];
  query?: z.ZodType;
  headerParams?: readonly HeaderParam[];
  /** A dashboard session is taken as well as an API key (the gateway proxies it either way). */
  sessionToo?: boolean;
  /** Takes an Idempotency-Key header: the same request again within 24 h gets the first result. */
  idempotencyKey?: boolean;
  body?: z.ZodType;
  /** The body may be left out (the route then reads it as `{}`). */
  bodyOptional?: boolean;
  responses: Readonly<Record<string, SuccessResponse>>;
  /** Errors of the route's own logic; those every call of its kind can get are added (openapi.ts). */
  errors?: readonly ErrorCode[];
}

const webhookId: PathParam = {
  name: 'webhook_id',
  description: 'Subscription id `wh_…`',
  schema: webhookIdSchema,
  notFound: 'Webhook',
};
/** An API key's id, on the account's and the dashboard's key routes. */
export const keyIdParam: PathParam = {
  name: 'key_id',
  description: 'Key id `key_…`',
  schema: apiKeyIdSchema,
  notFound: 'API key',
};
const deliveryId: PathParam = {
  name: 'delivery_id',
  description: 'Delivery id `dlv_…`',
  schema: deliveryIdSchema,
  notFound: 'Delivery',
};

const IDEMPOTENCY =
  'With an Idempotency-Key, a retry with the same body within 24 h returns the same result (200, Idempotent-Replayed: true); another body is 409.';

/** The same, for an action (it changes or sends something) rather than a creation. */
const ACTION_ONCE =
  'With an Idempotency-Key, a repeat within 24 h answers as the first request did (Idempotent-Replayed: true) and does not act again; the key sent with another request is 409 IDEMPOTENCY_CONFLICT.';

const replayed = (description: string, schema: z.ZodType): SuccessResponse => ({
  description,
  schema,
  headers: ['Idempotent-Replayed'],
});

/** The stream's 200, in prose: what a client reads from `GET /v1/signals/stream`. */
const STREAM_FORMAT = [
  'A Server-Sent Events stream (`text/event-stream`) that stays open. It starts with',
  `\`retry: ${STREAM_RETRY_MS}\` (milliseconds to wait before reconnecting). Each signal event is`,
  '`id: <event id>`, `event: <signal.new | signal.winner | signal.dead | signal.rugged>` and',
  '`data: <the webhook payload JSON>` (the body a webhook delivery of that event carries), ended',
  'by a blank line. A client that reconnects with `Last-Event-ID` receives every matching event',
  'after that id, in order, none twice, for at least 24 h. Events about the stream itself:',
  '`reset` (the id is malformed, unknown or older than the log: re-sync from `GET /v1/signals`;',
  'the stream goes on live, and the event carries the id to resume from), `overflow` (the client',
  'read too slowly: the stream ends, reconnect with Last-Event-ID), `reconnect` (the server is',
  'shutting down: reconnect with Last-Event-ID), `error` (data `{code, message}`: the API key was',
  'revoked (UNAUTHORIZED: the stream ends at once) or expired (KEY_EXPIRED); do not reconnect with it).',
  'Only signal events carry an `id:`. Comment lines (`: keep-alive`) arrive at least every 15 s.',
].join(' ');

export const ROUTES = {
  listSignals: {
    operationId: 'listSignals',
    method: 'get',
    path: '/v1/signals',
    owner: 'signals',
    caller: 'apiKey',
    tag: 'Signals',
    summary: 'List signals, newest first',
    query: signalListQuerySchema,
    responses: { '200': { description: 'A page of signals', schema: signalListResponseSchema } },
    errors: ['VALIDATION_ERROR'],
  },
  // Before getSignal: a client matching paths in the document's order must not read `stream` as an id.
  streamSignals: {
    operationId: 'streamSignals',
    method: 'get',
    path: '/v1/signals/stream',
    owner: 'signals',
    caller: 'apiKey',
    sessionToo: true,
    tag: 'Signals',
    summary: 'Stream live signal events',
    description:
      'Live signal events as Server-Sent Events, resumable with Last-Event-ID. Opening a stream costs one request; events cost nothing. An account may hold its plan’s number of open streams (5 by default): one more is 429 naming the limit. A revoked or expired key’s streams end with `event: error`.',
    query: signalStreamQuerySchema,
    headerParams: [
      {
        name: 'Last-Event-ID',
        description:
          'Resume after this event id (what EventSource sends when it reconnects); wins over `last_event_id`',
      },
    ],
    responses: {
      '200': {
        description: STREAM_FORMAT,
        schema: z.string(),
        mediaType: 'text/event-stream',
      },
    },
    errors: ['VALIDATION_ERROR'],
  },
  getSignal: {
    operationId: 'getSignal',
    method: 'get',
    path: '/v1/signals/{signal_id}',
    owner: 'signals',
    caller: 'apiKey',
    tag: 'Signals',
    summary: 'One signal in detail',
    pathParams: [{ name: 'signal_id', description: 'Signal id `sig_…`' }],
    responses: { '200': { description: 'The signal', schema: signalDetailResponseSchema } },
    errors: ['NOT_FOUND'],
  },
  getStats: {
    operationId: 'getStats',
    method: 'get',
    path: '/v1/stats',
    owner: 'stats',
    caller: 'apiKey',
    tag: 'Statistics',
    summary: 'Aggregated performance statistics',
    query: statsQuerySchema,
    responses: { '200': { description: 'Statistics', schema: statsResponseSchema } },
    errors: ['VALIDATION_ERROR'],
  },
  createWebhook: {
    operationId: 'createWebhook',
    method: 'post',
    path: '/v1/webhooks',
    owner: 'webhooks',
    caller: 'apiKey',
    tag: 'Webhook subscriptions',
    summary: `Subscribe a URL to events. ${IDEMPOTENCY} An account holds at most its plan’s number of subscriptions (25 by default): one more is 409 CONFLICT naming the limit.`,
    idempotencyKey: true,
    body: createWebhookInputSchema,
    responses: {
      '201': {
        description: 'Created; the signing secret is shown only here',
        schema: webhookWithSecretResponseSchema,
      },
      '200': replayed(
        'The first response again: the subscription a first request with this Idempotency-Key made, with the secret it was created with (409 CONFLICT once that secret has been rotated out)',
        webhookWithSecretResponseSchema,
      ),
    },
    errors: ['VALIDATION_ERROR', 'IDEMPOTENCY_CONFLICT', 'CONFLICT'],
  },
  listWebhooks: {
    operationId: 'listWebhooks',
    method: 'get',
    path: '/v1/webhooks',
    owner: 'webhooks',
    caller: 'apiKey',
    tag: 'Webhook subscriptions',
    summary: 'List subscriptions, newest first, each with its delivery health',
    query: webhookListQuerySchema,
    responses: { '200': { description: 'A page of subscriptions', schema: webhookListResponseSchema } },
    errors: ['VALIDATION_ERROR'],
  },
  getWebhook: {
    operationId: 'getWebhook',
    method: 'get',
    path: '/v1/webhooks/{webhook_id}',
    owner: 'webhooks',
    caller: 'apiKey',
    tag: 'Webhook subscriptions',
    summary: 'One subscription with its delivery health (latest attempt, failing since, failures in 24 h)',
    pathParams: [webhookId],
    responses: { '200': { description: 'Subscription', schema: webhookResponseSchema } },
    errors: ['NOT_FOUND'],
  },
  updateWebhook: {
    operationId: 'updateWebhook',
    method: 'patch',
    path: '/v1/webhooks/{webhook_id}',
    owner: 'webhooks',
    caller: 'apiKey',
    tag: 'Webhook subscriptions',
    summary: 'Change url, events, types or enabled',
    pathParams: [webhookId],
    body: updateWebhookInputSchema,
    responses: { '200': { description: 'Updated', schema: webhookResponseSchema } },
    errors: ['NOT_FOUND', 'VALIDATION_ERROR'],
  },
  deleteWebhook: {
    operationId: 'deleteWebhook',
    method: 'delete',
    path: '/v1/webhooks/{webhook_id}',
    owner: 'webhooks',
    caller: 'apiKey',
    tag: 'Webhook subscriptions',
    summary: 'Delete a subscription',
    pathParams: [webhookId],
    responses: { '200': { description: 'Deleted', schema: webhookResponseSchema } },
    errors: ['NOT_FOUND'],
  },
  rotateWebhookSecret: {
    operationId: 'rotateWebhookSecret',
    method: 'post',
    path: '/v1/webhooks/{webhook_id}/rotate-secret',
    owner: 'webhooks',
    caller: 'apiKey',
    tag: 'Webhook subscriptions',
    summary: `New signing secret; the old one stays valid for the overlap period. Rotations at once each keep the others’ secrets signing as earlier ones (the newest four are kept). ${ACTION_ONCE} A repeat answers with the secret the first rotation made, while it still signs (409 CONFLICT once it does not)`,
    pathParams: [webhookId],
    idempotencyKey: true,
    responses: {
      '200': {
        description: 'New secret (a repeat: the one the first request made)',
        schema: webhookWithSecretResponseSchema,
        optionalHeaders: ['Idempotent-Replayed'],
      },
    },
    errors: ['NOT_FOUND', 'CONFLICT', 'IDEMPOTENCY_CONFLICT'],
  },
  sendWebhookTest: {
    operationId: 'sendWebhookTest',
    method: 'post',
    path: '/v1/webhooks/{webhook_id}/test',
    owner: 'webhooks',
    caller: 'apiKey',
    tag: 'Webhook subscriptions',
    summary: `Send a signed test event: webhook.test, or a sample of any event (\`event\`) in that event’s payload shape, marked \`test: true\`; 409 CONFLICT while the subscription is disabled. ${ACTION_ONCE} A repeat answers with the delivery the first request queued, as it stands`,
    pathParams: [webhookId],
    idempotencyKey: true,
    body: webhookTestInputSchema,
    bodyOptional: true,
    responses: {
      '202': {
        description: 'Queued',
        schema: deliveryResponseSchema,
        optionalHeaders: ['Idempotent-Replayed'],
      },
    },
    errors: ['NOT_FOUND', 'CONFLICT', 'VALIDATION_ERROR', 'IDEMPOTENCY_CONFLICT'],
  },
  recoverWebhook: {
    operationId: 'recoverWebhook',
    method: 'post',
    path: '/v1/webhooks/{webhook_id}/recover',
    owner: 'webhooks',
    caller: 'apiKey',
    tag: 'Webhook deliveries',
    summary:
      'Attempt now every delivery created since `since` that is failed or pending (waiting for a retry): a failed one gets one more attempt (failed again if it fails), a pending one has its waiting attempt made now. One page per call (`limit`, at most 100): pass `next_cursor` as `cursor` to go on. A `since` more than 5 minutes past the server’s time is 400 (it would find nothing). Idempotent: a repeat finds them queued, succeeded, or with their latest attempt already asked for (by retry or an earlier recover; their own retry timer makes the next), and queues none again. Limited per account (10 calls a minute by default): 429 RATE_LIMIT_EXCEEDED with Retry-After. 409 CONFLICT while the subscription is disabled. With an Idempotency-Key, a repeat within 24 h answers as the first call did (Idempotent-Replayed: true) and is not counted; the key sent with another request is 409 IDEMPOTENCY_CONFLICT',
    pathParams: [webhookId],
    idempotencyKey: true,
    body: recoverWebhookInputSchema,
    responses: {
      '202': {
        description: 'Queued',
        schema: recoverWebhookResponseSchema,
        optionalHeaders: ['Idempotent-Replayed'],
      },
    },
    errors: ['NOT_FOUND', 'CONFLICT', 'VALIDATION_ERROR', 'RATE_LIMIT_EXCEEDED', 'IDEMPOTENCY_CONFLICT'],
  },
  listWebhookDeliveries: {
    operationId: 'listWebhookDeliveries',
    method: 'get',
    path: '/v1/webhooks/{webhook_id}/deliveries',
    owner: 'webhooks',
    caller: 'apiKey',
    tag: 'Webhook deliveries',
    summary:
      'Delivery log, newest first, each with its latest response status (each delivery’s attempts are in its detail). Page by `page`, or walk by `cursor` (pass `meta.next_cursor` for the next page, `meta.prev_cursor` for the one before; deliveries made meanwhile do not shift the walk, and `meta.page` counts the pages walked). An account’s lists are read at most 2 at a time (their cost follows the history): one more is 429 RATE_LIMIT_EXCEEDED with Retry-After. Deliveries are kept 30 days from their event’s time, then removed with their attempts',
    pathParams: [webhookId],
    query: deliveryListQuerySchema,
    responses: { '200': { description: 'Deliveries', schema: deliveryListResponseSchema } },
    errors: ['NOT_FOUND', 'VALIDATION_ERROR'],
  },
  getWebhookDelivery: {
    operationId: 'getWebhookDelivery',
    method: 'get',
    path: '/v1/webhooks/{webhook_id}/deliveries/{delivery_id}',
    owner: 'webhooks',
    caller: 'apiKey',
    tag: 'Webhook deliveries',
    summary: 'One delivery with its attempts',
    pathParams: [webhookId, deliveryId],
    responses: { '200': { description: 'Delivery', schema: deliveryDetailResponseSchema } },
    errors: ['NOT_FOUND'],
  },
  retryWebhookDelivery: {
    operationId: 'retryWebhookDelivery',
    method: 'post',
    path: '/v1/webhooks/{webhook_id}/deliveries/{delivery_id}/retry',
    owner: 'webhooks',
    caller: 'apiKey',
    tag: 'Webhook deliveries',
    summary: `Attempt a delivery now: a failed one once more (failed again if it fails), a pending one without waiting for its retry timer (the timer then finds it done). 409 CONFLICT for a succeeded delivery or a disabled subscription. ${ACTION_ONCE} A repeat answers with the delivery as it stands`,
    pathParams: [webhookId, deliveryId],
    idempotencyKey: true,
    responses: {
      '202': {
        description: 'Queued',
        schema: deliveryResponseSchema,
        optionalHeaders: ['Idempotent-Replayed'],
      },
    },
    errors: ['NOT_FOUND', 'CONFLICT', 'IDEMPOTENCY_CONFLICT'],
  },
  login: {
    operationId: 'login',
    method: 'post',
    path: '/v1/auth/login',
    owner: 'gateway',
    caller: 'anyone',
    tag: 'Account (dashboard session)',
    summary:
      "Dashboard login (email + password) → short-lived session token, and a device cookie (`__Host-signal_device`) that a later login for the same email sends back. With that cookie a login is held by its own browser's failures only; without it, by failures for the email from its network (5 free), and once its network has failed for the email also by the email's (10) and the network's (20): past them each attempt waits twice as long, 429 with retry_after.",
    body: loginInputSchema,
    responses: { '200': { description: 'Session', schema: sessionResponseSchema } },
    errors: ['VALIDATION_ERROR'],
  },
  logout: {
    operationId: 'logout',
    method: 'post',
    path: '/v1/auth/logout',
    owner: 'gateway',
    caller: 'session',
    tag: 'Account (dashboard session)',
    summary: 'End this session token',
    responses: { '200': { description: 'Logged out', schema: logoutResponseSchema } },
  },
  changePassword: {
    operationId: 'changePassword',
    method: 'post',
    path: '/v1/account/password',
    owner: 'gateway',
    caller: 'session',
    tag: 'Account (dashboard session)',
    summary: 'Change the password: every session so far ends; the response is a new session',
    body: changePasswordInputSchema,
    responses: { '200': { description: 'A new session', schema: sessionResponseSchema } },
    errors: ['VALIDATION_ERROR'],
  },
  listApiKeys: {
    operationId: 'listApiKeys',
    method: 'get',
    path: '/v1/account/keys',
    owner: 'gateway',
    caller: 'session',
    tag: 'Account (dashboard session)',
    summary: "This account's API keys, newest first",
    query: keyListQuerySchema,
    responses: { '200': { description: 'Keys', schema: apiKeyListResponseSchema } },
    errors: ['VALIDATION_ERROR'],
  },
  createApiKey: {
    operationId: 'createApiKey',
    method: 'post',
    path: '/v1/account/keys',
    owner: 'gateway',
    caller: 'session',
    tag: 'Account (dashboard session)',
    summary: `Create an API key (shown once). ${IDEMPOTENCY}`,
    idempotencyKey: true,
    body: createApiKeyInputSchema,
    responses: {
      '201': { description: 'The new key', schema: apiKeyWithSecretResponseSchema },
      '200': replayed(
        'The key a first request with this Idempotency-Key made, secret included (409 CONFLICT once that key is revoked or expired)',
        apiKeyWithSecretResponseSchema,
      ),
    },
    errors: ['VALIDATION_ERROR', 'IDEMPOTENCY_CONFLICT', 'CONFLICT'],
  },
  rollApiKey: {
    operationId: 'rollApiKey',
    method: 'post',
    path: '/v1/account/keys/{key_id}/roll',
    owner: 'gateway',
    caller: 'session',
    tag: 'Account (dashboard session)',
    summary: `Roll a key: a new key now (shown once); the old one revoked at once or working for overlap_seconds more. A key is rolled once (409 CONFLICT) until its replacement stops working. ${IDEMPOTENCY}`,
    idempotencyKey: true,
    pathParams: [keyIdParam],
    body: rollApiKeyInputSchema,
    responses: {
      '201': { description: 'The new key and the one it replaced', schema: rolledApiKeyResponseSchema },
      '200': replayed(
        'The roll a first request with this Idempotency-Key made, the new secret included while that key works',
        rolledApiKeyResponseSchema,
      ),
    },
    errors: ['VALIDATION_ERROR', 'NOT_FOUND', 'CONFLICT', 'IDEMPOTENCY_CONFLICT'],
  },
  renameApiKey: {
    operationId: 'renameApiKey',
    method: 'patch',
    path: '/v1/account/keys/{key_id}',
    owner: 'gateway',
    caller: 'session',
    tag: 'Account (dashboard session)',
    summary: 'Rename a key (active, expired or revoked): its secret, expiry and status stay as they are',
    pathParams: [keyIdParam],
    body: renameApiKeyInputSchema,
    responses: { '200': { description: 'The key, renamed', schema: apiKeyResponseSchema } },
    errors: ['VALIDATION_ERROR', 'NOT_FOUND'],
  },
  revokeApiKey: {
    operationId: 'revokeApiKey',
    method: 'delete',
    path: '/v1/account/keys/{key_id}',
    owner: 'gateway',
    caller: 'session',
    tag: 'Account (dashboard session)',
    summary: 'Revoke a key, immediately and everywhere',
    pathParams: [keyIdParam],
    responses: { '200': { description: 'Revoked', schema: apiKeyResponseSchema } },
    errors: ['NOT_FOUND'],
  },
} as const satisfies Record<string, RouteDef>;

export type OperationId = keyof typeof ROUTES;

/** The live stream's path (`GET`, Server-Sent Events): see stream.ts. */
export const SIGNAL_STREAM_PATH = ROUTES.streamSignals.path;
export const ROUTE_LIST: readonly RouteDef[] = Object.values(ROUTES);

/** `/v1/webhooks/{webhook_id}` → `/v1/webhooks/:webhook_id` (Express). */
export const expressPath = (path: string) => path.replace(/\{([a-z_]+)\}/g, ':$1');

/**
 * A route's path as a client sends it: each `{name}` of the template filled in from `params`,
 * URI-encoded (the generated copies' `pathOf` does the same for the clients that cannot load this).
 */
export function fillPath(template: string, params: Readonly<Record<string, string>> = {}): string {
  return template.replace(/\{([a-z_]+)\}/g, (_match, name: string) => {
    const value = params[name];
    if (value === undefined) throw new Error(`${template}: no value for {${name}}`);
    return encodeURIComponent(value);
  });
}

/** A route as a log line or a message names it: `GET /v1/signals/{signal_id}`. */
export const routeName = (route: { method: string; path: string }): string =>
  `${route.method.toUpperCase()} ${route.path}`;

/** A path's version and first segment (`/v1/webhooks/{webhook_id}` → `/v1/webhooks`): the prefix it shares with its neighbours. */
export const pathPrefix = (path: string) => path.split('/').slice(0, 3).join('/');

/** The prefixes of the paths `owner` serves (`pathPrefix`), each once, in the table's order. */
export const routePrefixes = (owner: RouteOwner): string[] => [
  ...new Set(ROUTE_LIST.filter((r) => r.owner === owner).map((r) => pathPrefix(r.path))),
];

/**
 * The paths the `owners` serve with the methods each allows (uppercase, HEAD with GET): what a
 * 405 names in its `Allow` header.
 */
export function allowedMethods(...owners: RouteOwner[]): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const r of ROUTE_LIST) {
    if (!owners.includes(r.owner)) continue;
    const methods = out.get(r.path) ?? [];
    methods.push(r.method.toUpperCase());
    if (r.method === 'get') methods.push('HEAD');
    out.set(r.path, methods);
  }
  return out;
}

/**
 * The `Allow` value of an OPTIONS request for a path the `owners` serve (its methods and
 * OPTIONS), or undefined for a path they do not: literal paths first, so `/v1/signals/stream`
 * is not read as a signal id.
 */
export function allowHeaderFor(...owners: RouteOwner[]): (path: string) => string | undefined {
  const byTemplate = [...allowedMethods(...owners)].sort(
    ([a], [b]) => Number(a.includes('{')) - Number(b.includes('{')),
  );
  const matchers = byTemplate.map(([template, methods]) => ({
    pattern: new RegExp(`^${template.replace(/\{[a-z_]+\}/g, '[^/]+')}/?$`),
    allow: [...methods, 'OPTIONS'].join(', '),
  }));
  return (path) => matchers.find((m) => m.pattern.test(path))?.allow;
}

/**
 * For each path `owner` serves, the Express path, the methods a 405 for any other method tells
 * the client to use, and its `Allow` value: those methods and OPTIONS, as an OPTIONS request for
 * the path answers (registered after the routes themselves, so only a wrong method reaches it).
 */
export function methodNotAllowedRoutes(owner: RouteOwner): { path: string; use: string; allow: string }[] {
  return [...allowedMethods(owner)].map(([path, methods]) => ({
    path: expressPath(path),
    use: methods.join(', '),
    allow: [...methods, 'OPTIONS'].join(', '),
  }));
}
