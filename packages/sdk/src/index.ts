/**
 * @signal/sdk — the typed client of the Signal Service API.
 *
 * Every public operation of /openapi.json has a method here (a test checks the operationIds);
 * lists paginate as async iterators; 429/503 are retried honouring Retry-After up to a cap;
 * every POST carries an Idempotency-Key (the same on each retry), and the creates the server
 * deduplicates on it are retried after a lost answer or a 5xx too; every attempt has a timeout;
 * errors are typed by the API's error code; `verifyWebhook` checks Standard Webhooks signatures.
 * No runtime dependencies: Node ≥ 20 (global fetch, node:crypto).
 */
import { createHmac, randomUUID, timingSafeEqual } from 'node:crypto';

// ---------------------------------------------------------------------------------------------
// Types of the public resources (checked against @signal/contracts at compile time in the tests).

export type SignalType = 'new' | '3d' | '7d' | '30d' | 'wallet' | 'premium';
export type SignalStatus = 'active' | 'winner' | 'dead' | 'rugged';
export type WebhookEvent = 'signal.new' | 'signal.winner' | 'signal.dead' | 'signal.rugged';
export type DeliveryStatus = 'pending' | 'succeeded' | 'failed';
export type StatsPeriod = '24h' | '7d' | '30d' | 'all';

export type ErrorCode =
  | 'VALIDATION_ERROR'
  | 'UNAUTHORIZED'
  | 'KEY_EXPIRED'
  | 'FORBIDDEN'
  | 'NOT_FOUND'
  | 'METHOD_NOT_ALLOWED'
  | 'CONFLICT'
  | 'INVALID_STATUS_TRANSITION'
  | 'IDEMPOTENCY_CONFLICT'
  | 'PAYLOAD_TOO_LARGE'
  | 'UNSUPPORTED_MEDIA_TYPE'
  | 'RATE_LIMIT_EXCEEDED'
  | 'INTERNAL_ERROR'
  | 'BAD_GATEWAY'
  | 'SERVICE_UNAVAILABLE'
  | 'GATEWAY_TIMEOUT';

export interface SignalListItem {
  id: string;
  token: { symbol: string; name: string; contract: string; age_hours: number };
  metrics: {
    mcap_entry: number;
    mcap_current: number;
    volume_24h: number;
    holders: number;
    liquidity: number;
  };
  performance: { roi: number; ath_roi: number; status: SignalStatus };
  type: SignalType;
  is_premium: boolean;
  created_at: string;
}

export interface SignalDetail extends SignalListItem {
  token: SignalListItem['token'] & {
    dex_paid: boolean;
    socials: { twitter: string | null; telegram: string | null; website: string | null };
  };
  metrics: SignalListItem['metrics'] & { mcap_ath: number };
  performance: SignalListItem['performance'] & { time_to_ath_hours: number | null };
  updated_at: string;
}

export interface ListMeta {
  total: number;
  page: number;
  per_page: number;
  total_pages: number;
  next_cursor?: string | null;
}

export interface Page<T> {
  data: T[];
  meta: ListMeta;
}

export interface Statistics {
  total_signals: number;
  winners: number;
  win_rate: number;
  avg_roi: number;
  best_roi: number;
  by_type: Record<SignalType, { total: number; winners: number; win_rate: number }>;
}

export interface WebhookSubscription {
  id: string;
  url: string;
  events: WebhookEvent[];
  types: SignalType[] | null;
  description: string | null;
  status: 'enabled' | 'disabled';
  disabled_reason: string | null;
  created_at: string;
  updated_at: string;
}
export interface WebhookSubscriptionWithSecret extends WebhookSubscription {
  secret: string;
}

export interface DeliveryAttempt {
  attempt: number;
  started_at: string;
  duration_ms: number;
  status_code: number | null;
  error: string | null;
}

export interface Delivery {
  id: string;
  webhook_id: string;
  event_id: string;
  event: string;
  status: DeliveryStatus;
  attempts_made: number;
  next_attempt_at: string | null;
  created_at: string;
  updated_at: string;
  attempts?: DeliveryAttempt[];
}

export interface ApiKey {
  id: string;
  name: string;
  prefix: string;
  created_at: string;
  expires_at: string | null;
  last_used_at: string | null;
  revoked_at: string | null;
}
export interface ApiKeyWithSecret extends ApiKey {
  key: string;
}

export interface ListSignalsParams {
  type?: SignalType;
  status?: SignalStatus;
  since?: string | Date;
  limit?: number;
  page?: number;
  cursor?: string;
}
export interface StatsParams {
  type?: SignalType;
  period?: StatsPeriod;
}
export interface CreateWebhookInput {
  url: string;
  events: WebhookEvent[];
  /** Omitted or null: every type. */
  types?: SignalType[] | null;
  description?: string | null;
}
export interface UpdateWebhookInput {
  url?: string;
  events?: WebhookEvent[];
  types?: SignalType[] | null;
  /** null clears it. */
  description?: string | null;
  enabled?: boolean;
}
export interface ListWebhooksParams {
  /** Page number, from 1 (default 1). */
  page?: number;
  /** Results per page, 1–100 (default 100). */
  limit?: number;
}
export interface ListDeliveriesParams {
  status?: DeliveryStatus;
  event?: WebhookEvent | 'webhook.test';
  limit?: number;
  page?: number;
}

/** What a webhook request carries: every event's `data` is a signal (id, token, metrics, type, is_premium); `webhook.test` carries a sample one with `test: true`. */
export interface WebhookPayload {
  event: string;
  timestamp: string;
  data: Record<string, unknown>;
}

// ---------------------------------------------------------------------------------------------
// Errors

/** Any failure answered by the API, with the spec's error envelope. */
export class SignalApiError extends Error {
  override readonly name: string = 'SignalApiError';
  constructor(
    readonly status: number,
    readonly code: ErrorCode,
    message: string,
    readonly requestId: string | undefined,
    readonly retryAfter: number | undefined,
    readonly details: { field: string; message: string }[] | undefined,
  ) {
    super(message);
  }
}
export class AuthenticationError extends SignalApiError {
  override readonly name = 'AuthenticationError';
}
export class PermissionError extends SignalApiError {
  override readonly name = 'PermissionError';
}
export class NotFoundError extends SignalApiError {
  override readonly name = 'NotFoundError';
}
export class ValidationError extends SignalApiError {
  override readonly name = 'ValidationError';
}
export class ConflictError extends SignalApiError {
  override readonly name = 'ConflictError';
}
export class RateLimitError extends SignalApiError {
  override readonly name = 'RateLimitError';
}
export class ServerError extends SignalApiError {
  override readonly name = 'ServerError';
}
/** No answer within `timeoutMs` (after the last retry). */
export class SignalTimeoutError extends Error {
  override readonly name = 'SignalTimeoutError';
}
/** The network failed (connection refused, reset, DNS) after the last retry. */
export class SignalConnectionError extends Error {
  override readonly name = 'SignalConnectionError';
}

const ERROR_CLASSES: Partial<Record<ErrorCode, typeof SignalApiError>> = {
  UNAUTHORIZED: AuthenticationError,
  KEY_EXPIRED: AuthenticationError,
  FORBIDDEN: PermissionError,
  NOT_FOUND: NotFoundError,
  VALIDATION_ERROR: ValidationError,
  CONFLICT: ConflictError,
  IDEMPOTENCY_CONFLICT: ConflictError,
  INVALID_STATUS_TRANSITION: ConflictError,
  RATE_LIMIT_EXCEEDED: RateLimitError,
  INTERNAL_ERROR: ServerError,
  BAD_GATEWAY: ServerError,
  SERVICE_UNAVAILABLE: ServerError,
  GATEWAY_TIMEOUT: ServerError,
};

const KNOWN_CODES = new Set<string>([
  'VALIDATION_ERROR',
  'UNAUTHORIZED',
  'KEY_EXPIRED',
  'FORBIDDEN',
  'NOT_FOUND',
  'METHOD_NOT_ALLOWED',
  'CONFLICT',
  'INVALID_STATUS_TRANSITION',
  'IDEMPOTENCY_CONFLICT',
  'PAYLOAD_TOO_LARGE',
  'UNSUPPORTED_MEDIA_TYPE',
  'RATE_LIMIT_EXCEEDED',
  'INTERNAL_ERROR',
  'BAD_GATEWAY',
  'SERVICE_UNAVAILABLE',
  'GATEWAY_TIMEOUT',
]);
const isErrorCode = (c: unknown): c is ErrorCode => typeof c === 'string' && KNOWN_CODES.has(c);

function codeForStatus(status: number): ErrorCode {
  if (status === 401) return 'UNAUTHORIZED';
  if (status === 403) return 'FORBIDDEN';
  if (status === 404) return 'NOT_FOUND';
  if (status === 429) return 'RATE_LIMIT_EXCEEDED';
  if (status === 503) return 'SERVICE_UNAVAILABLE';
  if (status === 504) return 'GATEWAY_TIMEOUT';
  if (status >= 500) return 'INTERNAL_ERROR';
  return 'VALIDATION_ERROR';
}

const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

function toApiError(status: number, body: unknown, headers: Headers): SignalApiError {
  const error = isRecord(body) && isRecord(body.error) ? body.error : {};
  const code = isErrorCode(error.code) ? error.code : codeForStatus(status);
  const message = typeof error.message === 'string' ? error.message : `HTTP ${status}`;
  const requestId =
    typeof error.request_id === 'string' ? error.request_id : (headers.get('x-request-id') ?? undefined);
  const retryAfter =
    typeof error.retry_after === 'number' ? error.retry_after : parseRetryAfter(headers.get('retry-after'));
  const details = Array.isArray(error.details)
    ? error.details.filter(isRecord).map((d) => ({ field: String(d.field), message: String(d.message) }))
    : undefined;
  const Cls = ERROR_CLASSES[code] ?? SignalApiError;
  return new Cls(status, code, message, requestId, retryAfter, details);
}

/** Retry-After as seconds: delta-seconds or an HTTP date. */
export function parseRetryAfter(value: string | null, now = Date.now()): number | undefined {
  if (!value) return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim());
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - now) / 1000));
}

// ---------------------------------------------------------------------------------------------
// Client

export interface SignalClientOptions {
  /** `https://api.example.com` (no trailing /v1). */
  baseUrl: string;
  /** `sk_live_…` for the public API. */
  apiKey?: string;
  /** A dashboard session token (POST /v1/auth/login) for the account-key operations. */
  sessionToken?: string;
  /** Per attempt. Default 10 s. */
  timeoutMs?: number;
  /**
   * Retries after the first attempt on 429 and 503; on network errors and timeouts for non-POST
   * requests; and on network errors, timeouts and 5xx for the POSTs the server deduplicates on
   * their Idempotency-Key (webhooks.create, account.createKey) when one is sent. Default 3.
   */
  maxRetries?: number;
  /** Cap on any single wait, Retry-After included. Default 30 s. */
  maxRetryDelayMs?: number;
  /** Base of the exponential backoff when the server gives no Retry-After. Default 500 ms. */
  retryBaseDelayMs?: number;
  /** Send an Idempotency-Key on every POST (the same on its retries). Default true. */
  idempotencyKeys?: boolean;
  fetch?: typeof fetch;
  userAgent?: string;
}

export interface RequestOptions {
  /** Overrides the generated Idempotency-Key of a POST. */
  idempotencyKey?: string;
  signal?: AbortSignal;
  timeoutMs?: number;
}

type Query = Record<string, string | number | boolean | Date | undefined | null>;
type Method = 'GET' | 'POST' | 'PATCH' | 'DELETE';
type Auth = 'apiKey' | 'session' | 'none';

/**
 * `webhooks.list`: before the list was paginated it took only request options, and it still
 * does; it answers the page's subscriptions (newest first) either way.
 */
export interface ListWebhooks {
  (opts?: RequestOptions): Promise<WebhookSubscription[]>;
  (params: ListWebhooksParams, opts?: RequestOptions): Promise<WebhookSubscription[]>;
}

const REQUEST_OPTION_KEYS = ['idempotencyKey', 'signal', 'timeoutMs'] as const;
/** Tells the two forms of `webhooks.list` apart: their keys do not overlap. */
const isRequestOptions = (v: ListWebhooksParams | RequestOptions): v is RequestOptions =>
  REQUEST_OPTION_KEYS.some((k) => k in v);

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * The POST routes whose server answers a repeat of the same Idempotency-Key and body with what
 * the first request made (200, `Idempotent-Replayed: true`) and a key reused for another body
 * with 409 IDEMPOTENCY_CONFLICT. Only these are sent again when their answer is lost: the
 * repeat cannot make a second webhook or key.
 */
const DEDUPLICATED_POSTS: ReadonlySet<string> = new Set(['/v1/webhooks', '/v1/account/keys']);

export class SignalClient {
  private readonly baseUrl: string;
  private readonly timeoutMs: number;
  private readonly maxRetries: number;
  private readonly maxRetryDelayMs: number;
  private readonly retryBaseDelayMs: number;
  private readonly fetchImpl: typeof fetch;
  private sessionToken: string | undefined;

  constructor(private readonly options: SignalClientOptions) {
    if (!options.baseUrl) throw new TypeError('baseUrl is required');
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.timeoutMs = options.timeoutMs ?? 10_000;
    this.maxRetries = options.maxRetries ?? 3;
    this.maxRetryDelayMs = options.maxRetryDelayMs ?? 30_000;
    this.retryBaseDelayMs = options.retryBaseDelayMs ?? 500;
    this.fetchImpl = options.fetch ?? fetch;
    this.sessionToken = options.sessionToken;
  }

  // -- signals ---------------------------------------------------------------------------------

  readonly signals = {
    /** One page (operationId listSignals). */
    list: (params: ListSignalsParams = {}, opts?: RequestOptions): Promise<Page<SignalListItem>> =>
      this.page<SignalListItem>('GET', '/v1/signals', { ...params }, opts),
    /** Every matching signal, newest first, following `meta.next_cursor`. */
    iterate: (params: Omit<ListSignalsParams, 'page'> = {}, opts?: RequestOptions) =>
      this.iterateCursor<SignalListItem>('/v1/signals', { ...params }, opts),
    /** operationId getSignal */
    get: (signalId: string, opts?: RequestOptions): Promise<SignalDetail> =>
      this.data<SignalDetail>('GET', `/v1/signals/${encodeURIComponent(signalId)}`, {}, undefined, opts),
  };

  // -- stats -----------------------------------------------------------------------------------

  readonly stats = {
    /** operationId getStats */
    get: (params: StatsParams = {}, opts?: RequestOptions): Promise<Statistics> =>
      this.data<Statistics>('GET', '/v1/stats', { ...params }, undefined, opts),
  };

  // -- webhooks --------------------------------------------------------------------------------

  /** operationId listWebhooks: one page, the first 100 without `page`/`limit`. */
  private readonly listWebhooks: ListWebhooks = (
    first: ListWebhooksParams | RequestOptions = {},
    opts?: RequestOptions,
  ): Promise<WebhookSubscription[]> => {
    if (isRequestOptions(first))
      return this.data<WebhookSubscription[]>('GET', '/v1/webhooks', {}, undefined, first);
    const query = { page: first.page, limit: first.limit };
    return this.data<WebhookSubscription[]>('GET', '/v1/webhooks', query, undefined, opts);
  };

  readonly webhooks = {
    create: (input: CreateWebhookInput, opts?: RequestOptions) =>
      this.data<WebhookSubscriptionWithSecret>('POST', '/v1/webhooks', {}, input, opts),
    list: this.listWebhooks,
    /** Every subscription, newest first, page by page. */
    iterate: (params: Omit<ListWebhooksParams, 'page'> = {}, opts?: RequestOptions) =>
      this.iteratePages<WebhookSubscription>('/v1/webhooks', { ...params }, opts),
    get: (webhookId: string, opts?: RequestOptions) =>
      this.data<WebhookSubscription>('GET', this.hook(webhookId), {}, undefined, opts),
    update: (webhookId: string, input: UpdateWebhookInput, opts?: RequestOptions) =>
      this.data<WebhookSubscription>('PATCH', this.hook(webhookId), {}, input, opts),
    delete: (webhookId: string, opts?: RequestOptions) =>
      this.data<WebhookSubscription>('DELETE', this.hook(webhookId), {}, undefined, opts),
    rotateSecret: (webhookId: string, opts?: RequestOptions) =>
      this.data<WebhookSubscriptionWithSecret>(
        'POST',
        `${this.hook(webhookId)}/rotate-secret`,
        {},
        undefined,
        opts,
      ),
    sendTest: (webhookId: string, opts?: RequestOptions) =>
      this.data<Delivery>('POST', `${this.hook(webhookId)}/test`, {}, undefined, opts),
    deliveries: {
      list: (webhookId: string, params: ListDeliveriesParams = {}, opts?: RequestOptions) =>
        this.page<Delivery>('GET', `${this.hook(webhookId)}/deliveries`, { ...params }, opts),
      /** Every delivery, newest first, page by page. */
      iterate: (webhookId: string, params: Omit<ListDeliveriesParams, 'page'> = {}, opts?: RequestOptions) =>
        this.iteratePages<Delivery>(`${this.hook(webhookId)}/deliveries`, { ...params }, opts),
      get: (webhookId: string, deliveryId: string, opts?: RequestOptions) =>
        this.data<Delivery>(
          'GET',
          `${this.hook(webhookId)}/deliveries/${encodeURIComponent(deliveryId)}`,
          {},
          undefined,
          opts,
        ),
      retry: (webhookId: string, deliveryId: string, opts?: RequestOptions) =>
        this.data<Delivery>(
          'POST',
          `${this.hook(webhookId)}/deliveries/${encodeURIComponent(deliveryId)}/retry`,
          {},
          undefined,
          opts,
        ),
    },
  };

  // -- dashboard session + account keys ---------------------------------------------------------

  readonly auth = {
    /** Logs in and keeps the session token for the `account` operations. */
    login: async (email: string, password: string, opts?: RequestOptions) => {
      const session = await this.data<{ token: string; expires_at: string }>(
        'POST',
        '/v1/auth/login',
        {},
        { email, password },
        opts,
        'none',
      );
      this.sessionToken = session.token;
      return session;
    },
    /** Ends the kept session token. */
    logout: async (opts?: RequestOptions) => {
      const out = await this.data<{ logged_out: true }>(
        'POST',
        '/v1/auth/logout',
        {},
        undefined,
        opts,
        'session',
      );
      this.sessionToken = undefined;
      return out;
    },
  };

  readonly account = {
    /** Every session so far ends; the new one is kept for the next calls. */
    changePassword: async (
      input: { current_password: string; new_password: string },
      opts?: RequestOptions,
    ) => {
      const session = await this.data<{ token: string; expires_at: string }>(
        'POST',
        '/v1/account/password',
        {},
        input,
        opts,
        'session',
      );
      this.sessionToken = session.token;
      return session;
    },
    listKeys: (opts?: RequestOptions) =>
      this.data<ApiKey[]>('GET', '/v1/account/keys', {}, undefined, opts, 'session'),
    createKey: (input: { name: string; expires_at?: string }, opts?: RequestOptions) =>
      this.data<ApiKeyWithSecret>('POST', '/v1/account/keys', {}, input, opts, 'session'),
    revokeKey: (keyId: string, opts?: RequestOptions) =>
      this.data<ApiKey>(
        'DELETE',
        `/v1/account/keys/${encodeURIComponent(keyId)}`,
        {},
        undefined,
        opts,
        'session',
      ),
  };

  // -- transport -------------------------------------------------------------------------------

  private hook(id: string): string {
    return `/v1/webhooks/${encodeURIComponent(id)}`;
  }

  private async data<T>(
    method: Method,
    path: string,
    query: Query,
    body: unknown,
    opts: RequestOptions | undefined,
    auth: Auth = 'apiKey',
  ): Promise<T> {
    const envelope = await this.request<T>(method, path, query, body, opts, auth);
    return envelope.data;
  }

  private async page<T>(method: Method, path: string, query: Query, opts?: RequestOptions): Promise<Page<T>> {
    const envelope = await this.request<T[]>(method, path, query, undefined, opts, 'apiKey');
    if (!envelope.meta) throw new SignalConnectionError(`${path}: the answer has no meta`);
    return { data: envelope.data, meta: envelope.meta };
  }

  private async *iterateCursor<T>(path: string, query: Query, opts?: RequestOptions): AsyncGenerator<T> {
    let cursor: string | undefined = typeof query.cursor === 'string' ? query.cursor : undefined;
    for (;;) {
      const { data, meta } = await this.page<T>('GET', path, { ...query, cursor }, opts);
      yield* data;
      if (!meta.next_cursor || data.length === 0) return;
      cursor = meta.next_cursor;
    }
  }

  private async *iteratePages<T>(path: string, query: Query, opts?: RequestOptions): AsyncGenerator<T> {
    for (let page = 1; ; page += 1) {
      const { data, meta } = await this.page<T>('GET', path, { ...query, page }, opts);
      yield* data;
      if (data.length === 0 || page >= meta.total_pages) return;
    }
  }

  private url(path: string, query: Query): string {
    const u = new URL(this.baseUrl + path);
    for (const [k, v] of Object.entries(query)) {
      if (v === undefined || v === null) continue;
      u.searchParams.set(k, v instanceof Date ? v.toISOString() : String(v));
    }
    return u.toString();
  }

  private headers(method: Method, body: unknown, opts: RequestOptions | undefined, auth: Auth) {
    const h: Record<string, string> = { accept: 'application/json' };
    if (this.options.userAgent) h['user-agent'] = this.options.userAgent;
    if (body !== undefined) h['content-type'] = 'application/json';
    const token =
      auth === 'apiKey' ? this.options.apiKey : auth === 'session' ? this.sessionToken : undefined;
    if (auth !== 'none' && !token) {
      throw new TypeError(auth === 'apiKey' ? 'apiKey is required' : 'log in first (auth.login)');
    }
    if (token) h.authorization = `Bearer ${token}`;
    if (method === 'POST' && (opts?.idempotencyKey || this.options.idempotencyKeys !== false)) {
      h['idempotency-key'] = opts?.idempotencyKey ?? randomUUID();
    }
    return h;
  }

  /** Wait before retry `attempt` (1-based): the server's Retry-After, else jittered backoff; capped. */
  retryDelayMs(attempt: number, retryAfterSeconds: number | undefined): number {
    const wanted =
      retryAfterSeconds !== undefined
        ? retryAfterSeconds * 1000
        : this.retryBaseDelayMs * 2 ** (attempt - 1) * (0.8 + Math.random() * 0.4);
    return Math.min(this.maxRetryDelayMs, Math.max(0, wanted));
  }

  private async request<T>(
    method: Method,
    path: string,
    query: Query,
    body: unknown,
    opts: RequestOptions | undefined,
    auth: Auth,
  ): Promise<{ data: T; meta?: ListMeta }> {
    const headers = this.headers(method, body, opts, auth);
    const url = this.url(path, query);
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const timeoutMs = opts?.timeoutMs ?? this.timeoutMs;
    const deduplicated =
      method === 'POST' && headers['idempotency-key'] !== undefined && DEDUPLICATED_POSTS.has(path);
    for (let attempt = 0; ; attempt += 1) {
      const last = attempt >= this.maxRetries;
      let res: Response;
      try {
        const signal = opts?.signal
          ? AbortSignal.any([opts.signal, AbortSignal.timeout(timeoutMs)])
          : AbortSignal.timeout(timeoutMs);
        res = await this.fetchImpl(url, { method, headers, body: payload, signal });
      } catch (err) {
        if (opts?.signal?.aborted) throw err;
        const name = typeof err === 'object' && err !== null && 'name' in err ? String(err.name) : '';
        const timedOut = name === 'TimeoutError' || name === 'AbortError';
        // A POST that got no answer may have happened: it is repeated only where the server
        // answers the repeat with what the first made (429/503 prove it was not processed).
        const safe = method !== 'POST' || deduplicated;
        if (last || !safe) {
          if (timedOut) throw new SignalTimeoutError(`${method} ${path}: no answer within ${timeoutMs} ms`);
          throw new SignalConnectionError(`${method} ${path}: ${String(err)}`, { cause: err });
        }
        await sleep(this.retryDelayMs(attempt + 1, undefined));
        continue;
      }
      const text = await res.text();
      let json: unknown;
      try {
        json = text ? JSON.parse(text) : undefined;
      } catch {
        json = undefined;
      }
      if (res.ok && isRecord(json) && json.success === true) {
        // The single decode point: the server's contract (validated against /openapi.json in CI).
        return json as { data: T; meta?: ListMeta };
      }
      const error = toApiError(res.status, json, res.headers);
      const retried = res.status === 429 || res.status === 503 || (deduplicated && res.status >= 500);
      if (!last && retried) {
        await sleep(this.retryDelayMs(attempt + 1, error.retryAfter));
        continue;
      }
      throw error;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Webhook verification (Standard Webhooks: webhook-id, webhook-timestamp, webhook-signature)

export class WebhookVerificationError extends Error {
  override readonly name = 'WebhookVerificationError';
}

type HeaderBag = Headers | Record<string, string | string[] | undefined>;

function header(headers: HeaderBag, name: string): string | undefined {
  if (typeof Headers !== 'undefined' && headers instanceof Headers) return headers.get(name) ?? undefined;
  for (const [k, v] of Object.entries(headers)) {
    if (k.toLowerCase() === name) return Array.isArray(v) ? v.join(' ') : v;
  }
  return undefined;
}

/**
 * Verifies a delivery's signature and freshness and returns its parsed payload.
 * Pass the raw body exactly as received (not re-serialised JSON). During a secret rotation,
 * pass the new and the old secret: either one verifies.
 */
export function verifyWebhook(
  body: string | Uint8Array,
  headers: HeaderBag,
  secret: string | string[],
  options: { toleranceSeconds?: number; now?: Date } = {},
): WebhookPayload {
  const id = header(headers, 'webhook-id');
  const timestamp = header(headers, 'webhook-timestamp');
  const signatures = header(headers, 'webhook-signature');
  if (!id || !timestamp || !signatures) throw new WebhookVerificationError('missing webhook headers');
  if (!/^\d+$/.test(timestamp)) throw new WebhookVerificationError('invalid webhook-timestamp');
  const now = Math.floor((options.now?.getTime() ?? Date.now()) / 1000);
  const tolerance = options.toleranceSeconds ?? 300;
  if (Math.abs(now - Number(timestamp)) > tolerance) {
    throw new WebhookVerificationError('webhook-timestamp outside the tolerance');
  }
  const raw = typeof body === 'string' ? body : Buffer.from(body).toString('utf8');
  const signed = `${id}.${timestamp}.${raw}`;
  const given = signatures
    .split(' ')
    .map((s) => s.split(','))
    .filter((p): p is [string, string] => p.length === 2 && p[0] === 'v1')
    .map((p) => Buffer.from(p[1], 'base64'));
  const ok = (Array.isArray(secret) ? secret : [secret]).some((s) => {
    const key = Buffer.from(s.startsWith('whsec_') ? s.slice(6) : s, 'base64');
    const expected = createHmac('sha256', key).update(signed).digest();
    return given.some((g) => g.length === expected.length && timingSafeEqual(g, expected));
  });
  if (!ok) throw new WebhookVerificationError('no matching signature');
  let payload: unknown;
  try {
    payload = JSON.parse(raw);
  } catch {
    throw new WebhookVerificationError('body is not JSON');
  }
  if (!isRecord(payload) || typeof payload.event !== 'string' || typeof payload.timestamp !== 'string') {
    throw new WebhookVerificationError('body is not a webhook payload');
  }
  return {
    event: payload.event,
    timestamp: payload.timestamp,
    data: isRecord(payload.data) ? payload.data : {},
  };
}
