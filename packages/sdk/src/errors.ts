/** The errors a call throws: one class per kind of API error code, and the transport's own. */
import type { ErrorCode } from './types.js';

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

/** A JSON object (not an array, not null). */
export const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

export function toApiError(status: number, body: unknown, headers: Headers): SignalApiError {
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
