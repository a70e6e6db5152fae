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

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(SALT);
  const key = await derive(password, salt, PASSWORD_COST);
  const { N, r, p } = PASSWORD_COST;
  return `scrypt$${N}$${r}$${p}$${salt.toString('base64url')}$${key.toString('base64url')}`;
}

/**
 * Constant-time, at the cost the hash was made with; a missing hash still spends today's cost,
 * so timing says nothing about whether the email exists.
 */
export async function verifyPassword(password: string, stored: string | null): Promise<boolean> {
  const parsed = parse(stored);
  const actual = await derive(password, parsed?.salt ?? randomBytes(SALT), parsed?.cost ?? PASSWORD_COST);
  const expected = parsed?.key ?? randomBytes(LEN);
  return parsed !== undefined && actual.length === expected.length && timingSafeEqual(actual, expected);
}

/** A hash made at a lower cost than today's: replace it at the next successful login. */
export function needsRehash(stored: string | null): boolean {
  const parsed = parse(stored);
  if (!parsed) return false;
  const { N, r, p } = parsed.cost;
  return N * r * p < PASSWORD_COST.N * PASSWORD_COST.r * PASSWORD_COST.p;
}
