import { AppError } from '@signal/service-kit';
import type { LoginResult } from '../domain/password-login.use-case';
import type { SessionCheck } from '../domain/sessions';

/** A refused login (or password change) as the error envelope says it. */
export function loginError(
  result: Exclude<LoginResult, { ok: true }>,
  unauthorized = 'Invalid email or password.',
): AppError {
  switch (result.code) {
    case 'UNAUTHORIZED':
      return new AppError('UNAUTHORIZED', unauthorized);
    case 'RATE_LIMITED':
      return new AppError('RATE_LIMIT_EXCEEDED', 'Too many failed logins: wait retry_after seconds.', {
        retryAfter: result.retryAfter,
      });
    case 'UNAVAILABLE':
      return new AppError('SERVICE_UNAVAILABLE', undefined, { retryAfter: 1 });
  }
}

/** A session that does not hold any more. */
export function sessionError(check: Exclude<SessionCheck, { ok: true }>): AppError {
  return check.code === 'UNAVAILABLE'
    ? new AppError('SERVICE_UNAVAILABLE', undefined, { retryAfter: 1 })
    : new AppError('UNAUTHORIZED', check.message);
}
