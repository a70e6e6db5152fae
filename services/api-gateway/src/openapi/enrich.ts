/**
 * What the published document adds to the one built from the contracts: an operationId, tags
 * and examples on every operation (the SDK's method names follow the operationIds), and open
 * response schemas — clients must accept fields we add later, so only request bodies stay strict.
 */

import { DEFAULT_ERROR_MESSAGES, MAX_PAGE_SIZE, type ErrorCode } from '@signal/contracts';

type Json = Record<string, unknown>;

interface OperationMeta {
  operationId: string;
  tag: string;
  requestExample?: unknown;
  responseExample?: unknown;
  /** The 400 this operation gives, worded as the system words it (every operation has one). */
  invalid: Json;
  /** This operation's own refusals (404, 409, a 401 or 429 of its own), by status. */
  errorExamples?: Record<string, Json>;
}

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Request bodies keep `additionalProperties: false`: an unknown field there is a client bug worth a 400. */
const REQUEST_COMPONENTS = new Set([
  'CreateWebhookRequest',
  'UpdateWebhookRequest',
  'CreateApiKeyRequest',
  'LoginRequest',
  'ChangePasswordRequest',
]);

const at = '2026-01-15T09:30:00.000Z';
const signalItem = {
  id: 'sig_01KAB3J5T7XWQ8F0M2N4P6R8S0',
  token: {
    symbol: 'PEPE2',
    name: 'Pepe Two',
    contract: '0x6982508145454ce325ddbe47a25d4ec3d2311933',
    age_hours: 5.5,
  },
  metrics: { mcap_entry: 120000, mcap_current: 186000, volume_24h: 54000, holders: 812, liquidity: 41000 },
  performance: { roi: 55, ath_roi: 92, status: 'active' },
  type: 'new',
  is_premium: false,
  created_at: at,
};
const signalDetail = {
  ...signalItem,
  token: {
    ...signalItem.token,
    dex_paid: true,
    socials: { twitter: 'https://x.com/pepetwo', telegram: 'https://t.me/pepetwo', website: null },
  },
  metrics: { ...signalItem.metrics, mcap_ath: 230400 },
  performance: { ...signalItem.performance, time_to_ath_hours: 3.2 },
  updated_at: at,
};
const webhook = {
  id: 'wh_01KAB3K0C9D1E2F3G4H5J6K7M8',
  url: 'https://example.com/hooks/signals',
  events: ['signal.new', 'signal.winner'],
  types: ['premium'],
  description: 'production receiver',
  status: 'enabled',
  disabled_reason: null,
  created_at: at,
  updated_at: at,
};
const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const delivery = {
  id: 'dlv_01KAB3M1N2P3Q4R5S6T7V8W9X0',
  webhook_id: webhook.id,
  event_id: 'evt_01KAB3M1N2P3Q4R5S6T7V8W9X1',
  event: 'signal.new',
  status: 'succeeded',
  attempts_made: 1,
  next_attempt_at: null,
  created_at: at,
  updated_at: at,
  attempts: [
    {
      attempt: 1,
      started_at: at,
      duration_ms: 84,
      status_code: 200,
      error: null,
      request: {
        url: 'https://example.com/hooks/signals',
        headers: {
          'content-type': 'application/json',
          'user-agent': 'SignalService-Webhooks/1.0',
          'webhook-id': 'dlv_01KAB3M1N2P3Q4R5S6T7V8W9X0',
          'webhook-timestamp': '1767225600',
          'webhook-signature': 'v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=',
        },
        body: '{"event":"signal.new","timestamp":"2026-01-01T00:00:00.000Z","data":{…}}',
      },
      response: { status: 200, headers: { 'content-type': 'text/plain' }, body: 'ok', body_truncated: false },
    },
  ],
};
const { attempts: _attempts, ...withoutAttempts } = delivery;
const apiKey = {
  id: 'key_01KAB3N4P5Q6R7S8T9V0W1X2Y3',
  name: 'production',
  prefix: 'sk_live_4eC39H',
  created_at: at,
  expires_at: null,
  last_used_at: at,
  revoked_at: null,
};
const meta = { total: 1, page: 1, per_page: 20, total_pages: 1, next_cursor: null };
const ok = (data: unknown, extra: Json = {}) => ({ success: true, data, ...extra });

const requestId = 'req_01KAB3P…';
const failure = (code: ErrorCode, message: string = DEFAULT_ERROR_MESSAGES[code], extra: Json = {}) => ({
  success: false,
  error: { code, message, request_id: requestId, ...extra },
});
/** A VALIDATION_ERROR naming one field; `detail` where the system words the detail apart. */
const invalid = (field: string, message: string, detail = message) =>
  failure('VALIDATION_ERROR', message, { details: [{ field, message: detail }] });
/** Every path parameter is percent-decoded first: `%ZZ` is refused before the id is looked at. */
const malformedPath = invalid(
  'path',
  'The path holds a malformed percent-escape.',
  'malformed percent-escape',
);
const limitOutOfRange = invalid('limit', `limit must be between 1 and ${MAX_PAGE_SIZE}`);
const webhookMissing = { '404': failure('NOT_FOUND', `Webhook ${webhook.id} was not found.`) };
const deliveryMissing = { '404': failure('NOT_FOUND', `Delivery ${delivery.id} was not found.`) };
const idempotencyConflict = { '409': failure('IDEMPOTENCY_CONFLICT') };
const tooManyLogins = {
  '429': failure('RATE_LIMIT_EXCEEDED', 'Too many failed logins: wait retry_after seconds.', {
    retry_after: 4,
  }),
};

const OPERATIONS: Record<string, OperationMeta> = {
  'get /v1/signals': {
    operationId: 'listSignals',
    tag: 'Signals',
    responseExample: ok([signalItem], { meta }),
    invalid: limitOutOfRange,
  },
  'get /v1/signals/{signal_id}': {
    operationId: 'getSignal',
    tag: 'Signals',
    responseExample: ok(signalDetail),
    invalid: malformedPath,
    errorExamples: { '404': failure('NOT_FOUND', `Signal ${signalItem.id} was not found.`) },
  },
  'get /v1/stats': {
    operationId: 'getStats',
    tag: 'Statistics',
    responseExample: ok({
      total_signals: 1520,
      winners: 412,
      win_rate: 27.11,
      avg_roi: 38.4,
      best_roi: 2140,
      by_type: {
        new: { total: 800, winners: 190, win_rate: 23.75 },
        '3d': { total: 120, winners: 40, win_rate: 33.33 },
        '7d': { total: 100, winners: 31, win_rate: 31 },
        '30d': { total: 60, winners: 20, win_rate: 33.33 },
        wallet: { total: 240, winners: 61, win_rate: 25.42 },
        premium: { total: 200, winners: 70, win_rate: 35 },
      },
    }),
    invalid: invalid('period', 'period must be one of 24h, 7d, 30d, all'),
  },
  'post /v1/webhooks': {
    operationId: 'createWebhook',
    tag: 'Webhook subscriptions',
    requestExample: { url: webhook.url, events: webhook.events, types: webhook.types },
    responseExample: ok({ ...webhook, secret }),
    invalid: invalid('events', 'events must name at least one event'),
    errorExamples: idempotencyConflict,
  },
  'get /v1/webhooks': {
    operationId: 'listWebhooks',
    tag: 'Webhook subscriptions',
    responseExample: ok([webhook], { meta: { total: 1, page: 1, per_page: 100, total_pages: 1 } }),
    invalid: limitOutOfRange,
  },
  'get /v1/webhooks/{webhook_id}': {
    operationId: 'getWebhook',
    tag: 'Webhook subscriptions',
    responseExample: ok(webhook),
    invalid: malformedPath,
    errorExamples: webhookMissing,
  },
  'patch /v1/webhooks/{webhook_id}': {
    operationId: 'updateWebhook',
    tag: 'Webhook subscriptions',
    requestExample: { enabled: false },
    responseExample: ok({ ...webhook, status: 'disabled', disabled_reason: 'Disabled by the account.' }),
    invalid: invalid('enabled', 'enabled must be true or false'),
    errorExamples: webhookMissing,
  },
  'delete /v1/webhooks/{webhook_id}': {
    operationId: 'deleteWebhook',
    tag: 'Webhook subscriptions',
    responseExample: ok(webhook),
    invalid: malformedPath,
    errorExamples: webhookMissing,
  },
  'post /v1/webhooks/{webhook_id}/rotate-secret': {
    operationId: 'rotateWebhookSecret',
    tag: 'Webhook subscriptions',
    responseExample: ok({ ...webhook, secret }),
    invalid: malformedPath,
    errorExamples: webhookMissing,
  },
  'post /v1/webhooks/{webhook_id}/test': {
    operationId: 'sendWebhookTest',
    tag: 'Webhook subscriptions',
    requestExample: { event: 'signal.winner' },
    // As queued: no attempt yet, so no attempts list, and the first attempt due now.
    responseExample: ok({
      ...withoutAttempts,
      event: 'webhook.test',
      status: 'pending',
      attempts_made: 0,
      next_attempt_at: at,
    }),
    invalid: malformedPath,
    errorExamples: {
      ...webhookMissing,
      '409': failure(
        'CONFLICT',
        'This webhook is disabled. Disabled by the account. Enable it before sending a test event.',
      ),
    },
  },
  'post /v1/webhooks/{webhook_id}/recover': {
    operationId: 'recoverWebhook',
    tag: 'Webhook deliveries',
    requestExample: { since: at },
    responseExample: ok({ since: at, queued: 3 }),
    invalid: invalid('since', 'since must be an ISO 8601 date-time with its zone, e.g. 2026-01-01T00:00:00Z'),
    errorExamples: {
      ...webhookMissing,
      '409': failure('CONFLICT', 'Enable the webhook before recovering its failed deliveries.'),
    },
  },
  'get /v1/webhooks/{webhook_id}/deliveries': {
    operationId: 'listWebhookDeliveries',
    tag: 'Webhook deliveries',
    responseExample: ok([delivery], { meta: { total: 1, page: 1, per_page: 20, total_pages: 1 } }),
    invalid: invalid('status', 'status must be one of pending, succeeded, failed'),
    errorExamples: webhookMissing,
  },
  'get /v1/webhooks/{webhook_id}/deliveries/{delivery_id}': {
    operationId: 'getWebhookDelivery',
    tag: 'Webhook deliveries',
    responseExample: ok(delivery),
    invalid: malformedPath,
    errorExamples: deliveryMissing,
  },
  'post /v1/webhooks/{webhook_id}/deliveries/{delivery_id}/retry': {
    operationId: 'retryWebhookDelivery',
    tag: 'Webhook deliveries',
    responseExample: ok({ ...delivery, status: 'pending' }),
    invalid: malformedPath,
    errorExamples: {
      ...deliveryMissing,
      '409': failure('CONFLICT', 'Only failed deliveries can be re-sent; this one is succeeded.'),
    },
  },
  'post /v1/auth/login': {
    operationId: 'login',
    tag: 'Account (dashboard session)',
    requestExample: { email: 'dev@example.com', password: 'correct horse battery staple' },
    responseExample: ok({ token: 'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9…', expires_at: at }),
    invalid: invalid('password', 'password is required'),
    errorExamples: { '401': failure('UNAUTHORIZED', 'Invalid email or password.'), ...tooManyLogins },
  },
  'post /v1/auth/logout': {
    operationId: 'logout',
    tag: 'Account (dashboard session)',
    responseExample: ok({ logged_out: true }),
    // Its body is read as JSON like any POST's, though it needs none.
    invalid: invalid('body', 'The request body is not valid JSON.', 'invalid JSON'),
  },
  'post /v1/account/password': {
    operationId: 'changePassword',
    tag: 'Account (dashboard session)',
    requestExample: {
      current_password: 'correct horse battery staple',
      new_password: 'a new long passphrase',
    },
    responseExample: ok({ token: 'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9…', expires_at: at }),
    invalid: invalid('new_password', 'new_password must have at least 12 characters'),
    errorExamples: tooManyLogins,
  },
  'get /v1/account/keys': {
    operationId: 'listApiKeys',
    tag: 'Account (dashboard session)',
    responseExample: ok([apiKey], { meta: { total: 1, page: 1, per_page: 100, total_pages: 1 } }),
    invalid: limitOutOfRange,
  },
  'post /v1/account/keys': {
    operationId: 'createApiKey',
    tag: 'Account (dashboard session)',
    requestExample: { name: 'production', expires_at: '2027-01-01T00:00:00Z' },
    responseExample: ok({ ...apiKey, key: 'sk_live_…shown once…' }),
    invalid: invalid('expires_at', 'expires_at must be in the future', 'must be in the future'),
    errorExamples: idempotencyConflict,
  },
  'delete /v1/account/keys/{key_id}': {
    operationId: 'revokeApiKey',
    tag: 'Account (dashboard session)',
    responseExample: ok({ ...apiKey, revoked_at: at }),
    invalid: malformedPath,
    errorExamples: { '404': failure('NOT_FOUND', `API key ${apiKey.id} was not found.`) },
  },
};

const TAGS = [
  { name: 'Signals', description: 'Token signals, newest first; filter by type, status and time.' },
  { name: 'Statistics', description: 'Aggregated performance by period and type.' },
  {
    name: 'Webhook subscriptions',
    description:
      'Subscriptions that push signal events to your URL, signed per Standard Webhooks. See [Receiving webhooks](/docs/receiving-webhooks).',
  },
  { name: 'Webhook deliveries', description: 'Each delivery, its attempts, and re-sending.' },
  {
    name: 'Account (dashboard session)',
    description:
      'Managing API keys needs a dashboard session (the dashboard at /dashboard uses a cookie). API keys cannot manage keys.',
  },
];

/** The callers an operation's `security` names, as the refusals they get tell them apart. */
type Caller = 'apiKey' | 'session' | 'anyone';

function callerOf(op: Json): Caller {
  const schemes = (Array.isArray(op.security) ? op.security : []).flatMap((s) =>
    isObject(s) ? Object.keys(s) : [],
  );
  if (schemes.includes('apiKey')) return 'apiKey';
  return schemes.includes('dashboardSession') ? 'session' : 'anyone';
}

/**
 * Examples of the refusals every operation of a kind can get, worded as the system words them:
 * the API-key path refuses bodies on their headers (api-path.ts, upstream.ts), the session routes
 * read them (service-kit jsonBodyMiddleware, account.router.ts), Node refuses oversized headers
 * (service-kit http-server.ts). An operation's own examples win over these.
 */
function commonErrorExamples(caller: Caller, method: string, path: string): Record<string, Json> {
  const service = path.split('/')[2] ?? 'upstream';
  const apiKey = caller === 'apiKey';
  const tooLarge =
    apiKey && method !== 'get'
      ? 'The request body is larger than any route takes (64 KiB).'
      : apiKey
        ? 'The request target and headers are too large to pass on.'
        : method === 'post' || method === 'patch'
          ? DEFAULT_ERROR_MESSAGES.PAYLOAD_TOO_LARGE
          : 'The request headers are too large.';
  return {
    '401':
      caller === 'apiKey'
        ? failure('UNAUTHORIZED')
        : failure('UNAUTHORIZED', 'A dashboard session is required: POST /v1/auth/login.'),
    '403': failure(
      'FORBIDDEN',
      'API keys cannot manage the account (keys, password, sessions); use a dashboard session.',
    ),
    '413': failure('PAYLOAD_TOO_LARGE', tooLarge),
    '415': apiKey
      ? failure('UNSUPPORTED_MEDIA_TYPE', 'Request bodies must be JSON (Content-Type: application/json).')
      : failure('UNSUPPORTED_MEDIA_TYPE'),
    '429': failure('RATE_LIMIT_EXCEEDED', undefined, { retry_after: 12 }),
    '500': failure('INTERNAL_ERROR'),
    '503': failure('SERVICE_UNAVAILABLE', undefined, { retry_after: 1 }),
    '504': failure('GATEWAY_TIMEOUT', `The ${service} service did not answer in time.`),
  };
}

/** Query parameters the contracts leave without a description. */
const PARAMETER_DESCRIPTIONS: Record<string, string> = {
  type: 'Only this signal type',
  status: 'Only this status (signals: performance.status; deliveries: delivery status)',
  period: 'Time window on created_at; default all',
  event: 'Only deliveries of this event name',
  page: 'Page number, from 1',
  limit: 'Results per page; max 100 (default: 20 for signals and deliveries, 100 for webhooks and keys)',
};

/** Removes `additionalProperties: false` everywhere below `node`. */
function openUp(node: unknown): void {
  if (Array.isArray(node)) return node.forEach(openUp);
  if (!isObject(node)) return;
  if (node.additionalProperties === false) delete node.additionalProperties;
  for (const v of Object.values(node)) openUp(v);
}

function jsonContent(container: unknown): Json | undefined {
  if (!isObject(container) || !isObject(container.content)) return undefined;
  const c = container.content['application/json'];
  return isObject(c) ? c : undefined;
}

export function enrichDocument(doc: Json, guideMarkdown?: string): Json {
  const components =
    isObject(doc.components) && isObject(doc.components.schemas) ? doc.components.schemas : {};
  for (const [name, schema] of Object.entries(components)) {
    if (!REQUEST_COMPONENTS.has(name)) openUp(schema);
  }
  const paths = isObject(doc.paths) ? doc.paths : {};
  for (const [path, item] of Object.entries(paths)) {
    if (!isObject(item)) continue;
    for (const [method, op] of Object.entries(item)) {
      if (!isObject(op)) continue;
      const meta = OPERATIONS[`${method} ${path}`];
      if (!meta) throw new Error(`OpenAPI: no operationId for ${method} ${path} (openapi/enrich.ts)`);
      op.operationId = meta.operationId;
      op.tags = [meta.tag];
      for (const p of Array.isArray(op.parameters) ? op.parameters : []) {
        if (isObject(p) && !p.description && typeof p.name === 'string' && PARAMETER_DESCRIPTIONS[p.name]) {
          p.description = PARAMETER_DESCRIPTIONS[p.name];
        }
      }
      const req = jsonContent(op.requestBody);
      if (req && meta.requestExample !== undefined) req.example = meta.requestExample;
      const errorExamples: Record<string, Json | undefined> = {
        ...commonErrorExamples(callerOf(op), method, path),
        '400': meta.invalid,
        ...meta.errorExamples,
      };
      const responses = isObject(op.responses) ? op.responses : {};
      for (const [status, response] of Object.entries(responses)) {
        const content = jsonContent(response);
        if (!content) continue;
        openUp(content.schema);
        if (/^2/.test(status)) {
          if (meta.responseExample !== undefined) content.example = meta.responseExample;
        } else {
          content.example = errorExamples[status];
        }
      }
    }
  }
  const info = isObject(doc.info) ? doc.info : {};
  const description = typeof info.description === 'string' ? info.description : '';
  info.description =
    `${description}\n\nGet a key in the [dashboard](/dashboard) (Profile → API settings). ` +
    'Responses may gain fields over time: ignore the ones you do not know. ' +
    'Typed client: `@signal/sdk`. Guide: [Receiving webhooks](/docs/receiving-webhooks).' +
    (guideMarkdown ? `\n\n${guideMarkdown.replace(/^# /m, '## ')}` : '');
  return { ...doc, tags: TAGS };
}
