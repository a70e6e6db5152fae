import { randomBytes, scrypt, timingSafeEqual } from 'node:crypto';

interface ScryptCost {
  N: number;
  r: number;
  p: number;
}

/**
 * OWASP Password Storage Cheat Sheet (scrypt): N=2^17, r=8, p=1 or an equal-strength trade of
 * memory for passes; this is its N=2^15 (32 MiB), r=8, p=3 row — a third of the memory per
 * concurrent login, for the same work.
 */
export const PASSWORD_COST: ScryptCost = { N: 2 ** 15, r: 8, p: 3 };
const LEN = 32;
const SALT = 16;

const memoryOf = (c: ScryptCost): number => 128 * c.N * c.r;

function derive(password: string, salt: Buffer, cost: ScryptCost): Promise<Buffer> {
  return new Promise((resolve, reject) =>
    scrypt(password, salt, LEN, { ...cost, maxmem: 2 * memoryOf(cost) }, (err, key) =>
      err ? reject(err) : resolve(key),
    ),
  );
}

interface StoredHash {
  cost: ScryptCost;
  salt: Buffer;
  key: Buffer;
}

/** `scrypt$N$r$p$salt$key` (base64url); anything else is no hash. */
function parse(stored: string | null): StoredHash | undefined {
  const parts = (stored ?? '').split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') return undefined;
  const [N, r, p] = parts.slice(1, 4).map(Number);
  if (!N || !r || !p || memoryOf({ N, r, p }) > 4 * memoryOf(PASSWORD_COST)) return undefined;
  return {
    cost: { N, r, p },
    salt: Buffer.from(parts[4]!, 'base64url'),
    key: Buffer.from(parts[5]!, 'base64url'),
  };
}

/** Port: how passwords are hashed and checked (one chosen at start-up from PASSWORD_HASHING). */
export interface PasswordHasher {
  hash(password: string): Promise<string>;
  /**
   * Constant-time, at the cost the hash was made with; a missing hash still spends today's
   * cost, so timing says nothing about whether the email exists.
   */
  verify(password: string, stored: string | null): Promise<boolean>;
  /** A hash made at a lower cost than today's: replace it at the next successful login. */
  needsRehash(stored: string | null): boolean;
}

/**
 * The test suite's cost (1 MiB): the suite makes and logs into many accounts, and at the OWASP
 * cost every one of them would spend a third of a second of CPU. Config refuses it outside
 * NODE_ENV=test; the tests of the cost itself run at PASSWORD_COST.
 */
export const TEST_ONLY_PASSWORD_COST: ScryptCost = { N: 2 ** 10, r: 8, p: 1 };

export const passwordHashing = {
  owasp: PASSWORD_COST,
  'fast-tests-only': TEST_ONLY_PASSWORD_COST,
} as const;

export function scryptPasswords(cost: ScryptCost = PASSWORD_COST): PasswordHasher {
  const work = (c: ScryptCost) => c.N * c.r * c.p;
  return {
    async hash(password) {
      const salt = randomBytes(SALT);
      const key = await derive(password, salt, cost);
      return `scrypt$${cost.N}$${cost.r}$${cost.p}$${salt.toString('base64url')}$${key.toString('base64url')}`;
    },
    async verify(password, stored) {
      const parsed = parse(stored);
      const actual = await derive(password, parsed?.salt ?? randomBytes(SALT), parsed?.cost ?? cost);
      const expected = parsed?.key ?? randomBytes(LEN);
      return parsed !== undefined && actual.length === expected.length && timingSafeEqual(actual, expected);
    },
    needsRehash(stored) {
      const parsed = parse(stored);
      return parsed !== undefined && work(parsed.cost) < work(cost);
    },
  };
}
