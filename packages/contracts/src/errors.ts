import { z } from 'zod';

/** The one code → HTTP status table (Unkey's `codeToStatus`). */
export const ERROR_STATUS = {
  VALIDATION_ERROR: 400,
  UNAUTHORIZED: 401,
  KEY_EXPIRED: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  CONFLICT: 409,
  INVALID_STATUS_TRANSITION: 409,
  IDEMPOTENCY_CONFLICT: 409,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  RATE_LIMIT_EXCEEDED: 429,
  INTERNAL_ERROR: 500,
  SERVICE_UNAVAILABLE: 503,
  GATEWAY_TIMEOUT: 504,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;
export const ERROR_CODES = Object.keys(ERROR_STATUS).filter((k): k is ErrorCode => k in ERROR_STATUS);

export const DEFAULT_ERROR_MESSAGES: Record<ErrorCode, string> = {
  VALIDATION_ERROR: 'The request is invalid.',
  UNAUTHORIZED: 'Invalid or missing API key.',
  KEY_EXPIRED: 'This API key has expired. Generate a new key in your dashboard under API settings.',
  FORBIDDEN: 'You are not allowed to do this.',
  NOT_FOUND: 'The resource was not found.',
  METHOD_NOT_ALLOWED: 'This method is not allowed on this resource.',
  CONFLICT: 'The request conflicts with the current state of the resource.',
  INVALID_STATUS_TRANSITION: 'This status change is not allowed.',
  IDEMPOTENCY_CONFLICT:
    'This Idempotency-Key was used for a different request (another body or another resource).',
  PAYLOAD_TOO_LARGE: 'The request body is too large.',
  UNSUPPORTED_MEDIA_TYPE: 'Request bodies must be JSON (Content-Type: application/json).',
  RATE_LIMIT_EXCEEDED: 'Rate limit exceeded. Retry after the number of seconds in retry_after.',
  INTERNAL_ERROR: 'An internal error occurred.',
  SERVICE_UNAVAILABLE: 'The service is temporarily unavailable. Retry shortly.',
  GATEWAY_TIMEOUT: 'An upstream service did not respond in time.',
};

/**
 * A code's message when the error says nothing of its own: a rate limit's names its wait
 * (`retry_after`), so a client that shows the message (an SDK's error, the dashboard's banner)
 * says how long, not where to look for it.
 */
export function defaultErrorMessage(code: ErrorCode, retryAfter?: number): string {
  if (code === 'RATE_LIMIT_EXCEEDED' && retryAfter !== undefined)
    return `Rate limit exceeded. Retry after ${retryAfter} s.`;
  return DEFAULT_ERROR_MESSAGES[code];
}

/** Codes only the internal APIs return (ingestion's status changes); the public document leaves them out. */
export const INTERNAL_ERROR_CODES = ['INVALID_STATUS_TRANSITION'] as const satisfies readonly ErrorCode[];
export const PUBLIC_ERROR_CODES = ERROR_CODES.filter(
  (c) => !(INTERNAL_ERROR_CODES as readonly ErrorCode[]).includes(c),
);

const envelopeOf = (codes: readonly ErrorCode[]) =>
  z.object({
    success: z.literal(false),
    error: z.object({
      code: z.enum(codes as [ErrorCode, ...ErrorCode[]]),
      message: z.string(),
      request_id: z.string().optional(),
      retry_after: z
        .number()
        .int()
        .nonnegative()
        .optional()
        .describe('Seconds to wait (429, 503); the Retry-After header carries the same'),
      details: z.array(z.object({ field: z.string(), message: z.string() })).optional(),
    }),
  });

/** Any service's error response, internal APIs included. */
export const errorEnvelopeSchema = envelopeOf(ERROR_CODES);
/** The error response of the public API. */
export const publicErrorEnvelopeSchema = envelopeOf(PUBLIC_ERROR_CODES).meta({ id: 'ErrorEnvelope' });
export type ErrorEnvelope = z.infer<typeof errorEnvelopeSchema>;
