/** Same-origin JSON calls with the session cookie and the CSRF token; errors keep the API's envelope. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly requestId?: string,
    /** The fields the server refused, each with its message (shown under its control). */
    readonly details: readonly { field: string; message: string }[] = [],
    /** Seconds the API asked to wait before asking again (`retry_after`: a 429, some 503s). */
    readonly retryAfter?: number,
  ) {
    super(message);
  }
}

/**
 * A refusal as the pages say it: the request id only when the server failed (a 5xx), where
 * support needs it; an ordinary refusal (a wrong password, a field to fix) is its message alone.
 */
export function refusalText(err: ApiError): string {
  return err.status >= 500 && err.requestId ? `${err.message} (request ${err.requestId})` : err.message;
}

/** A wait in seconds as people read it: "45 s", "2 min 8 s", "3 h 5 min". */
export function waitText(seconds: number): string {
  const s = Math.max(0, Math.ceil(seconds));
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min${s % 60 ? ` ${s % 60} s` : ''}`;
  const minutes = Math.floor((s % 3600) / 60);
  return `${Math.floor(s / 3600)} h${minutes ? ` ${minutes} min` : ''}`;
}

/**
 * A refusal's message with the wait it names: the API's messages point a client at the
 * `retry_after` field, which a person never sees, so the dashboard puts the time in its place.
 */
export function messageWithWait(message: string, retryAfter: number | undefined): string {
  // Some messages give the wait already ("Retry after 26 s.").
  if (retryAfter === undefined || message.includes(`${retryAfter} s`)) return message;
  const wait = waitText(retryAfter);
  for (const field of ['the number of seconds in retry_after', 'retry_after seconds'])
    if (message.includes(field)) return message.replace(field, wait);
  return `${message} Try again in ${wait}.`;
}

/**
 * The message to show: the server's, plus the details it does not already say. A detail that
 * repeats the message ("url must use https" beside "url: url must use https") is dropped.
 */
export function errorMessage(
  message: string,
  details: readonly { field: string; message: string }[],
): string {
  const extra = details
    .filter((d) => !message.includes(d.message))
    .map((d) => (d.message.startsWith(d.field) ? d.message : `${d.field}: ${d.message}`));
  return extra.length ? `${message} (${extra.join('; ')})` : message;
}

let csrfToken = '';
export function setCsrf(token: string): void {
  csrfToken = token;
}

type Json = Record<string, unknown>;
export const isRecord = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

export interface Envelope<T> {
  data: T;
  meta?: {
    total: number;
    page: number;
    per_page: number;
    total_pages: number;
    next_cursor?: string | null;
    prev_cursor?: string | null;
  };
}

export interface CallOptions {
  /** Sent as Idempotency-Key: the server responds to a repeat with what the first request made. */
  idempotencyKey?: string;
}

export async function call<T>(
  method: string,
  path: string,
  body?: unknown,
  options: CallOptions = {},
): Promise<Envelope<T>> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (method !== 'GET') headers['x-csrf-token'] = csrfToken;
  if (options.idempotencyKey) headers['idempotency-key'] = options.idempotencyKey;
  let res: Response;
  try {
    res = await fetch(path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      credentials: 'same-origin',
      cache: 'no-store',
    });
  } catch {
    throw new ApiError(0, 'NETWORK', 'The server could not be reached. Check your connection and retry.');
  }
  // A renewed session comes with its new CSRF token.
  const renewed = res.headers.get('x-csrf-token');
  if (renewed) csrfToken = renewed;
  const json: unknown = await res.json().catch(() => undefined);
  if (res.ok && isRecord(json) && json.success === true) {
    // The one decode point: the gateway's own contract (its tests validate these shapes).
    return json as unknown as Envelope<T>;
  }
  throw apiError(res.status, json);
}

/**
 * The error a refused request's body describes (the API's envelope), as the pages show it; its
 * message says the wait (`retry_after`) unless `sayWait` is false (a page that names its own).
 */
export function apiError(status: number, json: unknown, sayWait = true): ApiError {
  const err = isRecord(json) && isRecord(json.error) ? json.error : {};
  const details = Array.isArray(err.details)
    ? err.details.filter(isRecord).map((d) => ({ field: String(d.field), message: String(d.message) }))
    : [];
  const retryAfter = typeof err.retry_after === 'number' ? err.retry_after : undefined;
  const said = typeof err.message === 'string' ? err.message : `Request failed (${status}).`;
  const message = sayWait ? messageWithWait(said, retryAfter) : said;
  return new ApiError(
    status,
    typeof err.code === 'string' ? err.code : `HTTP_${status}`,
    errorMessage(message, details),
    typeof err.request_id === 'string' ? err.request_id : undefined,
    details,
    retryAfter,
  );
}

export const get = <T>(path: string) => call<T>('GET', path).then((e) => e.data);
export const post = <T>(path: string, body?: unknown, options?: CallOptions) =>
  call<T>('POST', path, body ?? {}, options).then((e) => e.data);
export const patch = <T>(path: string, body: unknown) => call<T>('PATCH', path, body).then((e) => e.data);
export const del = <T>(path: string) => call<T>('DELETE', path).then((e) => e.data);

/**
 * The Idempotency-Key of one form's submissions. A submission whose response never came (network
 * error, timeout, 5xx) may have been made: sending it again with the same body reuses its key,
 * so the server responds with what it made instead of making a second one. A new body, or a
 * submission that succeeded, starts over with a fresh key.
 */
export class SubmissionKey<B = unknown> {
  private key: string | undefined;
  private body = '';
  private sent: B | undefined;

  for(body: B): string {
    const json = JSON.stringify(body);
    if (this.key === undefined || json !== this.body) {
      this.key = crypto.randomUUID();
      this.body = json;
    }
    this.sent = body;
    return this.key;
  }

  /** The body of the submission not answered yet (none: the next one is new). */
  pending(): B | undefined {
    return this.key === undefined ? undefined : this.sent;
  }

  /** The submission got its response: the next one is a new submission. */
  done(): void {
    this.key = undefined;
  }
}

/** A SubmissionKey for each thing acted on (a delivery re-sent, a key rolled), kept across redraws. */
export class SubmissionKeys<B = unknown> {
  private readonly keys = new Map<string, SubmissionKey<B>>();

  of(id: string): SubmissionKey<B> {
    let key = this.keys.get(id);
    if (!key) {
      key = new SubmissionKey<B>();
      this.keys.set(id, key);
    }
    return key;
  }
}
