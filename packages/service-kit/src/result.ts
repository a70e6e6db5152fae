import type { ErrorCode } from '@signal/contracts';
import { AppError, type FieldProblem } from './app-error';

/**
 * Why a use case did not do what it was asked: a code from the one error table (ERROR_STATUS)
 * and the words a client reads. The domain returns it; `http/` decides the status and headers.
 */
export interface Failure<C extends ErrorCode = ErrorCode> {
  ok: false;
  code: C;
  message?: string;
  details?: FieldProblem[];
  /** Seconds after which the same request may succeed (SERVICE_UNAVAILABLE, rate limits). */
  retryAfter?: number;
  /** What went wrong underneath (a store's error), for the log of a 5xx; never sent to a client. */
  cause?: unknown;
}

export interface Success<T> {
  ok: true;
  value: T;
}

/** What a use case returns: its value, or a failure the client can act on. */
export type Result<T, C extends ErrorCode = ErrorCode> = Success<T> | Failure<C>;

export const succeed = <T>(value: T): Success<T> => ({ ok: true, value });

export function fail<C extends ErrorCode>(
  code: C,
  message?: string,
  extra: { details?: FieldProblem[]; retryAfter?: number; cause?: unknown } = {},
): Failure<C> {
  return { ok: false, code, ...(message !== undefined ? { message } : {}), ...extra };
}

/** For `http/` and CLIs: a failure as the error the one error middleware renders. */
export function failureError(failure: Failure): AppError {
  return new AppError(failure.code, failure.message, {
    details: failure.details,
    retryAfter: failure.retryAfter,
    cause: failure.cause,
  });
}

/** For `http/` and CLIs: the value, or the failure handed to the error middleware. */
export function valueOrThrow<T>(result: Result<T>): T {
  if (!result.ok) throw failureError(result);
  return result.value;
}
