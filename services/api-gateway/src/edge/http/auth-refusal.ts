import type { ErrorCode } from '@signal/contracts';
import type { AuthResult } from '../domain/authenticate.use-case';

export type AuthRefusal = Exclude<AuthResult, { ok: true }>;

const REFUSAL: Record<AuthRefusal['code'], ErrorCode> = {
  UNAUTHORIZED: 'UNAUTHORIZED',
  KEY_EXPIRED: 'KEY_EXPIRED',
  RATE_LIMITED: 'RATE_LIMIT_EXCEEDED',
  TOO_MANY_IN_FLIGHT: 'RATE_LIMIT_EXCEEDED',
  UNAVAILABLE: 'SERVICE_UNAVAILABLE',
};

/** What the error response says of a refused credential: its code, and what it adds to the code's default message. */
export function refusalOf(
  result: AuthRefusal,
  authorization: string | undefined,
): { code: ErrorCode; message?: string; retryAfter?: number } {
  const code = REFUSAL[result.code];
  switch (result.code) {
    case 'TOO_MANY_IN_FLIGHT':
      return {
        code,
        message: `This account already has ${result.limit} requests in progress, the most one gateway serves at once; retry when one completes.`,
        retryAfter: result.retryAfter,
      };
    case 'RATE_LIMITED':
    case 'UNAVAILABLE':
      return { code, retryAfter: result.retryAfter };
    case 'UNAUTHORIZED':
      // The key alone, without its scheme: the commonest first mistake, so it is named.
      if (authorization !== undefined && /^\s*sk_/.test(authorization))
        return {
          code,
          message:
            'The Authorization header needs the Bearer scheme: send `Authorization: Bearer <API key>`.',
        };
      // A session token from POST /v1/auth/login (a JWT): the next commonest, named too.
      if (authorization !== undefined && SESSION_TOKEN.test(authorization))
        return {
          code,
          message:
            'This is a session token from POST /v1/auth/login, which works on /v1/account and /v1/dashboard routes only: API routes take an API key (`Authorization: Bearer <API key>`; create one with POST /v1/account/keys or in the dashboard).',
        };
      return { code };
    default:
      return { code };
  }
}

/** A bearer JWT (three base64url parts, a JSON header first): what a login returns. */
const SESSION_TOKEN = /^\s*Bearer\s+eyJ[\w-]*\.[\w-]+\.[\w-]+\s*$/i;
