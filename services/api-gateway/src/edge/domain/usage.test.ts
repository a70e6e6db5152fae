import { signupEnabled } from '../../dashboard/http/dashboard';
import { outcomeOf } from './usage';

describe('usage outcomes', () => {
  it('when a response finishes, then its status maps to served, unauthorized, rate_limited or server_error', () => {
    expect([200, 201, 202, 304, 400, 403, 404, 409, 413].map(outcomeOf)).toEqual(Array(9).fill('served'));
    expect(outcomeOf(401)).toBe('unauthorized');
    expect(outcomeOf(429)).toBe('rate_limited');
    expect([500, 502, 503, 504].map(outcomeOf)).toEqual(Array(4).fill('server_error'));
  });
});

describe('sign-up switch', () => {
  it('when SIGNUP_ENABLED is unset, then sign-up is open outside production and closed in production', () => {
    expect(signupEnabled({ NODE_ENV: 'development', SIGNUP_ENABLED: undefined })).toBe(true);
    expect(signupEnabled({ NODE_ENV: 'test', SIGNUP_ENABLED: undefined })).toBe(true);
    expect(signupEnabled({ NODE_ENV: 'production', SIGNUP_ENABLED: undefined })).toBe(false);
  });
  it('when SIGNUP_ENABLED is set, then it wins in every environment', () => {
    expect(signupEnabled({ NODE_ENV: 'production', SIGNUP_ENABLED: 'true' })).toBe(true);
    expect(signupEnabled({ NODE_ENV: 'development', SIGNUP_ENABLED: 'false' })).toBe(false);
  });
});
