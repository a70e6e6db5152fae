/**
 * @signal/sdk — the typed client of the Signal Service API.
 *
 * Every public operation of /openapi.json has a method here (a test checks the operationIds);
 * lists paginate as async iterators; 429/503 are retried honouring Retry-After within a bounded
 * wait (`maxRetryWait`, each wait reported to `onRetry`);
 * every POST carries an Idempotency-Key (the same on each retry), and the creates the server
 * deduplicates on it are retried after a lost response or a 5xx too; every attempt has a timeout;
 * errors are typed by the API's error code; `verifyWebhook` checks Standard Webhooks signatures.
 * No runtime dependencies: Node ≥ 18 (global fetch, node:crypto).
 */
import { randomUUID, timingSafeEqual } from 'node:crypto';
import type { components, operations } from './generated/openapi.js';
import { webhookSignature } from './signature.js';

// ---------------------------------------------------------------------------------------------
// Types of the public resources: generated (scripts/generate-types.mjs) from the OpenAPI document
// that @signal/contracts builds from its route table, the document the API serves; a test fails
// when the generated file is not the one the contracts make.

type Schemas = components['schemas'];
type QueryOf<K extends keyof operations> = NonNullable<operations[K]['parameters']['query']>;

export type { components, operations, paths } from './generated/openapi.js';

export type SignalListItem = Schemas['SignalListItem'];
export type SignalDetail = Schemas['SignalDetail'];
export type SignalType = SignalListItem['type'];
export type SignalStatus = SignalListItem['performance']['status'];
export type ListMeta = Schemas['ListMeta'];
export type PageMeta = Schemas['PageMeta'];
export type Statistics = Schemas['Statistics'];
export type StatsPeriod = NonNullable<QueryOf<'getStats'>['period']>;
export type WebhookSubscription = Schemas['WebhookSubscription'];
export type WebhookSubscriptionWithSecret = Schemas['WebhookSubscriptionWithSecret'];
export type WebhookEvent = WebhookSubscription['events'][number];
export type Delivery = Schemas['WebhookDelivery'];
export type DeliveryDetail = Schemas['WebhookDeliveryDetail'];
export type DeliveryAttempt = DeliveryDetail['attempts'][number];
/** What an attempt sent: URL, every header, the exact body. */
export type DeliveryAttemptRequest = Schemas['WebhookAttemptRequest'];
/** What came back: status, headers, the start of the body. */
export type DeliveryAttemptResponse = Schemas['WebhookAttemptResponse'];
/** The event of a test delivery: webhook.test, or a sample of any event in its payload shape. */
export type WebhookTestEvent = NonNullable<Schemas['WebhookTestRequest']['event']>;
export type WebhookTestInput = Schemas['WebhookTestRequest'];
export type RecoverWebhookResult = Schemas['RecoverWebhookResult'];
export type DeliveryStatus = Delivery['status'];
export type ApiKey = Schemas['ApiKey'];
export type ApiKeyWithSecret = Schemas['ApiKeyWithSecret'];
export type Session = Schemas['Session'];
export type ErrorCode = Schemas['ErrorEnvelope']['error']['code'];
/** What a webhook request carries, one shape per `event` (narrow on it). */
export type WebhookPayload = Schemas['WebhookPayload'];

export interface Page<T, M = ListMeta | PageMeta> {
  data: T[];
  meta: M;
}

/** `since` may also be a Date (sent as its ISO form). */
export type ListSignalsParams = Omit<QueryOf<'listSignals'>, 'since'> & { since?: string | Date };
export type StatsParams = QueryOf<'getStats'>;
export type CreateWebhookInput = Schemas['CreateWebhookRequest'];
export type UpdateWebhookInput = Schemas['UpdateWebhookRequest'];
export type ListWebhooksParams = QueryOf<'listWebhooks'>;
export type ListDeliveriesParams = QueryOf<'listWebhookDeliveries'>;
export type ListApiKeysParams = QueryOf<'listApiKeys'>;
export type CreateApiKeyInput = Schemas['CreateApiKeyRequest'];
export type ChangePasswordInput = Schemas['ChangePasswordRequest'];

// ---------------------------------------------------------------------------------------------
// Errors

/** Any failure the API returns, with the fields of its error envelope (`{ success: false, error }`). */
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
/** No response within `timeoutMs` (after the last retry). */
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
  RATE_LIMIT_EXCEEDED: RateLimitError,
  INTERNAL_ERROR: ServerError,
  SERVICE_UNAVAILABLE: ServerError,
  GATEWAY_TIMEOUT: ServerError,
};

/** Every code of the document, listed once: a code added or dropped there fails compiling here. */
const KNOWN_CODES: Readonly<Record<ErrorCode, true>> = {
  VALIDATION_ERROR: true,
  UNAUTHORIZED: true,
  KEY_EXPIRED: true,
  FORBIDDEN: true,
  NOT_FOUND: true,
  METHOD_NOT_ALLOWED: true,
  CONFLICT: true,
  IDEMPOTENCY_CONFLICT: true,
  PAYLOAD_TOO_LARGE: true,
  UNSUPPORTED_MEDIA_TYPE: true,
  RATE_LIMIT_EXCEEDED: true,
  INTERNAL_ERROR: true,
  SERVICE_UNAVAILABLE: true,
  GATEWAY_TIMEOUT: true,
};
const isErrorCode = (c: unknown): c is ErrorCode => typeof c === 'string' && Object.hasOwn(KNOWN_CODES, c);

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

/** What `onRetry` is told before each wait. */
export interface RetryEvent {
  method: string;
  path: string;
  /** The retry about to be made: 1 for the first. */
  attempt: number;
  /** How long the client waits before it, in ms. */
  delayMs: number;
  /** The HTTP status that caused it (429, 503, a 5xx of a deduplicated POST), if any. */
  status?: number;
  /** The error the attempt ended with. */
  error: Error;
}

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
  /**
   * The most one call spends waiting between its attempts, in ms, all waits together. A wait
   * that would go past it (a 429 whose Retry-After is longer, say) is not started: the error is
   * thrown at once, with its `retryAfter`. Default 5000: a call never sits silent for long.
   * 0 turns retries off.
   */
  maxRetryWait?: number;
  /** Cap on any single wait, Retry-After included; a longer Retry-After is not waited. Default 5 s. */
  maxRetryDelayMs?: number;
  /** Base of the exponential backoff when the server gives no Retry-After. Default 500 ms. */
  retryBaseDelayMs?: number;
  /** Called before each wait for a retry: log it, show it, or count it. */
  onRetry?: (event: RetryEvent) => void;
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
 * `webhooks.list`: request options alone (so callers written for the unpaginated list keep
 * working), or a page query; it returns the page's subscriptions (newest first) either way.
 */
export interface ListWebhooks {
  (opts?: RequestOptions): Promise<WebhookSubscription[]>;
  (params: ListWebhooksParams, opts?: RequestOptions): Promise<WebhookSubscription[]>;
}

/** `webhooks.sendTest`: request options alone (callers that do not choose the test event), or the event. */
export interface SendWebhookTest {
  (webhookId: string, opts?: RequestOptions): Promise<Delivery>;
  (webhookId: string, input: WebhookTestInput, opts?: RequestOptions): Promise<Delivery>;
}

const REQUEST_OPTION_KEYS = ['idempotencyKey', 'signal', 'timeoutMs'] as const;
/** Tells the two forms of `webhooks.list` and `webhooks.sendTest` apart: their keys do not overlap. */
const isRequestOptions = (v: ListWebhooksParams | WebhookTestInput | RequestOptions): v is RequestOptions =>
  REQUEST_OPTION_KEYS.some((k) => k in v);

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * The POST routes whose server responds to a repeat of the same Idempotency-Key and body with what
 * the first request made (200, `Idempotent-Replayed: true`) and a key reused for another body
 * with 409 IDEMPOTENCY_CONFLICT. Only these are sent again when their response is lost: the
 * repeat cannot make a second webhook or key.
 */
const DEDUPLICATED_POSTS: ReadonlySet<string> = new Set(['/v1/webhooks', '/v1/account/keys']);

export class SignalClient {
  private readonly baseUrl: string;
  private readonly timeoutMs: number;
  private readonly maxRetries: number;
  private readonly maxRetryDelayMs: number;
  private readonly maxRetryWait: number;
  private readonly retryBaseDelayMs: number;
  private readonly fetchImpl: typeof fetch;
  private sessionToken: string | undefined;

  constructor(private readonly options: SignalClientOptions) {
    if (!options.baseUrl) throw new TypeError('baseUrl is required');
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.timeoutMs = options.timeoutMs ?? 10_000;
    this.maxRetries = options.maxRetries ?? 3;
    this.maxRetryDelayMs = options.maxRetryDelayMs ?? 5_000;
    this.maxRetryWait = options.maxRetryWait ?? 5_000;
    this.retryBaseDelayMs = options.retryBaseDelayMs ?? 500;
    this.fetchImpl = options.fetch ?? fetch;
    this.sessionToken = options.sessionToken;
  }

  // -- signals ---------------------------------------------------------------------------------

  readonly signals = {
    /** One page (operationId listSignals). */
    list: (params: ListSignalsParams = {}, opts?: RequestOptions): Promise<Page<SignalListItem, ListMeta>> =>
      this.cursorPage<SignalListItem>('/v1/signals', { ...params }, opts),
    /** Every matching signal, newest first, following `meta.next_cursor`. */
    iterate: (params: Omit<ListSignalsParams, 'page'> = {}, opts?: RequestOptions) =>
      this.iterateCursor<SignalListItem>('/v1/signals', { ...params }, opts),
    /** operationId getSignal */
    get: (signalId: string, opts?: RequestOptions): Promise<SignalDetail> =>
      this.data<SignalDetail>('GET', `/v1/signals/${encodeURIComponent(signalId)}`, {}, undefined, opts),
    /**
     * operationId streamSignals: the live events as an async iterator that reconnects and resumes
     * with Last-Event-ID, each event once (see SignalStream). With the API key, or the session
     * token when the client has no key.
     */
    stream: (params: StreamParams = {}, options: StreamOptions = {}): SignalStream =>
      new SignalStream(this.streamTransport(), params, options),
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

  /** operationId sendWebhookTest: webhook.test, or a sample of `input.event` marked `test: true`. */
  private readonly sendTest: SendWebhookTest = (
    webhookId: string,
    first: WebhookTestInput | RequestOptions = {},
    opts?: RequestOptions,
  ): Promise<Delivery> => {
    const path = `${this.hook(webhookId)}/test`;
    if (isRequestOptions(first)) return this.data<Delivery>('POST', path, {}, undefined, first);
    const body = first.event === undefined ? undefined : { event: first.event };
    return this.data<Delivery>('POST', path, {}, body, opts);
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
    sendTest: this.sendTest,
    /**
     * operationId recoverWebhook: one more attempt for every delivery created since `since` that
     * is failed now; returns how many were queued (0 on a repeat).
     */
    recover: (webhookId: string, since: string | Date, opts?: RequestOptions) =>
      this.data<RecoverWebhookResult>(
        'POST',
        `${this.hook(webhookId)}/recover`,
        {},
        { since: since instanceof Date ? since.toISOString() : since },
        opts,
      ),
    deliveries: {
      list: (
        webhookId: string,
        params: ListDeliveriesParams = {},
        opts?: RequestOptions,
      ): Promise<Page<Delivery, PageMeta>> =>
        this.page<Delivery>('GET', `${this.hook(webhookId)}/deliveries`, { ...params }, opts),
      /** Every delivery, newest first, page by page. */
      iterate: (webhookId: string, params: Omit<ListDeliveriesParams, 'page'> = {}, opts?: RequestOptions) =>
        this.iteratePages<Delivery>(`${this.hook(webhookId)}/deliveries`, { ...params }, opts),
      /** One delivery with its attempts. */
      get: (webhookId: string, deliveryId: string, opts?: RequestOptions) =>
        this.data<DeliveryDetail>(
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
      const session = await this.data<Session>(
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
    changePassword: async (input: ChangePasswordInput, opts?: RequestOptions) => {
      const session = await this.data<Session>('POST', '/v1/account/password', {}, input, opts, 'session');
      this.sessionToken = session.token;
      return session;
    },
    /** One page of keys, newest first (the first 100 without `page`/`limit`). */
    listKeys: (params: ListApiKeysParams = {}, opts?: RequestOptions) =>
      this.data<ApiKey[]>('GET', '/v1/account/keys', { ...params }, undefined, opts, 'session'),
    createKey: (input: CreateApiKeyInput, opts?: RequestOptions) =>
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

  private streamTransport(): StreamTransport {
    return {
      url: (path, query) => this.url(path, query),
      headers: () => this.headers('GET', undefined, undefined, this.options.apiKey ? 'apiKey' : 'session'),
      fetch: this.fetchImpl,
      maxRetries: this.maxRetries,
      maxRetryDelayMs: this.maxRetryDelayMs,
      onRetry: this.options.onRetry,
      toError: toApiError,
    };
  }

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

  private async page<T>(
    method: Method,
    path: string,
    query: Query,
    opts?: RequestOptions,
  ): Promise<Page<T, PageMeta>> {
    const envelope = await this.request<T[]>(method, path, query, undefined, opts, 'apiKey');
    if (!envelope.meta) throw new SignalConnectionError(`${path}: the response has no meta`);
    return { data: envelope.data, meta: envelope.meta };
  }

  private async cursorPage<T>(path: string, query: Query, opts?: RequestOptions): Promise<Page<T, ListMeta>> {
    const { data, meta } = await this.request<T[]>('GET', path, query, undefined, opts, 'apiKey');
    if (!meta || !('next_cursor' in meta))
      throw new SignalConnectionError(`${path}: the response has no cursor meta`);
    return { data, meta };
  }

  private async *iterateCursor<T>(path: string, query: Query, opts?: RequestOptions): AsyncGenerator<T> {
    let cursor: string | undefined = typeof query.cursor === 'string' ? query.cursor : undefined;
    for (;;) {
      const { data, meta } = await this.cursorPage<T>(path, { ...query, cursor }, opts);
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

  /**
   * Wait before retry `attempt` (1-based): the server's Retry-After, else jittered backoff; or
   * undefined when the wait is longer than one wait may be (`maxRetryDelayMs`).
   */
  retryDelayMs(attempt: number, retryAfterSeconds: number | undefined): number | undefined {
    const wanted =
      retryAfterSeconds !== undefined
        ? retryAfterSeconds * 1000
        : Math.min(
            this.maxRetryDelayMs,
            this.retryBaseDelayMs * 2 ** (attempt - 1) * (0.8 + Math.random() * 0.4),
          );
    return wanted > this.maxRetryDelayMs ? undefined : Math.max(0, wanted);
  }

  private async request<T>(
    method: Method,
    path: string,
    query: Query,
    body: unknown,
    opts: RequestOptions | undefined,
    auth: Auth,
  ): Promise<{ data: T; meta?: ListMeta | PageMeta }> {
    const headers = this.headers(method, body, opts, auth);
    const url = this.url(path, query);
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const timeoutMs = opts?.timeoutMs ?? this.timeoutMs;
    const deduplicated =
      method === 'POST' && headers['idempotency-key'] !== undefined && DEDUPLICATED_POSTS.has(path);
    let waited = 0;
    /** Waits before retry `attempt` when the budgets allow it; false: give up now. */
    const waitToRetry = async (attempt: number, error: Error, retryAfter?: number, status?: number) => {
      if (attempt > this.maxRetries) return false;
      const delayMs = this.retryDelayMs(attempt, retryAfter);
      if (delayMs === undefined || waited + delayMs > this.maxRetryWait) return false;
      this.options.onRetry?.({ method, path, attempt, delayMs, status, error });
      waited += delayMs;
      await sleep(delayMs);
      return true;
    };
    for (let attempt = 1; ; attempt += 1) {
      let res: Response;
      const call = attemptSignal(opts?.signal, timeoutMs);
      try {
        res = await this.fetchImpl(url, { method, headers, body: payload, signal: call.signal });
      } catch (err) {
        call.done();
        if (opts?.signal?.aborted) throw err;
        const name = typeof err === 'object' && err !== null && 'name' in err ? String(err.name) : '';
        const timedOut = name === 'TimeoutError' || name === 'AbortError';
        const error = timedOut
          ? new SignalTimeoutError(`${method} ${path}: no response within ${timeoutMs} ms`)
          : new SignalConnectionError(`${method} ${path}: ${String(err)}`, { cause: err });
        // A POST that got no response may have happened: it is repeated only where the server
        // responds to the repeat with what the first made (429/503 prove it was not processed).
        const safe = method !== 'POST' || deduplicated;
        if (safe && (await waitToRetry(attempt, error))) continue;
        throw error;
      }
      const text = await res.text();
      call.done();
      let json: unknown;
      try {
        json = text ? JSON.parse(text) : undefined;
      } catch {
        json = undefined;
      }
      if (res.ok && isRecord(json) && json.success === true) {
        // The single decode point: the server's contract (validated against /openapi.json in CI).
        return json as { data: T; meta?: ListMeta | PageMeta };
      }
      const error = toApiError(res.status, json, res.headers);
      const retried = res.status === 429 || res.status === 503 || (deduplicated && res.status >= 500);
      if (retried && (await waitToRetry(attempt, error, error.retryAfter, res.status))) continue;
      throw error;
    }
  }
}

/**
 * One attempt's signal: aborted by the caller's signal or after `timeoutMs` (with a TimeoutError).
 * Built by hand rather than with AbortSignal.any, which Node 18 lacks.
 */
function attemptSignal(outer: AbortSignal | undefined, timeoutMs: number) {
  const controller = new AbortController();
  const timer = setTimeout(
    () => controller.abort(new DOMException('The attempt timed out', 'TimeoutError')),
    timeoutMs,
  );
  const onAbort = () => controller.abort(outer?.reason);
  if (outer?.aborted) onAbort();
  else outer?.addEventListener('abort', onAbort, { once: true });
  return {
    signal: controller.signal,
    done: () => {
      clearTimeout(timer);
      outer?.removeEventListener('abort', onAbort);
    },
  };
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
    const expected = webhookSignature(s, signed);
    return given.some((g) => g.length === expected.length && timingSafeEqual(g, expected));
  });
  if (!ok) throw new WebhookVerificationError('no matching signature');
  let payload: unknown;
  try {
    payload = JSON.parse(raw);
  } catch {
    throw new WebhookVerificationError('body is not JSON');
  }
  if (
    !isRecord(payload) ||
    !isWebhookEventName(payload.event) ||
    typeof payload.timestamp !== 'string' ||
    !isRecord(payload.data)
  ) {
    throw new WebhookVerificationError('body is not a webhook payload');
  }
  // The single decode point of a delivery: signed by the service, shaped by its contract.
  return payload as WebhookPayload;
}

/** The events a delivery can carry, listed once: one added or dropped in the document fails compiling here. */
const PAYLOAD_EVENTS: Readonly<Record<WebhookPayload['event'], true>> = {
  'signal.new': true,
  'signal.winner': true,
  'signal.dead': true,
  'signal.rugged': true,
  'webhook.test': true,
};
const isWebhookEventName = (v: unknown): v is WebhookPayload['event'] =>
  typeof v === 'string' && Object.hasOwn(PAYLOAD_EVENTS, v);

// ---------------------------------------------------------------------------------------------
// Live stream (GET /v1/signals/stream)

/*
 * The live stream `GET /v1/signals/stream` (Server-Sent Events) as an async iterator that
 * reconnects: after a dropped connection it waits (the server's `retry:` first, then doubling
 * with jitter), reconnects with `Last-Event-ID` = the last event it handed out, and the server
 * replays what matched meanwhile. An id already handed out is dropped, so a consumer sees each
 * event once across reconnects. No runtime dependencies: fetch's body stream and TextDecoder.
 */

export const SIGNAL_STREAM_PATH = '/v1/signals/stream';

/** A signal event: the webhook payload a delivery of it would carry, under its stream id. */
export interface StreamSignalEvent {
  event: WebhookEvent;
  /** The event's position in the stream: what Last-Event-ID resumes after. */
  id: string;
  data: WebhookPayload;
}

/**
 * The id given to resume from is one the server no longer holds (malformed, unknown or older than
 * its log): re-sync from `GET /v1/signals` (`client.signals.iterate`); live events follow.
 */
export interface StreamResetEvent {
  event: 'reset';
  /** Where the stream goes on from (the next reconnect resumes after it). */
  id: string | undefined;
  data: { reason: string; message: string; resync: string };
}

export type StreamEvent = StreamSignalEvent | StreamResetEvent;

export interface StreamParams {
  /** Only signals of these types. */
  type?: SignalType | readonly SignalType[];
  /** Only these events. */
  events?: WebhookEvent | readonly WebhookEvent[];
  /** Resume after this id (a `lastEventId` kept from an earlier stream). */
  lastEventId?: string;
}

export interface StreamOptions {
  /** Ends the stream (the iterator returns). */
  signal?: AbortSignal;
  /** A connection silent this long (no event, no heartbeat) is dropped and reopened. Default 45 s. */
  idleTimeoutMs?: number;
  /** The longest wait between reconnects. Default 30 s. */
  maxBackoffMs?: number;
  /** Reconnects in a row without an event or heartbeat before the stream gives up. Default: never. */
  maxReconnects?: number;
}

/** What the client lends the stream: its URL, headers, fetch and retry settings. */
export interface StreamTransport {
  url(path: string, query: Record<string, string | undefined>): string;
  headers(): Record<string, string>;
  fetch: typeof fetch;
  /** 429s in a row at opening before RateLimitError. */
  maxRetries: number;
  /** A Retry-After longer than this is not waited: the error is thrown. */
  maxRetryDelayMs: number;
  onRetry?: (event: RetryEvent) => void;
  toError(status: number, body: unknown, headers: Headers): SignalApiError;
}

/** The stream could not continue: reconnects ran out, or the server responded with something else. */
export class SignalStreamError extends Error {
  override readonly name = 'SignalStreamError';
}

const SIGNAL_EVENTS: Readonly<Record<WebhookEvent, true>> = {
  'signal.new': true,
  'signal.winner': true,
  'signal.dead': true,
  'signal.rugged': true,
};
const isSignalEvent = (v: string): v is WebhookEvent => Object.hasOwn(SIGNAL_EVENTS, v);

/** Ids handed out that are remembered, newest last: enough to cover any replay overlap. */
const REMEMBERED_IDS = 4096;
const DEFAULT_RETRY_MS = 1000;

/** One parsed Server-Sent Event (the WHATWG event-stream format). */
export interface SseEvent {
  event: string;
  data: string;
  id: string | undefined;
}

/**
 * An incremental parser of `text/event-stream`: feed it text as it arrives; it calls `onEvent`
 * per dispatched event, `onRetry` per `retry:` field and `onComment` per comment line.
 */
export class SseParser {
  private buffer = '';
  private event = '';
  private data: string[] = [];
  private id: string | undefined;
  private hasId = false;

  constructor(
    private readonly on: {
      event(e: SseEvent): void;
      retry?(ms: number): void;
      comment?(text: string): void;
    },
  ) {}

  push(text: string): void {
    this.buffer += text;
    for (;;) {
      const match = /\r\n|\r|\n/.exec(this.buffer);
      if (!match) return;
      // A lone \r at the end may be the first half of \r\n: wait for the next chunk.
      if (match[0] === '\r' && match.index === this.buffer.length - 1) return;
      const line = this.buffer.slice(0, match.index);
      this.buffer = this.buffer.slice(match.index + match[0].length);
      this.line(line);
    }
  }

  private line(line: string): void {
    if (line === '') {
      if (this.data.length > 0 || this.event !== '') {
        this.on.event({
          event: this.event || 'message',
          data: this.data.join('\n'),
          id: this.hasId ? this.id : undefined,
        });
      }
      this.event = '';
      this.data = [];
      this.id = undefined;
      this.hasId = false;
      return;
    }
    if (line.startsWith(':')) {
      this.on.comment?.(line.slice(1).trim());
      return;
    }
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'event') this.event = value;
    else if (field === 'data') this.data.push(value);
    else if (field === 'id' && !value.includes('\0')) {
      this.id = value;
      this.hasId = true;
    } else if (field === 'retry' && /^\d+$/.test(value)) this.on.retry?.(Number(value));
  }
}

const asList = (v: string | readonly string[] | undefined): string | undefined =>
  v === undefined ? undefined : typeof v === 'string' ? v : v.join(',');

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** The single decode point of the stream: the server sends a signal event's webhook payload. */
function isPayload(v: unknown, event: WebhookEvent): v is WebhookPayload {
  return isRecord(v) && v.event === event && typeof v.timestamp === 'string' && isRecord(v.data);
}

/** Events read ahead of the consumer before reading pauses (the server then bounds its own buffer). */
const READ_AHEAD = 256;

/** Why a connection ended, and what the stream does next. */
type Ended =
  | { kind: 'dropped'; reason: string }
  | { kind: 'refused'; status: number; error: SignalApiError }
  | { kind: 'fatal'; error: Error };

const sleepUnlessAborted = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });

/**
 * `for await (const e of client.signals.stream({ type: 'premium' }))`: signal events and resets.
 * `lastEventId` is the id of the last event handed out: keep it to resume after a restart.
 * Ends (returns) when `signal` aborts or the loop breaks; throws a typed error when the key is
 * revoked or expires mid-stream (AuthenticationError), when opening is refused for good (401,
 * 403, 400) or stays rate limited past the retries (RateLimitError).
 */
export class SignalStream implements AsyncIterable<StreamEvent> {
  lastEventId: string | undefined;
  /** The server's `retry:` hint, in ms. */
  retryMs: number | undefined;
  /** Connections opened so far. */
  connections = 0;
  private readonly seen = new Set<string>();
  private readonly query: Record<string, string | undefined>;
  private started = false;

  constructor(
    private readonly transport: StreamTransport,
    params: StreamParams = {},
    private readonly options: StreamOptions = {},
  ) {
    this.query = { type: asList(params.type), events: asList(params.events) };
    this.lastEventId = params.lastEventId;
  }

  [Symbol.asyncIterator](): AsyncGenerator<StreamEvent> {
    if (this.started) throw new TypeError('a SignalStream is iterated once; open another to read again');
    this.started = true;
    return this.run();
  }

  /** Remembers an id handed out; false when it was handed out before. */
  private firstTime(id: string): boolean {
    if (this.seen.has(id)) return false;
    this.seen.add(id);
    if (this.seen.size > REMEMBERED_IDS) {
      const oldest = this.seen.values().next();
      if (!oldest.done) this.seen.delete(oldest.value);
    }
    return true;
  }

  private async *run(): AsyncGenerator<StreamEvent> {
    const { signal } = this.options;
    const idleTimeoutMs = this.options.idleTimeoutMs ?? 45_000;
    const maxBackoffMs = this.options.maxBackoffMs ?? 30_000;
    /** Connections in a row that brought nothing (no event, no heartbeat). */
    let failures = 0;
    /** 429s in a row at opening. */
    let refusals = 0;
    while (!signal?.aborted) {
      const queue: StreamEvent[] = [];
      let wake: (() => void) | undefined;
      let ended: Ended | undefined;
      let progressed = false;
      const notify = () => {
        wake?.();
        wake = undefined;
      };
      /** The reader, paused while the consumer has READ_AHEAD events to take. */
      let resume: (() => void) | undefined;
      const controller = new AbortController();
      const onAbort = () => controller.abort();
      signal?.addEventListener('abort', onAbort, { once: true });
      let idle: NodeJS.Timeout | undefined;
      const touch = () => {
        clearTimeout(idle);
        idle = setTimeout(() => {
          ended ??= { kind: 'dropped', reason: `no data for ${idleTimeoutMs} ms` };
          controller.abort();
          notify();
        }, idleTimeoutMs);
      };
      const end = (e: Ended) => {
        ended ??= e;
        controller.abort();
        notify();
        resume?.();
        resume = undefined;
      };
      const parser = new SseParser({
        retry: (ms) => {
          this.retryMs = ms;
        },
        comment: () => {
          progressed = true;
        },
        event: (e) => {
          progressed = true;
          if (isSignalEvent(e.event)) {
            const data = parseJson(e.data);
            if (e.id === undefined || !isPayload(data, e.event)) return;
            queue.push({ event: e.event, id: e.id, data });
          } else if (e.event === 'reset') {
            const data = parseJson(e.data);
            const body = isRecord(data) ? data : {};
            queue.push({
              event: 'reset',
              id: e.id,
              data: {
                reason: String(body.reason ?? 'unknown'),
                message: String(body.message ?? ''),
                resync: String(body.resync ?? '/v1/signals'),
              },
            });
          } else if (e.event === 'overflow' || e.event === 'reconnect') {
            end({ kind: 'dropped', reason: e.event });
          } else if (e.event === 'error') {
            const data = parseJson(e.data);
            end({ kind: 'fatal', error: this.transport.toError(401, { error: data }, new Headers()) });
          }
          notify();
        },
      });

      this.connections += 1;
      const headers: Record<string, string> = {
        ...this.transport.headers(),
        accept: 'text/event-stream',
        'cache-control': 'no-cache',
      };
      if (this.lastEventId !== undefined) headers['last-event-id'] = this.lastEventId;
      const reading = (async () => {
        touch();
        let res: Response;
        try {
          res = await this.transport.fetch(this.transport.url(SIGNAL_STREAM_PATH, this.query), {
            method: 'GET',
            headers,
            signal: controller.signal,
          });
        } catch (err) {
          return end({ kind: 'dropped', reason: String(err) });
        }
        if (!res.ok) {
          const text = await res.text().catch(() => '');
          return end({
            kind: 'refused',
            status: res.status,
            error: this.transport.toError(res.status, parseJson(text), res.headers),
          });
        }
        if (!(res.headers.get('content-type') ?? '').startsWith('text/event-stream') || !res.body) {
          await res.body?.cancel().catch(() => undefined);
          return end({
            kind: 'fatal',
            error: new SignalStreamError(`GET ${SIGNAL_STREAM_PATH}: not an event stream`),
          });
        }
        refusals = 0;
        const decoder = new TextDecoder();
        const reader = res.body.getReader();
        try {
          for (;;) {
            const { done, value } = await reader.read();
            if (done) break;
            touch();
            parser.push(decoder.decode(value, { stream: true }));
            if (ended) break;
            while (queue.length >= READ_AHEAD && !ended && !controller.signal.aborted) {
              clearTimeout(idle);
              await new Promise<void>((r) => {
                resume = r;
              });
              touch();
            }
          }
          end({ kind: 'dropped', reason: 'the server ended the stream' });
        } catch (err) {
          end({ kind: 'dropped', reason: String(err) });
        } finally {
          await reader.cancel().catch(() => undefined);
        }
      })();

      try {
        for (;;) {
          while (queue.length > 0) {
            const next = queue.shift()!;
            if (queue.length < READ_AHEAD / 2) {
              resume?.();
              resume = undefined;
            }
            if (next.event === 'reset') {
              if (next.id !== undefined) this.lastEventId = next.id;
              yield next;
            } else if (this.firstTime(next.id)) {
              this.lastEventId = next.id;
              yield next;
            }
          }
          if (ended || signal?.aborted) break;
          await new Promise<void>((resolve) => {
            wake = resolve;
          });
        }
      } finally {
        clearTimeout(idle);
        controller.abort();
        resume?.();
        signal?.removeEventListener('abort', onAbort);
        await reading;
      }
      if (signal?.aborted) return;
      const outcome: Ended = ended ?? { kind: 'dropped', reason: 'ended' };
      if (outcome.kind === 'fatal') throw outcome.error;
      let delayMs: number;
      let status: number | undefined;
      let error: Error;
      if (outcome.kind === 'refused') {
        status = outcome.status;
        error = outcome.error;
        const transient = status === 429 || status === 503 || status >= 500;
        if (!transient) throw outcome.error;
        if (status === 429) {
          refusals += 1;
          if (refusals > this.transport.maxRetries) throw outcome.error;
        }
        const retryAfter = outcome.error.retryAfter;
        if (retryAfter !== undefined && retryAfter * 1000 > this.transport.maxRetryDelayMs)
          throw outcome.error;
        failures += 1;
        delayMs = retryAfter !== undefined ? retryAfter * 1000 : this.backoff(failures, maxBackoffMs);
      } else {
        error = new SignalStreamError(`GET ${SIGNAL_STREAM_PATH}: ${outcome.reason}`);
        failures = progressed ? 1 : failures + 1;
        delayMs = this.backoff(failures, maxBackoffMs);
      }
      if (this.options.maxReconnects !== undefined && failures > this.options.maxReconnects) {
        throw status !== undefined
          ? error
          : new SignalStreamError(`GET ${SIGNAL_STREAM_PATH}: no data after ${failures} reconnects`);
      }
      this.transport.onRetry?.({
        method: 'GET',
        path: SIGNAL_STREAM_PATH,
        attempt: failures,
        delayMs,
        status,
        error,
      });
      await sleepUnlessAborted(delayMs, signal);
    }
  }

  /** The wait before reconnect `n` in a row: the server's `retry:` first, then doubling with jitter. */
  private backoff(n: number, maxMs: number): number {
    const base = this.retryMs ?? DEFAULT_RETRY_MS;
    if (n <= 1) return Math.min(base, maxMs);
    return Math.min(maxMs, Math.round(base * 2 ** (n - 1) * (0.8 + Math.random() * 0.4)));
  }
}
