import { DEFAULT_ERROR_MESSAGES, type ErrorCode } from './errors';
import type { OperationId } from './routes';
import { MAX_PAGE_SIZE } from './signals';
import { STREAM_RETRY_MS } from './stream';
import { DELIVERY_EVENTS } from './webhooks';

/**
 * The document's examples: a request and a success response per operation, and its error
 * responses worded as the system words them (the e2e contract test compares real refusals with
 * these, all but the request id).
 */

type Json = Record<string, unknown>;

export interface OperationExamples {
  request?: unknown;
  response: unknown;
  /** The 400 this operation gives (every operation has one). */
  invalid: Json;
  /** This operation's own refusals (404, 409, a 401 or 429 of its own), by status. */
  errors?: Record<string, Json>;
}

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
/** The start of a stream: the retry hint, one event with the webhook payload, a heartbeat. */
const streamText = [
  `retry: ${STREAM_RETRY_MS}`,
  '',
  'id: 1768469400000-0',
  'event: signal.new',
  `data: ${JSON.stringify({
    event: 'signal.new',
    timestamp: at,
    data: {
      id: signalDetail.id,
      token: signalDetail.token,
      metrics: signalDetail.metrics,
      type: signalDetail.type,
      is_premium: signalDetail.is_premium,
    },
  })}`,
  '',
  ': keep-alive',
  '',
  '',
].join('\n');
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
  health: {
    last_delivery_status: 'succeeded',
    last_delivery_at: at,
    last_response_status: 200,
    last_error: null,
    failing_since: null,
    failures_24h: 0,
  },
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
  last_response_status: 200,
  last_error: null,
  created_at: at,
  updated_at: at,
};
const deliveryDetail = {
  ...delivery,
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
      response: {
        status: 200,
        headers: { 'content-type': 'text/plain' },
        headers_truncated: false,
        body: 'ok',
        body_encoding: 'text',
        body_truncated: false,
      },
    },
  ],
};
const apiKey = {
  id: 'key_01KAB3N4P5Q6R7S8T9V0W1X2Y3',
  name: 'production',
  prefix: 'sk_live_4eC39H',
  created_at: at,
  expires_at: null,
  last_used_at: at,
  revoked_at: null,
  status: 'active',
  replaced_by: null,
};
const session = { token: 'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9…', expires_at: at };
const ok = (data: unknown, extra: Json = {}) => ({ success: true, data, ...extra });
const pageOf = (data: unknown, perPage: number) =>
  ok([data], { meta: { total: 1, page: 1, per_page: perPage, total_pages: 1 } });

const requestId = 'req_01KAB3P…';
export const failure = (
  code: ErrorCode,
  message: string = DEFAULT_ERROR_MESSAGES[code],
  extra: Json = {},
) => ({
  success: false,
  error: { code, message, request_id: requestId, ...extra },
});
/** A VALIDATION_ERROR naming one field; `detail` where the system words the detail apart. */
const invalid = (field: string, message: string, detail = message) =>
  failure('VALIDATION_ERROR', message, { details: [{ field, message: detail }] });
/** Every path parameter is percent-decoded first: `%ZZ` is refused before the id is looked at. */
const malformedPath = invalid(
  'path',
  'The path holds a percent-escape that does not decode: % and two hex digits, of UTF-8 bytes.',
  'a percent-escape that does not decode',
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

export const ROUTE_EXAMPLES: Record<OperationId, OperationExamples> = {
  listSignals: {
    response: ok([signalItem], {
      meta: { total: 1, page: 1, per_page: 20, total_pages: 1, next_cursor: null },
    }),
    invalid: limitOutOfRange,
  },
  streamSignals: {
    response: streamText,
    invalid: invalid(
      'events',
      'events: "signal.moon" is not one of signal.new, signal.winner, signal.dead, signal.rugged',
    ),
    errors: {
      '429': failure(
        'RATE_LIMIT_EXCEEDED',
        'This account has 5 live streams open, the most its plan allows (5); close one first.',
        { retry_after: 5 },
      ),
    },
  },
  getSignal: {
    response: ok(signalDetail),
    invalid: malformedPath,
    errors: { '404': failure('NOT_FOUND', `Signal ${signalItem.id} was not found.`) },
  },
  getStats: {
    response: ok({
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
  createWebhook: {
    request: { url: webhook.url, events: webhook.events, types: webhook.types },
    response: ok({ ...webhook, secret }),
    invalid: invalid('events', 'events must name at least one event'),
    errors: idempotencyConflict,
  },
  listWebhooks: { response: pageOf(webhook, 100), invalid: limitOutOfRange },
  getWebhook: { response: ok(webhook), invalid: malformedPath, errors: webhookMissing },
  updateWebhook: {
    request: { enabled: false },
    response: ok({ ...webhook, status: 'disabled', disabled_reason: 'Disabled by the account.' }),
    invalid: invalid('enabled', 'enabled must be true or false'),
    errors: webhookMissing,
  },
  deleteWebhook: { response: ok(webhook), invalid: malformedPath, errors: webhookMissing },
  rotateWebhookSecret: {
    response: ok({ ...webhook, secret }),
    invalid: malformedPath,
    errors: {
      ...webhookMissing,
      '409': failure('CONFLICT', 'The subscription kept changing while its secret was rotated; retry.'),
    },
  },
  sendWebhookTest: {
    request: { event: 'signal.winner' },
    // As queued: no attempt yet, the first one due now.
    response: ok({
      ...delivery,
      event: 'signal.winner',
      status: 'pending',
      attempts_made: 0,
      next_attempt_at: at,
      last_response_status: null,
    }),
    invalid: invalid('event', `event must be one of ${DELIVERY_EVENTS.join(', ')}`),
    errors: {
      ...webhookMissing,
      '409': failure(
        'CONFLICT',
        'This webhook is disabled. Disabled by the account. Enable it before sending a test event.',
      ),
    },
  },
  recoverWebhook: {
    request: { since: at },
    response: ok({ since: at, queued: 3, next_cursor: null }),
    invalid: invalid(
      'since',
      'since must be an ISO 8601 date or timestamp with its zone, e.g. 2026-01-31T12:00:00Z or 2026-01-31',
    ),
    errors: {
      ...webhookMissing,
      '409': failure('CONFLICT', 'Enable the webhook before recovering its failed deliveries.'),
      '429': failure(
        'RATE_LIMIT_EXCEEDED',
        'Recover may be called 10 times a minute per account. Retry after 42 s.',
        {
          retry_after: 42,
        },
      ),
    },
  },
  listWebhookDeliveries: {
    response: ok([delivery], {
      meta: { total: 1, page: 1, per_page: 20, total_pages: 1, next_cursor: null, prev_cursor: null },
    }),
    invalid: invalid('status', 'status must be one of pending, succeeded, failed'),
    errors: webhookMissing,
  },
  getWebhookDelivery: { response: ok(deliveryDetail), invalid: malformedPath, errors: deliveryMissing },
  retryWebhookDelivery: {
    response: ok({ ...delivery, status: 'pending', next_attempt_at: at }),
    invalid: malformedPath,
    errors: {
      ...deliveryMissing,
      '409': failure('CONFLICT', 'This delivery succeeded already.'),
    },
  },
  login: {
    request: { email: 'dev@example.com', password: 'correct horse battery staple' },
    response: ok(session),
    invalid: invalid('password', 'password is required'),
    errors: { '401': failure('UNAUTHORIZED', 'Invalid email or password.'), ...tooManyLogins },
  },
  logout: {
    response: ok({ logged_out: true }),
    // Its body is read as JSON like any POST's, though it needs none.
    invalid: invalid('body', 'The request body is not valid JSON.', 'invalid JSON'),
  },
  changePassword: {
    request: { current_password: 'correct horse battery staple', new_password: 'a new long passphrase' },
    response: ok(session),
    invalid: invalid('new_password', 'new_password must have at least 12 characters'),
    errors: tooManyLogins,
  },
  listApiKeys: { response: pageOf(apiKey, 100), invalid: limitOutOfRange },
  createApiKey: {
    request: { name: 'production', expires_at: '2027-01-01T00:00:00Z' },
    response: ok({ ...apiKey, key: 'sk_live_…shown once…' }),
    invalid: invalid('expires_at', 'expires_at must be in the future', 'must be in the future'),
    errors: idempotencyConflict,
  },
  rollApiKey: {
    request: { overlap_seconds: 3600 },
    response: ok({
      created: {
        ...apiKey,
        id: 'key_01KAB3N4P5Q6R7S8T9V0W1X2Z9',
        prefix: 'sk_live_9xQ2mL',
        last_used_at: null,
        key: 'sk_live_…shown once…',
      },
      previous: {
        ...apiKey,
        expires_at: '2026-01-15T10:30:00.000Z',
        replaced_by: 'key_01KAB3N4P5Q6R7S8T9V0W1X2Z9',
      },
    }),
    invalid: invalid(
      'overlap_seconds',
      'overlap_seconds must be 0 or at least 60',
      'overlap_seconds must be 0 or at least 60',
    ),
    errors: {
      '404': failure('NOT_FOUND', `API key ${apiKey.id} was not found.`),
      '409': failure(
        'CONFLICT',
        'This key is already being rolled out; roll the key that replaces it instead.',
      ),
    },
  },
  renameApiKey: {
    request: { name: 'production (EU)' },
    response: ok({ ...apiKey, name: 'production (EU)' }),
    invalid: invalid('name', 'name is required', 'name is required'),
    errors: { '404': failure('NOT_FOUND', `API key ${apiKey.id} was not found.`) },
  },
  revokeApiKey: {
    response: ok({ ...apiKey, revoked_at: at, status: 'revoked' }),
    invalid: malformedPath,
    errors: { '404': failure('NOT_FOUND', `API key ${apiKey.id} was not found.`) },
  },
};
