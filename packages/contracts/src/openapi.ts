import { z } from 'zod';
import { DEFAULT_ERROR_MESSAGES, ERROR_STATUS, defaultErrorMessage, type ErrorCode } from './errors';
import { ROUTE_EXAMPLES, failure } from './route-examples';
import {
  ROUTES,
  ROUTE_LIST,
  routeName,
  type Caller,
  type HttpMethod,
  type OperationId,
  type RouteDef,
} from './routes';

/**
 * The OpenAPI 3.1 document, built from the route table (routes.ts) and the zod schemas it names:
 * components by zod 4's own JSON Schema output (every schema a route names carries `.meta({ id })`),
 * parameters and responses from each route. Nothing of it is written by hand but the prose.
 */

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * The components of the routes' request bodies keep `additionalProperties: false`: an unknown
 * field there is a client bug worth a 400.
 */
const requestComponents = (): Set<string> =>
  new Set(
    ROUTE_LIST.flatMap((r) => {
      const id = r.body && z.globalRegistry.get(r.body)?.id;
      return id ? [id] : [];
    }),
  );

/** Removes `additionalProperties: false` everywhere below `node`: clients must accept fields added later. */
function openUp(node: unknown): void {
  if (Array.isArray(node)) return node.forEach(openUp);
  if (!isObject(node)) return;
  if (node.additionalProperties === false) delete node.additionalProperties;
  for (const v of Object.values(node)) openUp(v);
}

function componentSchemas(): Record<string, Json> {
  const out = z.toJSONSchema(z.globalRegistry, {
    target: 'draft-2020-12',
    io: 'output',
    unrepresentable: 'any',
    uri: (id) => `#/components/schemas/${id}`,
  });
  const schemas: Record<string, Json> = {};
  const requests = requestComponents();
  for (const [name, s] of Object.entries(out.schemas)) {
    const { $schema: _schema, $id: _id, ...rest } = s;
    // zod marks each with `$id: '#/components/schemas/X'`; a 2020-12 `$id` may not carry a
    // fragment (Ajv 2020 refuses the document), and `$ref`s reach components by pointer anyway.
    if (!requests.has(name)) openUp(rest);
    schemas[name] = rest;
  }
  return schemas;
}

/** The component id a route's schema is registered under; a schema without one is a bug here. */
function refTo(schema: z.ZodType): Json {
  const id = z.globalRegistry.get(schema)?.id;
  if (!id) throw new Error('OpenAPI: a route names a schema without .meta({ id })');
  return { $ref: `#/components/schemas/${id}` };
}

/**
 * Query parameters as the server reads them (`io: 'output'`): integers are integers, with their
 * bounds. A parameter the server turns into something else as it reads it (a comma list into an
 * array) has no output form a query can carry: it is documented as the text it is sent as.
 */
function queryParameters(schema: z.ZodType): Json[] {
  const json = z.toJSONSchema(schema, { io: 'output', unrepresentable: 'any' });
  const input = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' });
  const properties = isObject(json.properties) ? json.properties : {};
  const inputProperties = isObject(input.properties) ? input.properties : {};
  const required = Array.isArray(json.required) ? json.required : [];
  return Object.entries(properties).map(([name, s]) => {
    const { description, ...output } = isObject(s) ? s : {};
    const sent = inputProperties[name];
    const { description: _d, ...asSent } = isObject(sent) ? sent : {};
    const rest = Object.keys(output).length === 0 ? asSent : output;
    const isRequired = required.includes(name);
    const unsent = isRequired ? undefined : unsentExample(rest);
    return {
      name,
      in: 'query',
      required: isRequired,
      description,
      schema: rest,
      ...(unsent === undefined ? {} : { examples: { unset: unsent } }),
    };
  });
}

/**
 * A valid value for an optional enum or integer parameter, switched off: try-it clients (Scalar)
 * otherwise turn such a parameter on with the enum's first value, or show an empty integer as
 * below its minimum — a request that starts filtered or flagged instead of clean.
 */
function unsentExample(schema: Json): Json | undefined {
  const value = Array.isArray(schema.enum)
    ? schema.enum[0]
    : schema.type === 'integer'
      ? (schema.default ?? schema.minimum)
      : undefined;
  return value === undefined ? undefined : { summary: 'not sent', value, 'x-disabled': true };
}

const header = (description: string, schema: Json) => ({ description, required: true, schema });
/** Sent on every response of the API (the gateway's rate limit and request id). */
const COMMON_HEADERS = {
  'X-RateLimit-Limit': header('Requests allowed in the window closest to exhaustion', { type: 'integer' }),
  'X-RateLimit-Remaining': header('Requests left in that window', { type: 'integer', minimum: 0 }),
  'X-RateLimit-Reset': header('Unix time (seconds) when that window resets', { type: 'integer' }),
  'X-Request-Id': header('Request id, also in error.request_id', { type: 'string' }),
};
const RETRY_AFTER = header('Seconds to wait before trying again (the same as error.retry_after)', {
  type: 'integer',
  minimum: 0,
});
/** The same headers where only some responses carry them. */
const OPTIONAL_HEADER_DESCRIPTIONS = {
  'Idempotent-Replayed': "`true`: this response repeats the first request's (absent on the first answer)",
};
const EXTRA_HEADERS = {
  'Idempotent-Replayed': header("`true`: this response repeats the first request's", {
    type: 'string',
    const: 'true',
  }),
};

/** Methods whose body is read (and refused when it is not JSON), whether the route takes one. */
const readsBody = (method: string): boolean => method === 'post' || method === 'patch' || method === 'delete';

/**
 * The error codes an operation can return. Besides its own: any request can be refused (401,
 * 429), fail (500, 503) or carry headers too large (413, from Node or, on the API-key path, the
 * gateway's forward limit); the API-key path also returns KEY_EXPIRED and a service's 504, the
 * session routes 403 to an API key; a path parameter with a malformed percent-escape is a 400;
 * every POST/PATCH/DELETE body is read as JSON whether the operation needs one or not (broken
 * JSON 400, another media type 415, over the size limit 413), and the API-key path refuses a body
 * that is not JSON on any method but GET before a service sees it.
 */
function errorCodes(route: RouteDef): ErrorCode[] {
  const codes: ErrorCode[] = [
    'UNAUTHORIZED',
    'RATE_LIMIT_EXCEEDED',
    'PAYLOAD_TOO_LARGE',
    'INTERNAL_ERROR',
    'SERVICE_UNAVAILABLE',
  ];
  const { caller, method } = route;
  if (caller === 'apiKey') codes.push('KEY_EXPIRED', 'GATEWAY_TIMEOUT');
  if (caller === 'session') codes.push('FORBIDDEN');
  if ((route.pathParams ?? []).length > 0) codes.push('VALIDATION_ERROR');
  if (readsBody(method)) codes.push('VALIDATION_ERROR', 'UNSUPPORTED_MEDIA_TYPE');
  if (caller === 'apiKey' && method !== 'get') codes.push('UNSUPPORTED_MEDIA_TYPE');
  return [...new Set([...codes, ...(route.errors ?? [])])];
}

/**
 * Examples of the refusals every operation of a kind can get, worded as the system words them:
 * the API-key path refuses bodies on their headers (gateway api-path.ts, upstream.ts), the session
 * routes read them (service-kit jsonBodyMiddleware), Node refuses oversized headers. An
 * operation's own examples win over these.
 */
function commonErrorExamples(route: RouteDef): Record<string, Json> {
  const service = route.path.split('/')[2] ?? 'upstream';
  const apiKey = route.caller === 'apiKey';
  const { method } = route;
  const tooLarge =
    apiKey && method !== 'get'
      ? 'The request body is larger than any route takes (64 KiB).'
      : apiKey
        ? 'The request target and headers are too large to pass on.'
        : readsBody(method)
          ? DEFAULT_ERROR_MESSAGES.PAYLOAD_TOO_LARGE
          : 'The request headers are too large.';
  return {
    '401': apiKey
      ? failure('UNAUTHORIZED')
      : failure('UNAUTHORIZED', `A dashboard session is required: ${routeName(ROUTES.login)}.`),
    '403': failure(
      'FORBIDDEN',
      'API keys cannot manage the account (keys, password, sessions); use a dashboard session.',
    ),
    '413': failure('PAYLOAD_TOO_LARGE', tooLarge),
    '415': failure('UNSUPPORTED_MEDIA_TYPE'),
    '429': failure('RATE_LIMIT_EXCEEDED', defaultErrorMessage('RATE_LIMIT_EXCEEDED', 12), {
      retry_after: 12,
    }),
    '500': failure('INTERNAL_ERROR'),
    '503': failure('SERVICE_UNAVAILABLE', undefined, { retry_after: 1 }),
    '504': failure('GATEWAY_TIMEOUT', `The ${service} service did not respond in time.`),
  };
}

/**
 * One response per status; its schema narrows `error.code` to the codes that status carries
 * here, so a client (and the tests) can tell which refusals an operation really gives.
 */
function errorResponses(route: RouteDef, examples: Record<string, Json>): Record<string, Json> {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of errorCodes(route)) {
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
          headers:
            status === 429 || status === 503
              ? { ...COMMON_HEADERS, 'Retry-After': RETRY_AFTER }
              : COMMON_HEADERS,
          content: {
            'application/json': {
              schema: {
                allOf: [
                  { $ref: '#/components/schemas/ErrorEnvelope' },
                  { properties: { error: { properties: { code: { enum: list } } } } },
                ],
              },
              example: examples[String(status)],
            },
          },
        },
      ]),
  );
}

const SECURITY: Record<Caller, Json[]> = {
  apiKey: [{ apiKey: [] }],
  session: [{ dashboardSession: [] }],
  anyone: [],
};

function operation(route: RouteDef): Json {
  const examples = ROUTE_EXAMPLES[route.operationId as OperationId];
  const parameters: Json[] = [
    ...(route.pathParams ?? []).map((p) => ({
      name: p.name,
      in: 'path',
      required: true,
      description: p.description,
      schema: { type: 'string' },
    })),
    ...(route.query ? queryParameters(route.query) : []),
    ...(route.headerParams ?? []).map((h) => ({
      name: h.name,
      in: 'header',
      required: false,
      description: h.description,
      schema: { type: 'string' },
    })),
    ...(route.idempotencyKey
      ? [
          {
            name: 'Idempotency-Key',
            in: 'header',
            required: false,
            description:
              '1–255 visible ASCII characters, unique per intended request (sent again unchanged on its retries)',
            schema: { type: 'string', minLength: 1, maxLength: 255, pattern: '^[\\x21-\\x7e]+$' },
          },
        ]
      : []),
  ];
  const successes = Object.fromEntries(
    Object.entries(route.responses).map(([status, r]) => [
      status,
      {
        description: r.description,
        headers: {
          ...COMMON_HEADERS,
          ...Object.fromEntries((r.headers ?? []).map((h) => [h, EXTRA_HEADERS[h]])),
          ...Object.fromEntries(
            (r.optionalHeaders ?? []).map((h) => [
              h,
              { ...EXTRA_HEADERS[h], description: OPTIONAL_HEADER_DESCRIPTIONS[h], required: false },
            ]),
          ),
        },
        content:
          r.mediaType === 'text/event-stream'
            ? { 'text/event-stream': { schema: { type: 'string' }, example: examples.response } }
            : { 'application/json': { schema: refTo(r.schema), example: examples.response } },
      },
    ]),
  );
  const errorExamples = { ...commonErrorExamples(route), '400': examples.invalid, ...examples.errors };
  return {
    operationId: route.operationId,
    tags: [route.tag],
    summary: route.summary,
    ...(route.description ? { description: route.description } : {}),
    security: route.sessionToo ? [...SECURITY[route.caller], ...SECURITY.session] : SECURITY[route.caller],
    ...(parameters.length ? { parameters } : {}),
    ...(route.body
      ? {
          requestBody: {
            required: !route.bodyOptional,
            content: {
              'application/json': {
                schema: refTo(route.body),
                ...(examples.request !== undefined ? { example: examples.request } : {}),
              },
            },
          },
        }
      : {}),
    responses: { ...successes, ...errorResponses(route, errorExamples) },
  };
}

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

export interface DocumentOptions {
  serverUrl: string;
  /** The plan new accounts get, as configured. */
  plan: { per_minute: number; per_day: number };
  /** The receiving-webhooks guide (Markdown), appended to the introduction. */
  guideMarkdown?: string;
}

export function buildOpenApiDocument({ serverUrl, plan, guideMarkdown }: DocumentOptions): Json {
  const paths: Record<string, Record<string, Json>> = {};
  for (const route of ROUTE_LIST) {
    const item = (paths[route.path] ??= {});
    item[route.method satisfies HttpMethod] = operation(route);
  }
  const limits =
    `Limits: ${plan.per_minute.toLocaleString('en-US')} requests/minute and ` +
    `${plan.per_day.toLocaleString('en-US')}/day on the listed plan, per account; the X-RateLimit-* ` +
    'headers describe the window closest to exhaustion, and a 429 or 503 says in Retry-After how long to wait.';
  return {
    openapi: '3.1.0',
    info: {
      title: 'Signal Service API',
      version: '1.0.0',
      description:
        'Token signals, aggregated statistics and webhooks. Every request needs `Authorization: Bearer <API_KEY>`. ' +
        `${limits}\n\nGet a key in the [dashboard](/dashboard) under API settings. ` +
        'A method a path does not take is a 405 METHOD_NOT_ALLOWED whose `Allow` header names the ones it does. ' +
        'Responses may gain fields over time: ignore the ones you do not know. ' +
        // The SDK's name is not on the public npm registry: said, so nobody installs another's.
        'SDKs, built from the repository (not published to a registry): TypeScript `@signal/sdk` (`bash scripts/sdk.sh` prints its tarball: `npm install <tarball>`) and Python `signal_sdk` (`python -m pip install --no-build-isolation ./packages/sdk-python`); the repository README shows both. ' +
        'Guide: [Receiving webhooks](/docs/receiving-webhooks).' +
        (guideMarkdown ? `\n\n${guideMarkdown.replace(/^# /m, '## ')}` : ''),
    },
    servers: [{ url: serverUrl }],
    security: SECURITY.apiKey,
    tags: TAGS,
    paths,
    webhooks: {
      signalEvent: {
        post: {
          summary:
            'signal.new, signal.winner, signal.dead, signal.rugged, webhook.test — signed per Standard Webhooks',
          parameters: ['webhook-id', 'webhook-timestamp', 'webhook-signature'].map((name) => ({
            name,
            in: 'header',
            required: true,
            schema: { type: 'string' },
          })),
          requestBody: {
            required: true,
            content: { 'application/json': { schema: { $ref: '#/components/schemas/WebhookPayload' } } },
          },
          responses: { '200': { description: 'Any 2xx within 5 seconds acknowledges the delivery' } },
        },
      },
    },
    components: {
      schemas: componentSchemas(),
      securitySchemes: {
        apiKey: { type: 'http', scheme: 'bearer', description: 'API key `sk_live_…`' },
        dashboardSession: {
          type: 'http',
          scheme: 'bearer',
          bearerFormat: 'JWT',
          description: `From ${routeName(ROUTES.login)}`,
        },
      },
    },
  };
}
