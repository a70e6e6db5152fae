import { randomBytes, scrypt, timingSafeEqual } from 'node:crypto';

const N = 16384;
const R = 8;
const P = 1;
const LEN = 32;

function derive(password: string, salt: Buffer): Promise<Buffer> {
  return new Promise((resolve, reject) =>
    scrypt(password, salt, LEN, { N, r: R, p: P }, (err, key) => (err ? reject(err) : resolve(key))),
  );
}

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await derive(password, salt);
  return `scrypt$${N}$${R}$${P}$${salt.toString('base64url')}$${key.toString('base64url')}`;
}

/** Constant-time; a missing hash still spends the same work so timing says nothing about the email. */
export async function verifyPassword(password: string, stored: string | null): Promise<boolean> {
  const parts = (stored ?? '').split('$');
  const salt = parts.length === 6 ? Buffer.from(parts[4]!, 'base64url') : randomBytes(16);
  const expected = parts.length === 6 ? Buffer.from(parts[5]!, 'base64url') : randomBytes(LEN);
  const actual = await derive(password, salt);
  return actual.length === expected.length && timingSafeEqual(actual, expected) && parts.length === 6;
}
