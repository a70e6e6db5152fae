import { createHash } from 'node:crypto';
import { TEST_INTERNAL_KEYS } from '@signal/test-kit';
import { configSchema } from '../../config';
import { checksum } from './api-key';
import { PASSWORD_COST, TEST_ONLY_PASSWORD_COST, scryptPasswords } from './password';
import { SecretSealer } from './sealed-secret';

describe('API key checksum', () => {
  /** The checksum's definition, in BigInt: the last 6 base62 digits of the digest's first 8 bytes. */
  function reference(body: string): string {
    const alphabet = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
    let n = BigInt(`0x${createHash('sha256').update(body).digest().subarray(0, 8).toString('hex')}`);
    let out = '';
    for (let i = 0; i < 6; i++) {
      out = alphabet[Number(n % 62n)]! + out;
      n /= 62n;
    }
    return out;
  }
  it('when computed without BigInt, then it equals the BigInt definition for every body tried', () => {
    for (let i = 0; i < 2000; i++) {
      const body = createHash('sha256').update(String(i)).digest('base64url').slice(0, 43);
      expect(checksum(body)).toBe(reference(body));
    }
  });
});

describe('sealed secrets', () => {
  it('when a secret is sealed, then only the same pepper and purpose open it, and any change is refused', () => {
    const sealer = new SecretSealer('pepper-0123456789abcdef0123456789', 'purpose');
    const sealed = sealer.seal('sk_live_secret');
    expect(sealed).not.toContain('secret');
    expect(sealer.open(sealed)).toBe('sk_live_secret');
    expect(new SecretSealer('pepper-0123456789abcdef0123456789', 'other').open(sealed)).toBeUndefined();
    expect(new SecretSealer('another-pepper-0123456789abcdef01', 'purpose').open(sealed)).toBeUndefined();
    // The second-to-last character changed (the test once looked at the last one: 1 run in 64
    // "tampered" nothing and failed).
    const tampered = `${sealed.slice(0, -2)}${sealed.at(-2) === 'A' ? 'B' : 'A'}${sealed.slice(-1)}`;
    expect(tampered).not.toBe(sealed);
    expect(sealer.open(tampered)).toBeUndefined();
  });
});

describe('password hashes', () => {
  it('when a hash was made at a lower cost than today, then it is due for a rehash; today’s is not', () => {
    const owasp = scryptPasswords(PASSWORD_COST);
    expect(owasp.needsRehash('scrypt$16384$8$1$c2FsdA$a2V5')).toBe(true);
    expect(owasp.needsRehash('scrypt$32768$8$3$c2FsdA$a2V5')).toBe(false);
    expect(owasp.needsRehash(null)).toBe(false);
  });

  it("when the test suite's cost made a hash, then the OWASP cost would replace it at the next login", () => {
    expect(scryptPasswords(PASSWORD_COST).needsRehash('scrypt$1024$8$1$c2FsdA$a2V5')).toBe(true);
    expect(scryptPasswords(TEST_ONLY_PASSWORD_COST).needsRehash('scrypt$1024$8$1$c2FsdA$a2V5')).toBe(false);
  });

  it('when a password is hashed, then it verifies, another does not, and a missing hash never does', async () => {
    const fast = scryptPasswords(TEST_ONLY_PASSWORD_COST);
    const stored = await fast.hash('correct horse');
    expect(stored).toMatch(/^scrypt\$1024\$8\$1\$/);
    await expect(fast.verify('correct horse', stored)).resolves.toBe(true);
    await expect(fast.verify('correct hors', stored)).resolves.toBe(false);
    await expect(fast.verify('correct horse', null)).resolves.toBe(false);
  });
});

describe('gateway settings', () => {
  const base = {
    MONGO_URL: 'mongodb://127.0.0.1:27017',
    REDIS_URL: 'redis://127.0.0.1:6379',
    INTERNAL_JWT_PRIVATE_KEY: TEST_INTERNAL_KEYS.privateKey,
    API_KEY_PEPPER: 'p'.repeat(32),
    SESSION_JWT_SECRET: 's'.repeat(32),
    SIGNALS_URL: 'http://127.0.0.1:4001',
    STATS_URL: 'http://127.0.0.1:4002',
    WEBHOOKS_URL: 'http://127.0.0.1:4003',
  };
  it("when the test suite's password cost is asked for outside NODE_ENV=test, then the settings are refused", () => {
    for (const NODE_ENV of ['production', 'development']) {
      const r = configSchema.safeParse({ ...base, NODE_ENV, PASSWORD_HASHING: 'fast-tests-only' });
      expect(r.success).toBe(false);
      expect(r.error?.issues.map((i) => i.path[0])).toContain('PASSWORD_HASHING');
    }
    expect(
      configSchema.parse({ ...base, NODE_ENV: 'test', PASSWORD_HASHING: 'fast-tests-only' }).PASSWORD_HASHING,
    ).toBe('fast-tests-only');
    expect(configSchema.parse({ ...base, NODE_ENV: 'production' }).PASSWORD_HASHING).toBe('owasp');
  });
  it('when the default plan allows fewer requests a day than a minute, then the settings are refused', () => {
    const r = configSchema.safeParse({ ...base, DEFAULT_PLAN_PER_MINUTE: '100', DEFAULT_PLAN_PER_DAY: '10' });
    expect(r.success).toBe(false);
    expect(r.error?.issues.map((i) => `${String(i.path[0])} ${i.message}`)).toContain(
      'DEFAULT_PLAN_PER_DAY must be at least DEFAULT_PLAN_PER_MINUTE',
    );
    expect(
      configSchema.safeParse({ ...base, DEFAULT_PLAN_PER_MINUTE: '10', DEFAULT_PLAN_PER_DAY: '10' }).success,
    ).toBe(true);
  });
  it('when GATEWAY_WORKERS is auto, a number or junk, then it is one per core, that number, or refused', () => {
    expect(configSchema.parse({ ...base, GATEWAY_WORKERS: '3' }).GATEWAY_WORKERS).toBe(3);
    expect(configSchema.parse({ ...base, GATEWAY_WORKERS: 'auto' }).GATEWAY_WORKERS).toBeGreaterThanOrEqual(
      1,
    );
    expect(configSchema.parse(base).GATEWAY_WORKERS).toBe(1);
    expect(configSchema.safeParse({ ...base, GATEWAY_WORKERS: 'many' }).success).toBe(false);
  });
  it('when the pepper and the session secret are the same, then the settings are refused', () => {
    expect(configSchema.safeParse({ ...base, SESSION_JWT_SECRET: base.API_KEY_PEPPER }).success).toBe(false);
  });
});
