/** The client: one method per public operation, retries, idempotency keys, pagination. */
import { randomUUID } from 'node:crypto';
import type {
  SignalListItem,
  SignalDetail,
  ListMeta,
  DeliveryListMeta,
  PageMeta,
  Statistics,
  WebhookSubscription,
  WebhookSubscriptionWithSecret,
  Delivery,
  DeliveryDetail,
  WebhookTestInput,
  RecoverWebhookResult,
  RecoverWebhookPage,
  ApiKey,
  ApiKeyWithSecret,
  RolledApiKey,
  RollApiKeyInput,
  RenameApiKeyInput,
  Session,
  Page,
  ListSignalsParams,
  StatsParams,
  CreateWebhookInput,
  UpdateWebhookInput,
  ListWebhooksParams,
  ListDeliveriesParams,
  ListApiKeysParams,
  CreateApiKeyInput,
  ChangePasswordInput,
  RateLimit,
  RetryEvent,
} from './types.js';
import { NotFoundError, SignalTimeoutError, SignalConnectionError, isRecord, toApiError } from './errors.js';
import { networkFailure } from './network.js';
import { type StreamParams, type StreamOptions, type StreamTransport, SignalStream } from './stream.js';
import { OPERATIONS, pathOf } from './generated/routes.js';

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
   * their Idempotency-Key (webhooks: create, rotateSecret, sendTest, recover, deliveries.retry;
   * account.createKey, account.rollKey) when one is sent. Default 3.
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
 * working), or a page query; it returns the page's subscriptions (newest first) either way. One
 * object holding both (`{ page, signal }`, from untyped code) is taken as both.
 */
export interface ListWebhooks {
  (opts?: RequestOptions): Promise<WebhookSubscription[]>;
  (params: ListWebhooksParams, opts?: RequestOptions): Promise<WebhookSubscription[]>;
}

/**
 * `webhooks.recover`: request options alone (the first page, as callers written before paging
 * do), or the page to go on from. One object holding both (`{ cursor, idempotencyKey }`, from
 * untyped code) is taken as both.
 */
export interface RecoverWebhook {
  (webhookId: string, since: string | Date, opts?: RequestOptions): Promise<RecoverWebhookResult>;
  (
    webhookId: string,
    since: string | Date,
    page: RecoverWebhookPage,
    opts?: RequestOptions,
  ): Promise<RecoverWebhookResult>;
}

/**
 * `webhooks.sendTest`: request options alone (callers that do not choose the test event), or the
 * event. One object holding both (`{ event, idempotencyKey }`, from untyped code) is taken as both.
 */
export interface SendWebhookTest {
  (webhookId: string, opts?: RequestOptions): Promise<Delivery>;
  (webhookId: string, input: WebhookTestInput, opts?: RequestOptions): Promise<Delivery>;
}

/**
 * The request options of `webhooks.list`, `sendTest` and `recover`, whose first object may be
 * their query or body, their request options, or (from untyped code) both at once: the options
 * found in it, with those of the last argument. Sorting the keys, rather than taking an object
 * with any option key for options only, keeps a body field beside them (`{ event,
 * idempotencyKey }` sends the event). An option given in both places with two values is refused:
 * no choice between them would be the one the caller meant.
 */
function requestOptions(
  call: string,
  inline: RequestOptions,
  opts: RequestOptions | undefined,
): RequestOptions | undefined {
  const { idempotencyKey, signal, timeoutMs } = inline;
  if (idempotencyKey === undefined && signal === undefined && timeoutMs === undefined) return opts;
  const twice = (['idempotencyKey', 'signal', 'timeoutMs'] as const).filter(
    (k) => inline[k] !== undefined && opts?.[k] !== undefined && opts[k] !== inline[k],
  );
  if (twice.length > 0)
    throw new TypeError(
      `${call}: ${twice.join(', ')} given twice, in the first object and in the request options, ` +
        'with different values: pass it once. Nothing was sent.',
    );
  return {
    idempotencyKey: opts?.idempotencyKey ?? idempotencyKey,
    signal: opts?.signal ?? signal,
    timeoutMs: opts?.timeoutMs ?? timeoutMs,
  };
}

/**
 * A Date as the API reads times. An invalid one (`new Date('nope')`) is refused naming its
 * parameter, before anything is sent, where toISOString would throw a bare RangeError.
 */
function isoTime(name: string, value: Date): string {
  if (Number.isNaN(value.getTime()))
    throw new TypeError(
      `${name} is an invalid Date: pass a valid Date or an ISO 8601 time such as 2026-01-15T09:30:00Z. Nothing was sent.`,
    );
  return value.toISOString();
}

/** The `X-RateLimit-*` headers of a response, when it carries all three as whole numbers. */
function rateLimitOf(headers: Headers): RateLimit | undefined {
  const read = (name: string) => {
    const value = headers.get(`x-ratelimit-${name}`)?.trim();
    return value !== undefined && /^\d+$/.test(value) ? Number(value) : undefined;
  };
  const [limit, remaining, reset] = [read('limit'), read('remaining'), read('reset')];
  if (limit === undefined || remaining === undefined || reset === undefined) return undefined;
  return { limit, remaining, reset };
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * The POST routes whose server answers a repeat of the same Idempotency-Key and request as the
 * first request did (`Idempotent-Replayed: true`) and a key reused for another request with 409
 * IDEMPOTENCY_CONFLICT, as path patterns. Only these are sent again when their response is lost:
 * the repeat cannot make a second webhook or key, rotate a secret twice or send a test twice.
 */
const DEDUPLICATED_POSTS: readonly RegExp[] = Object.values(OPERATIONS)
  .filter((o) => o.method === 'POST' && o.idempotencyKey)
  .map((o) => new RegExp(`^${o.path.replace(/\{[^}]+\}/g, '[^/]+')}$`));

/** The fixed words of the API's paths (`stream`, `deliveries`, …): never an id. */
const ROUTE_WORDS: ReadonlySet<string> = new Set(
  Object.values(OPERATIONS).flatMap((o) => o.path.split('/').filter((w) => w !== '' && !w.startsWith('{'))),
);

/**
 * The ids of a path, refused before anything is sent when one names no resource: an id that is
 * empty, `.` or `..` (or not a string) would make the URL name another one once resolved — the
 * list, or the webhook a delivery belongs to — and one that is a word of the paths another
 * route (`signals.get('stream')` would open the live stream); the call would return that as if
 * it were the one asked for. It is the NotFoundError the API gives a malformed id.
 */
function ids<P extends Record<string, string>>(params: P): P {
  for (const [name, id] of Object.entries(params)) {
    const value: unknown = id;
    if (
      typeof value !== 'string' ||
      value === '' ||
      value === '.' ||
      value === '..' ||
      ROUTE_WORDS.has(value)
    )
      throw new NotFoundError(
        404,
        'NOT_FOUND',
        `${name} ${JSON.stringify(value) ?? String(value)} is not an id: nothing was sent.`,
        undefined,
        undefined,
        undefined,
      );
  }
  return params;
}

export class SignalClient {
  private readonly baseUrl: string;
  private readonly timeoutMs: number;
  private readonly maxRetries: number;
  private readonly maxRetryDelayMs: number;
  private readonly maxRetryWait: number;
  private readonly retryBaseDelayMs: number;
  private readonly fetchImpl: typeof fetch;
  private sessionToken: string | undefined;
  private latestRateLimit: RateLimit | undefined;

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

  /**
   * The `X-RateLimit-*` headers (`limit`, `remaining`, `reset` in Unix seconds) of the latest
   * response that carried them, an error's included: pace a client by it before it meets a
   * `429`. Undefined until a response carried them, as Python's `client.rate_limit` is None.
   */
  get rateLimit(): RateLimit | undefined {
    return this.latestRateLimit;
  }

  // -- signals ---------------------------------------------------------------------------------

  readonly signals = {
    /** One page (operationId listSignals). */
    list: (params: ListSignalsParams = {}, opts?: RequestOptions): Promise<Page<SignalListItem, ListMeta>> =>
      this.cursorPage<SignalListItem>(pathOf('listSignals'), { ...params }, opts),
    /** Every matching signal, newest first, following `meta.next_cursor`. */
    iterate: (params: Omit<ListSignalsParams, 'page'> = {}, opts?: RequestOptions) =>
      this.iterateCursor<SignalListItem>(pathOf('listSignals'), { ...params }, opts),
    /** operationId getSignal */
    get: async (signalId: string, opts?: RequestOptions): Promise<SignalDetail> =>
      this.data<SignalDetail>('GET', pathOf('getSignal', ids({ signal_id: signalId })), {}, undefined, opts),
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
      this.data<Statistics>('GET', pathOf('getStats'), { ...params }, undefined, opts),
  };

  // -- webhooks --------------------------------------------------------------------------------

  /** operationId listWebhooks: one page, the first 100 without `page`/`limit`. */
  private readonly listWebhooks: ListWebhooks = async (
    first: ListWebhooksParams & RequestOptions = {},
    opts?: RequestOptions,
  ): Promise<WebhookSubscription[]> => {
    const options = requestOptions('webhooks.list', first, opts);
    const query = { page: first.page, limit: first.limit };
    return this.data<WebhookSubscription[]>('GET', pathOf('listWebhooks'), query, undefined, options);
  };

  /** operationId sendWebhookTest: webhook.test, or a sample of `input.event` marked `test: true`. */
  private readonly sendTest: SendWebhookTest = async (
    webhookId: string,
    first: WebhookTestInput & RequestOptions = {},
    opts?: RequestOptions,
  ): Promise<Delivery> => {
    const path = pathOf('sendWebhookTest', ids({ webhook_id: webhookId }));
    const options = requestOptions('webhooks.sendTest', first, opts);
    const body = first.event === undefined ? undefined : { event: first.event };
    return this.data<Delivery>('POST', path, {}, body, options);
  };

  private readonly recover: RecoverWebhook = async (
    webhookId: string,
    since: string | Date,
    first: RecoverWebhookPage & RequestOptions = {},
    opts?: RequestOptions,
  ): Promise<RecoverWebhookResult> => {
    const path = pathOf('recoverWebhook', ids({ webhook_id: webhookId }));
    const options = requestOptions('webhooks.recover', first, opts);
    // The page's fields as given (an unknown one is the server's to refuse), without the options.
    const { idempotencyKey: _key, signal: _signal, timeoutMs: _timeout, ...page } = first;
    const body = { since: since instanceof Date ? isoTime('since', since) : since, ...page };
    return this.data<RecoverWebhookResult>('POST', path, {}, body, options);
  };

  readonly webhooks = {
    create: (input: CreateWebhookInput, opts?: RequestOptions) =>
      this.data<WebhookSubscriptionWithSecret>('POST', pathOf('createWebhook'), {}, input, opts),
    list: this.listWebhooks,
    /** One page of subscriptions with its `meta` (total, pages), as Python's `webhooks.list`. */
    listPage: (
      params: ListWebhooksParams = {},
      opts?: RequestOptions,
    ): Promise<Page<WebhookSubscription, PageMeta>> =>
      this.page<WebhookSubscription>('GET', pathOf('listWebhooks'), { ...params }, opts),
    /** Every subscription, newest first, page by page. */
    iterate: (params: Omit<ListWebhooksParams, 'page'> = {}, opts?: RequestOptions) =>
      this.iteratePages<WebhookSubscription>(pathOf('listWebhooks'), { ...params }, opts),
    get: async (webhookId: string, opts?: RequestOptions) =>
      this.data<WebhookSubscription>(
        'GET',
        pathOf('getWebhook', ids({ webhook_id: webhookId })),
        {},
        undefined,
        opts,
      ),
    update: async (webhookId: string, input: UpdateWebhookInput, opts?: RequestOptions) =>
      this.data<WebhookSubscription>(
        'PATCH',
        pathOf('updateWebhook', ids({ webhook_id: webhookId })),
        {},
        input,
        opts,
      ),
    delete: async (webhookId: string, opts?: RequestOptions) =>
      this.data<WebhookSubscription>(
        'DELETE',
        pathOf('deleteWebhook', ids({ webhook_id: webhookId })),
        {},
        undefined,
        opts,
      ),
    rotateSecret: async (webhookId: string, opts?: RequestOptions) =>
      this.data<WebhookSubscriptionWithSecret>(
        'POST',
        pathOf('rotateWebhookSecret', ids({ webhook_id: webhookId })),
        {},
        undefined,
        opts,
      ),
    sendTest: this.sendTest,
    /**
     * operationId recoverWebhook: attempts now every failed or pending delivery created since
     * `since`, one page per call (at most `limit`, 100 by default): pass the result's
     * `next_cursor` as `cursor` until it is null. Returns how many were queued (0 on a repeat).
     */
    recover: this.recover,
    deliveries: {
      list: async (
        webhookId: string,
        params: ListDeliveriesParams = {},
        opts?: RequestOptions,
      ): Promise<Page<Delivery, DeliveryListMeta>> => {
        const path = pathOf('listWebhookDeliveries', ids({ webhook_id: webhookId }));
        const { data, meta } = await this.request<Delivery[]>(
          'GET',
          path,
          { ...params },
          undefined,
          opts,
          'apiKey',
        );
        if (!meta || !('prev_cursor' in meta))
          throw new SignalConnectionError(`${path}: the response has no cursor meta`);
        return { data, meta };
      },
      /**
       * Every delivery, newest first, following `meta.next_cursor`: deliveries made during the
       * walk do not shift it, so none comes twice.
       */
      iterate: (webhookId: string, params: Omit<ListDeliveriesParams, 'page'> = {}, opts?: RequestOptions) =>
        this.iterateCursor<Delivery>(
          pathOf('listWebhookDeliveries', ids({ webhook_id: webhookId })),
          { ...params },
          opts,
        ),
      /** One delivery with its attempts. */
      get: async (webhookId: string, deliveryId: string, opts?: RequestOptions) =>
        this.data<DeliveryDetail>(
          'GET',
          pathOf('getWebhookDelivery', ids({ webhook_id: webhookId, delivery_id: deliveryId })),
          {},
          undefined,
          opts,
        ),
      retry: async (webhookId: string, deliveryId: string, opts?: RequestOptions) =>
        this.data<Delivery>(
          'POST',
          pathOf('retryWebhookDelivery', ids({ webhook_id: webhookId, delivery_id: deliveryId })),
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
        pathOf('login'),
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
        pathOf('logout'),
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
      const session = await this.data<Session>('POST', pathOf('changePassword'), {}, input, opts, 'session');
      this.sessionToken = session.token;
      return session;
    },
    /**
     * operationId listApiKeys: one page of keys, newest first (the first 100 without
     * `page`/`limit`); `listKeysPage` adds its `meta`, `iterateKeys` walks every page.
     */
    listKeys: (params: ListApiKeysParams = {}, opts?: RequestOptions) =>
      this.data<ApiKey[]>('GET', pathOf('listApiKeys'), { ...params }, undefined, opts, 'session'),
    /** One page of keys with its `meta` (total, pages). */
    listKeysPage: (params: ListApiKeysParams = {}, opts?: RequestOptions): Promise<Page<ApiKey, PageMeta>> =>
      this.page<ApiKey>('GET', pathOf('listApiKeys'), { ...params }, opts, 'session'),
    /** Every key of the account, newest first, page by page. */
    iterateKeys: (params: Omit<ListApiKeysParams, 'page'> = {}, opts?: RequestOptions) =>
      this.iteratePages<ApiKey>(pathOf('listApiKeys'), { ...params }, opts, 'session'),
    createKey: (input: CreateApiKeyInput, opts?: RequestOptions) =>
      this.data<ApiKeyWithSecret>('POST', pathOf('createApiKey'), {}, input, opts, 'session'),
    /**
     * operationId rollApiKey: a new key now (`created.key`, shown only here); the old one revoked
     * at once (`overlap_seconds: 0`) or working that much longer. Sent with an Idempotency-Key,
     * so a retry after a lost answer gets the same new key.
     */
    rollKey: (keyId: string, input: RollApiKeyInput, opts?: RequestOptions) =>
      this.data<RolledApiKey>(
        'POST',
        pathOf('rollApiKey', ids({ key_id: keyId })),
        {},
        input,
        opts,
        'session',
      ),
    /** operationId renameApiKey: a new name; the key's secret, expiry and status stay. */
    renameKey: (keyId: string, input: RenameApiKeyInput, opts?: RequestOptions) =>
      this.data<ApiKey>('PATCH', pathOf('renameApiKey', ids({ key_id: keyId })), {}, input, opts, 'session'),
    revokeKey: async (keyId: string, opts?: RequestOptions) =>
      this.data<ApiKey>(
        'DELETE',
        pathOf('revokeApiKey', ids({ key_id: keyId })),
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
    auth: Auth = 'apiKey',
  ): Promise<Page<T, PageMeta>> {
    const envelope = await this.request<T[]>(method, path, query, undefined, opts, auth);
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

  private async *iteratePages<T>(
    path: string,
    query: Query,
    opts?: RequestOptions,
    auth: Auth = 'apiKey',
  ): AsyncGenerator<T> {
    for (let page = 1; ; page += 1) {
      const { data, meta } = await this.page<T>('GET', path, { ...query, page }, opts, auth);
      yield* data;
      if (data.length === 0 || page >= meta.total_pages) return;
    }
  }

  private url(path: string, query: Query): string {
    const u = new URL(this.baseUrl + path);
    for (const [k, v] of Object.entries(query)) {
      if (v === undefined || v === null) continue;
      u.searchParams.set(k, v instanceof Date ? isoTime(k, v) : String(v));
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
  ): Promise<{ data: T; meta?: ListMeta | DeliveryListMeta | PageMeta }> {
    const headers = this.headers(method, body, opts, auth);
    const url = this.url(path, query);
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const timeoutMs = opts?.timeoutMs ?? this.timeoutMs;
    const deduplicated =
      method === 'POST' &&
      headers['idempotency-key'] !== undefined &&
      DEDUPLICATED_POSTS.some((p) => p.test(path));
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
      let text: string;
      const call = attemptSignal(opts?.signal, timeoutMs);
      try {
        res = await this.fetchImpl(url, { method, headers, body: payload, signal: call.signal });
        // The body within the same attempt's time: a response whose body stalls is a timeout too.
        text = await res.text();
      } catch (err) {
        call.done();
        if (opts?.signal?.aborted) throw err;
        const name = typeof err === 'object' && err !== null && 'name' in err ? String(err.name) : '';
        const timedOut = name === 'TimeoutError' || name === 'AbortError';
        const error = timedOut
          ? new SignalTimeoutError(`${method} ${path}: no complete response within ${timeoutMs} ms`)
          : new SignalConnectionError(`${method} ${path}: ${networkFailure(err, this.baseUrl)}`, {
              cause: err,
            });
        // A POST that got no response may have happened: it is repeated only where the server
        // responds to the repeat with what the first made (429/503 prove it was not processed).
        const safe = method !== 'POST' || deduplicated;
        if (safe && (await waitToRetry(attempt, error))) continue;
        throw error;
      }
      call.done();
      this.latestRateLimit = rateLimitOf(res.headers) ?? this.latestRateLimit;
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
