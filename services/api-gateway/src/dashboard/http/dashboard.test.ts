import { signupEnabled } from './dashboard';

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
