/**
 * What the published document adds to the one built from the contracts: an operationId, tags
 * and examples on every operation (the SDK's method names follow the operationIds), and open
 * response schemas — clients must accept fields we add later, so only request bodies stay strict.
 */

type Json = Record<string, unknown>;

interface OperationMeta {
  operationId: string;
  tag: string;
  requestExample?: unknown;
  responseExample?: unknown;
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
  attempts: [{ attempt: 1, started_at: at, duration_ms: 84, status_code: 200, error: null }],
};
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

const OPERATIONS: Record<string, OperationMeta> = {
  'get /v1/signals': {
    operationId: 'listSignals',
    tag: 'Signals',
    responseExample: ok([signalItem], { meta }),
  },
  'get /v1/signals/{signal_id}': {
    operationId: 'getSignal',
    tag: 'Signals',
    responseExample: ok(signalDetail),
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
  },
  'post /v1/webhooks': {
    operationId: 'createWebhook',
    tag: 'Webhooks',
    requestExample: { url: webhook.url, events: webhook.events, types: webhook.types },
    responseExample: ok({ ...webhook, secret }),
  },
  'get /v1/webhooks': {
    operationId: 'listWebhooks',
    tag: 'Webhooks',
    responseExample: ok([webhook], { meta: { total: 1, page: 1, per_page: 100, total_pages: 1 } }),
  },
  'get /v1/webhooks/{webhook_id}': {
    operationId: 'getWebhook',
    tag: 'Webhooks',
    responseExample: ok(webhook),
  },
  'patch /v1/webhooks/{webhook_id}': {
    operationId: 'updateWebhook',
    tag: 'Webhooks',
    requestExample: { enabled: false },
    responseExample: ok({ ...webhook, status: 'disabled', disabled_reason: 'disabled by the account' }),
  },
  'delete /v1/webhooks/{webhook_id}': {
    operationId: 'deleteWebhook',
    tag: 'Webhooks',
    responseExample: ok(webhook),
  },
  'post /v1/webhooks/{webhook_id}/rotate-secret': {
    operationId: 'rotateWebhookSecret',
    tag: 'Webhooks',
    responseExample: ok({ ...webhook, secret }),
  },
  'post /v1/webhooks/{webhook_id}/test': {
    operationId: 'sendWebhookTest',
    tag: 'Webhooks',
    responseExample: ok({
      ...delivery,
      event: 'webhook.test',
      status: 'pending',
      attempts_made: 0,
      attempts: [],
    }),
  },
  'get /v1/webhooks/{webhook_id}/deliveries': {
    operationId: 'listWebhookDeliveries',
    tag: 'Webhook deliveries',
    responseExample: ok([delivery], { meta: { total: 1, page: 1, per_page: 20, total_pages: 1 } }),
  },
  'get /v1/webhooks/{webhook_id}/deliveries/{delivery_id}': {
    operationId: 'getWebhookDelivery',
    tag: 'Webhook deliveries',
    responseExample: ok(delivery),
  },
  'post /v1/webhooks/{webhook_id}/deliveries/{delivery_id}/retry': {
    operationId: 'retryWebhookDelivery',
    tag: 'Webhook deliveries',
    responseExample: ok({ ...delivery, status: 'pending' }),
  },
  'post /v1/auth/login': {
    operationId: 'login',
    tag: 'Account (dashboard session)',
    requestExample: { email: 'dev@example.com', password: 'correct horse battery staple' },
    responseExample: ok({ token: 'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9…', expires_at: at }),
  },
  'post /v1/auth/logout': {
    operationId: 'logout',
    tag: 'Account (dashboard session)',
    responseExample: ok({ logged_out: true }),
  },
  'post /v1/account/password': {
    operationId: 'changePassword',
    tag: 'Account (dashboard session)',
    requestExample: {
      current_password: 'correct horse battery staple',
      new_password: 'a new long passphrase',
    },
    responseExample: ok({ token: 'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9…', expires_at: at }),
  },
  'get /v1/account/keys': {
    operationId: 'listApiKeys',
    tag: 'Account (dashboard session)',
    responseExample: ok([apiKey], { meta: { total: 1, page: 1, per_page: 100, total_pages: 1 } }),
  },
  'post /v1/account/keys': {
    operationId: 'createApiKey',
    tag: 'Account (dashboard session)',
    requestExample: { name: 'production', expires_at: '2027-01-01T00:00:00Z' },
    responseExample: ok({ ...apiKey, key: 'sk_live_…shown once…' }),
  },
  'delete /v1/account/keys/{key_id}': {
    operationId: 'revokeApiKey',
    tag: 'Account (dashboard session)',
    responseExample: ok({ ...apiKey, revoked_at: at }),
  },
};

const TAGS = [
  { name: 'Signals', description: 'Token signals, newest first; filter by type, status and time.' },
  { name: 'Statistics', description: 'Aggregated performance by period and type.' },
  {
    name: 'Webhooks',
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

const ERROR_EXAMPLES: Record<string, unknown> = {
  '400': {
    success: false,
    error: {
      code: 'VALIDATION_ERROR',
      message: 'limit must be between 1 and 100',
      request_id: 'req_01KAB3P…',
      details: [{ field: 'limit', message: 'must be between 1 and 100' }],
    },
  },
  '401': {
    success: false,
    error: { code: 'UNAUTHORIZED', message: 'Invalid or missing API key.', request_id: 'req_01KAB3P…' },
  },
  '429': {
    success: false,
    error: {
      code: 'RATE_LIMIT_EXCEEDED',
      message: 'Rate limit exceeded. Retry after the number of seconds in retry_after.',
      request_id: 'req_01KAB3P…',
      retry_after: 12,
    },
  },
};

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
      const responses = isObject(op.responses) ? op.responses : {};
      for (const [status, response] of Object.entries(responses)) {
        const content = jsonContent(response);
        if (!content) continue;
        openUp(content.schema);
        if (/^2/.test(status) && meta.responseExample !== undefined) content.example = meta.responseExample;
        else if (ERROR_EXAMPLES[status]) content.example = ERROR_EXAMPLES[status];
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
