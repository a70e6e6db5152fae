import { z } from 'zod';
import { SIGNAL_TYPES, WEBHOOK_EVENTS } from './enums';
import { prefixedIdSchema } from './ids';
import { shortListQuerySchema } from './paging';
import { hasHiddenCharacters, shownAsSent } from './text';
import {
  DEFAULT_PAGE_SIZE,
  MAX_PAGE_SIZE,
  isoInstantParam,
  listMetaSchema,
  signalDetailSchema,
  wholeNumberParam,
} from './signals';

export const webhookIdSchema = prefixedIdSchema('wh');
export const deliveryIdSchema = prefixedIdSchema('dlv');

const eventsField = z
  .array(z.enum(WEBHOOK_EVENTS, { error: `each event must be one of ${WEBHOOK_EVENTS.join(', ')}` }))
  .min(1, 'events must name at least one event')
  .refine((a) => new Set(a).size === a.length, 'events must not repeat');
const typesField = z
  .array(z.enum(SIGNAL_TYPES, { error: `each type must be one of ${SIGNAL_TYPES.join(', ')}` }))
  .min(1, 'types, when given, must name at least one type')
  .refine((a) => new Set(a).size === a.length, 'types must not repeat');
/** ASCII that RFC 3986 allows nowhere in a URI: controls, space, and "<>\^`{|}. */
// eslint-disable-next-line no-control-regex -- the point is to find control characters
const URI_EXCLUDED = /[\u0000-\u0020"<>\\^`{|}\u007f]/;
/** The port as written after the host (`:99999`), whether or not the URL parser accepts it. */
const WRITTEN_PORT =
  /^[A-Za-z][A-Za-z0-9+.-]*:\/\/(?:[^/?#\\@]*@)?(?:\[[^\]]*\]|[^/?#\\:]*):(\d+)(?=[/?#\\]|$)/;
const urlField = z
  .string()
  .max(2048, 'url must be at most 2048 characters')
  // What RFC 3986 leaves out of a URI is sent percent-encoded (a space as %20) or dropped (a tab,
  // a line break): stored as given, the URL shown would not be the one POSTed to. Checked before
  // the URL check, which drops tabs and line breaks itself. Non-ASCII letters (an IRI) stay
  // accepted.
  .refine(
    (u) => !URI_EXCLUDED.test(u),
    'url must not contain spaces, control characters or any of "<>\\^`{|}: percent-encode them (a space is %20)',
  )
  // An IRI's letters are welcome; what reorders or hides them is not (the URL shown is not the
  // one POSTed to).
  .refine(
    (u) => !hasHiddenCharacters(u),
    'url must not contain control characters or text-direction marks (such as U+202E)',
  )
  // A port outside 1–65535 names no listening socket (every delivery would fail); past 65535 the
  // URL parser refuses the URL, which the next check would call "not an absolute URL".
  .refine(
    (u) => {
      const port = WRITTEN_PORT.exec(u)?.[1];
      return port === undefined || (Number(port) >= 1 && Number(port) <= 65535);
    },
    { error: 'url port must be between 1 and 65535', abort: true },
  )
  .url('url must be an absolute URL')
  .refine((u) => !u.includes('#'), 'url must not have a #fragment: a fragment is never sent')
  .refine(
    (u) => !/%(?![0-9A-Fa-f]{2})/.test(u),
    'url holds a malformed percent-escape (% and two hex digits)',
  );

export const createWebhookInputSchema = z
  .strictObject({
    url: urlField,
    events: eventsField,
    // null is accepted as well as omission: it is what the service stores and returns for
    // "every type", so a client echoing a subscription back must not be refused.
    types: typesField
      .nullable()
      .optional()
      .describe('Restrict to these signal types; omitted or null = every type'),
    description: shownAsSent(z.string().max(200), 'description')
      .nullable()
      .optional()
      .describe('A note for yourself; null = none'),
  })
  .meta({ id: 'CreateWebhookRequest' });
export type CreateWebhookInput = z.infer<typeof createWebhookInputSchema>;

export const updateWebhookInputSchema = z
  .strictObject({
    url: urlField.optional(),
    events: eventsField.optional(),
    types: typesField.nullable().optional(),
    // null clears it (the service returns null for "no description").
    description: shownAsSent(z.string().max(200), 'description').nullable().optional(),
    enabled: z
      .boolean()
      .optional()
      .describe(
        'true enables the subscription (status `enabled`: after a 410 disabled it, say), false disables it',
      ),
  })
  .refine((u) => Object.keys(u).length > 0, {
    message: 'nothing to update: give url, events, types, description or enabled (true or false)',
  })
  .meta({ id: 'UpdateWebhookRequest' });
export type UpdateWebhookInput = z.infer<typeof updateWebhookInputSchema>;

/** A subscription's delivery health, kept as attempts are recorded (no scan of its log). */
export const subscriptionHealthSchema = z
  .strictObject({
    last_delivery_status: z
      .enum(['succeeded', 'failed'])
      .nullable()
      .describe('Outcome of the latest attempt (a failed one may still be retried); null before the first'),
    last_delivery_at: z.iso.datetime({ offset: true }).nullable().describe('When the latest attempt started'),
    last_response_status: z
      .number()
      .int()
      .nullable()
      .describe('HTTP status of the latest attempt; null when no response came (timeout, refused, …)'),
    last_error: z
      .string()
      .nullable()
      .describe('Error of the latest attempt (timeout, http_500, …); null when it succeeded'),
    failing_since: z.iso
      .datetime({ offset: true })
      .nullable()
      .describe('First failed attempt since the last success; null while the latest attempt succeeded'),
    failures_24h: z
      .number()
      .int()
      .nonnegative()
      .describe(
        'Failed attempts in the last 24 hours (counted by the hour: up to an hour more may be included)',
      ),
  })
  .meta({ id: 'WebhookHealth' });
export type SubscriptionHealth = z.infer<typeof subscriptionHealthSchema>;

export const webhookSubscriptionSchema = z
  .strictObject({
    id: z.string(),
    url: z.string(),
    events: z.array(z.enum(WEBHOOK_EVENTS)),
    types: z.array(z.enum(SIGNAL_TYPES)).nullable().describe('null = every type'),
    description: z.string().nullable(),
    status: z.enum(['enabled', 'disabled']),
    disabled_reason: z.string().nullable(),
    created_at: z.iso.datetime({ offset: true }),
    updated_at: z.iso.datetime({ offset: true }),
    health: subscriptionHealthSchema,
  })
  .meta({ id: 'WebhookSubscription' });
export type WebhookSubscription = z.infer<typeof webhookSubscriptionSchema>;

export const webhookWithSecretSchema = webhookSubscriptionSchema
  .extend({ secret: z.string().describe('Signing secret `whsec_…`; shown only here') })
  .meta({ id: 'WebhookSubscriptionWithSecret' });

/**
 * A signal event's data: the signal as it is now; `performance` on every event but signal.new.
 * A sample of the event sent by `POST /v1/webhooks/{webhook_id}/test` carries `test: true`, the
 * subscription and a message too: declared here, so a typed receiver tells a sample from a real
 * signal by `data.test` (a trading bot that acted on a sample "winner" would trade on it).
 */
export const webhookDataSchema = z.object({
  id: z.string(),
  token: signalDetailSchema.shape.token,
  metrics: signalDetailSchema.shape.metrics,
  type: signalDetailSchema.shape.type,
  is_premium: z.boolean(),
  performance: signalDetailSchema.shape.performance.optional(),
  test: z
    .literal(true)
    .optional()
    .describe('Present (true) only on a sample sent with POST /v1/webhooks/{webhook_id}/test: act on none'),
  subscription_id: z.string().optional().describe('On a sample only: the subscription it was sent for'),
  message: z.string().optional().describe('On a sample only'),
});
const signalChangeDataSchema = webhookDataSchema.extend({
  performance: signalDetailSchema.shape.performance,
});

/**
 * The test event's data: a sample signal in the shape every event carries (so a receiver that
 * checks the real events' payload shape accepts it), marked `test: true`, with the subscription
 * it was sent for.
 */
export const webhookTestDataSchema = webhookDataSchema.extend({
  test: z.literal(true),
  subscription_id: z.string(),
  message: z.string(),
});
export type WebhookTestData = z.infer<typeof webhookTestDataSchema>;

const timestampField = z.iso.datetime({ offset: true });

/**
 * Body POSTed to subscribers, one shape per event (`event` tells them apart): signal.new carries
 * the signal as it entered, the status changes carry its `performance` too, webhook.test a sample.
 */
export const webhookPayloadSchema = z
  .discriminatedUnion('event', [
    z.object({ event: z.literal('signal.new'), timestamp: timestampField, data: webhookDataSchema }),
    z.object({
      event: z.enum(['signal.winner', 'signal.dead', 'signal.rugged']),
      timestamp: timestampField,
      data: signalChangeDataSchema,
    }),
    z.object({ event: z.literal('webhook.test'), timestamp: timestampField, data: webhookTestDataSchema }),
  ])
  .meta({ id: 'WebhookPayload' });
export type WebhookPayload = z.infer<typeof webhookPayloadSchema>;

export const DELIVERY_STATUSES = ['pending', 'succeeded', 'failed'] as const;

/** The event of the deliveries POST /v1/webhooks/:id/test makes; no subscription asks for it. */
export const WEBHOOK_TEST_EVENT = 'webhook.test';
/** A delivery's `last_error` when it was not attempted: its subscription was disabled when it was due. */
export const NOT_SENT_WHILE_DISABLED = 'subscription_disabled';
/** Every event a delivery can carry: the subscribable ones and the test event. */
export const DELIVERY_EVENTS = [...WEBHOOK_EVENTS, WEBHOOK_TEST_EVENT] as const;
export type DeliveryEventName = (typeof DELIVERY_EVENTS)[number];

export const webhookListQuerySchema = shortListQuerySchema;

const headerMap = z.record(z.string(), z.string());

export const deliveryAttemptRequestSchema = z
  .strictObject({
    url: z.string().describe('Where the attempt was sent (the subscription URL at that time)'),
    headers: headerMap.describe(
      'Every header sent: content-type, user-agent, webhook-id, webhook-timestamp, webhook-signature (a MAC of this body; the signing secret is never shown)',
    ),
    body: z.string().describe('The exact body sent, byte for byte what the signature covers'),
  })
  .meta({ id: 'WebhookAttemptRequest' });

export const deliveryAttemptResponseSchema = z
  .strictObject({
    status: z.number().int(),
    headers: headerMap.describe(
      "The receiver's response headers (at most 50, each name cut at 256 characters and each value at 1,024; a header sent more than once as its values joined by `, `; control characters shown as \\xNN)",
    ),
    headers_truncated: z
      .boolean()
      .describe(
        'Headers went past what is kept: more than 50, or a name or value cut (false for attempts recorded before this was kept)',
      ),
    body: z
      .string()
      .describe('The first 4 KB of the response body: as text, or base64 of the bytes (see body_encoding)'),
    body_encoding: z
      .enum(['text', 'base64'])
      .describe(
        'text: the bytes were valid UTF-8 without NUL; base64: anything else (decode to see the bytes)',
      ),
    body_truncated: z
      .boolean()
      .describe(
        "The body went on past the 4 KB kept, or did not end (still arriving at the timeout, or cut by the receiver: the attempt's error says which)",
      ),
  })
  .meta({ id: 'WebhookAttemptResponse' });

export const deliveryAttemptSchema = z.strictObject({
  attempt: z.number().int().min(1),
  started_at: z.iso.datetime({ offset: true }),
  duration_ms: z.number(),
  status_code: z.number().int().nullable(),
  error: z
    .string()
    .nullable()
    .describe('timeout, connection_refused, redirect_not_followed, blocked_address, http_<status>, …'),
  request: deliveryAttemptRequestSchema
    .nullable()
    .describe(
      'What was sent; null when nothing was (a refused address) or for attempts before this was kept',
    ),
  response: deliveryAttemptResponseSchema
    .nullable()
    .describe(
      'What came back; of a response whose body did not end, its status, headers and what arrived of the body (the attempt fails with `timeout` or `connection_reset`). null when no response came (no answer by the timeout, connection refused, …)',
    ),
});

/** A delivery as lists, test events and re-sends return it: its state, without the attempt log. */
export const deliverySchema = z
  .strictObject({
    id: z.string(),
    webhook_id: z.string(),
    event_id: z.string(),
    event: z.enum(DELIVERY_EVENTS),
    status: z.enum(DELIVERY_STATUSES),
    attempts_made: z.number().int().nonnegative(),
    next_attempt_at: z.iso.datetime({ offset: true }).nullable(),
    last_response_status: z
      .number()
      .int()
      .nullable()
      .describe('HTTP status of the latest attempt; null before the first, or when no response came'),
    last_error: z
      .string()
      .nullable()
      .describe(
        `Error of the latest attempt, or ${NOT_SENT_WHILE_DISABLED} when it was not made because the subscription was disabled (the delivery is kept failed, for recover); null when it succeeded or none was made`,
      ),
    created_at: z.iso.datetime({ offset: true }),
    updated_at: z.iso.datetime({ offset: true }),
  })
  .meta({ id: 'WebhookDelivery' });

/** One delivery read alone: its state and every attempt so far (empty before the first). */
export const deliveryDetailSchema = deliverySchema
  .extend({ attempts: z.array(deliveryAttemptSchema) })
  .meta({ id: 'WebhookDeliveryDetail' });
export type DeliveryAttempt = z.infer<typeof deliveryAttemptSchema>;
export type DeliveryAttemptResponse = z.infer<typeof deliveryAttemptResponseSchema>;
/**
 * What the service builds from its store: the detail carries `attempts`, the other responses leave
 * it out; `event` is the stored name (one of DELIVERY_EVENTS, as the e2e contract test checks).
 */
export type Delivery = Omit<z.infer<typeof deliverySchema>, 'event'> & {
  event: string;
  attempts?: DeliveryAttempt[];
};

export const deliveryListQuerySchema = z
  .strictObject({
    status: z
      .enum(DELIVERY_STATUSES, { error: `status must be one of ${DELIVERY_STATUSES.join(', ')}` })
      .optional()
      .describe('Only deliveries in this state'),
    // Checked like status: an unknown event name would match nothing and read as an empty log.
    event: z
      .enum(DELIVERY_EVENTS, { error: `event must be one of ${DELIVERY_EVENTS.join(', ')}` })
      .optional()
      .describe('Only deliveries of this event'),
    limit: wholeNumberParam('limit', 1, MAX_PAGE_SIZE)
      .optional()
      .describe(`Results per page; default ${DEFAULT_PAGE_SIZE}, max ${MAX_PAGE_SIZE}`),
    page: wholeNumberParam('page', 1, 1_000_000).optional().describe('Page number, from 1 (default 1)'),
    cursor: z
      .string()
      .regex(
        /^[A-Za-z0-9_-]{1,200}$/,
        'cursor must be a value returned in meta.next_cursor or meta.prev_cursor',
      )
      .optional()
      .describe(
        'Keyset cursor from meta.next_cursor (the page after the previous page’s last delivery) or meta.prev_cursor (the page before its first), which deliveries made since do not shift; excludes page',
      ),
  })
  .refine((q) => !(q.cursor !== undefined && q.page !== undefined), {
    message: 'page and cursor cannot be used together',
    path: ['cursor'],
  });

export const deliveryListMetaSchema = listMetaSchema
  .extend({
    prev_cursor: z
      .string()
      .nullable()
      .describe(
        'Opaque cursor for the page before this one, newer deliveries (pass as `cursor`); null on the first page. A walk back past deliveries made since it began stays on page 1',
      ),
  })
  .meta({ id: 'DeliveryListMeta' });
export type DeliveryListMeta = z.infer<typeof deliveryListMetaSchema>;

/** Body of POST /v1/webhooks/:id/test (optional): which event's shape the test takes. */
export const webhookTestInputSchema = z
  .strictObject({
    event: z
      .enum(DELIVERY_EVENTS, { error: `event must be one of ${DELIVERY_EVENTS.join(', ')}` })
      .optional()
      .describe(
        "The event to send a sample of, in that event's payload shape and marked `test: true`; omitted = webhook.test",
      ),
  })
  .meta({ id: 'WebhookTestRequest' });
export type WebhookTestInput = z.infer<typeof webhookTestInputSchema>;

/** Deliveries one recover call covers at most (a page; `next_cursor` continues). */
export const RECOVER_PAGE_SIZE = 100;

/** Body of POST /v1/webhooks/:id/recover. */
export const recoverWebhookInputSchema = z
  .strictObject({
    since: isoInstantParam('since').describe(
      'Attempt now every failed or pending delivery created at or after this instant: an ISO 8601 timestamp with its zone (2026-01-31T12:00:00Z, +02:00 or +0200 offsets) or a date (2026-01-31: midnight UTC), as `since` of the lists',
    ),
    // null is accepted as well as omission: it is the last page's `next_cursor`, so a client
    // passing back the `next_cursor` it got must not be refused.
    cursor: prefixedIdSchema('dlv', 'cursor must be the next_cursor a previous recover call returned')
      .nullable()
      .optional()
      .describe(
        '`next_cursor` of the previous call: continue after the deliveries it covered; omitted or null = the first page',
      ),
    limit: wholeNumberParam('limit', 1, RECOVER_PAGE_SIZE)
      .optional()
      .describe(`Deliveries covered by this call; default and max ${RECOVER_PAGE_SIZE}`),
  })
  .meta({ id: 'RecoverWebhookRequest' });
export type RecoverWebhookInput = z.infer<typeof recoverWebhookInputSchema>;

export const recoverWebhookResultSchema = z
  .strictObject({
    since: z.iso.datetime({ offset: true }),
    queued: z
      .number()
      .int()
      .describe(
        'Deliveries queued for an attempt now by this call (0 when a repeat finds them queued already)',
      ),
    next_cursor: z
      .string()
      .nullable()
      .describe('Pass as `cursor` to cover the next page; null when this call covered the last'),
  })
  .meta({ id: 'RecoverWebhookResult' });
export type RecoverWebhookResult = z.infer<typeof recoverWebhookResultSchema>;
