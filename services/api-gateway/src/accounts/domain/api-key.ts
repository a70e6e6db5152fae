import { createHmac, hash, randomBytes } from 'node:crypto';
import { API_KEY_PREFIX } from '@signal/contracts';

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const BODY_LENGTH = 43; // 43 base62 characters ≈ 256 bits
const CHECK_LENGTH = 6;
const KEY_PATTERN = new RegExp(`^${API_KEY_PREFIX}[0-9A-Za-z]{${BODY_LENGTH + CHECK_LENGTH}}$`);

function base62(bytes: Buffer, length: number): string {
  let n = BigInt(`0x${bytes.toString('hex')}`);
  let out = '';
  for (let i = 0; i < length; i++) {
    out = ALPHABET[Number(n % 62n)]! + out;
    n /= 62n;
  }
  return out;
}

const CHECK_MODULUS = 62 ** CHECK_LENGTH; // < 2^36

/**
 * The last 6 base62 digits of the first 8 bytes of SHA-256(body), read as a big-endian integer:
 * (2^64-bit value) mod 62^6, computed in 16-bit steps so every intermediate stays an exact
 * double (it runs on every request; the key generator's BigInt path would cost more). One-shot
 * `crypto.hash`: no Hash object per request.
 */
export function checksum(body: string): string {
  const digest = hash('sha256', body, 'buffer');
  const hi = digest.readUInt32BE(0);
  const lo = digest.readUInt32BE(4);
  let r = (hi * 65_536 + (lo >>> 16)) % CHECK_MODULUS;
  r = (r * 65_536 + (lo & 0xffff)) % CHECK_MODULUS;
  let out = '';
  for (let i = 0; i < CHECK_LENGTH; i++) {
    out = ALPHABET[r % 62]! + out;
    r = Math.floor(r / 62);
  }
  return out;
}

/** `sk_live_` + 256 random bits in base62 + a 6-character checksum (typos and junk fail before any lookup). */
export function generateApiKey(): string {
  const body = base62(randomBytes(40), BODY_LENGTH);
  return `${API_KEY_PREFIX}${body}${checksum(body)}`;
}

/** Prefix, length and alphabet of a key (no hashing). */
export function hasApiKeyShape(key: string): boolean {
  return KEY_PATTERN.test(key);
}

/** Does a key of that shape carry its own checksum? (a typo or made-up key does not) */
export function hasValidChecksum(key: string): boolean {
  const rest = key.slice(API_KEY_PREFIX.length);
  return checksum(rest.slice(0, BODY_LENGTH)) === rest.slice(BODY_LENGTH);
}

export function isWellFormedApiKey(key: string): boolean {
  return hasApiKeyShape(key) && hasValidChecksum(key);
}

const HMAC_BLOCK = 64; // SHA-256's block size

/** The pepper's HMAC pads, prepared once: a process has one pepper. */
interface HmacPads {
  pepper: string;
  /** (pepper ⊕ ipad) followed by room for the key. */
  inner: Buffer;
  /** (pepper ⊕ opad) followed by room for the inner digest. */
  outer: Buffer;
  /** The inner pad with the last key length's room: every key has one length, so made once. */
  innerView: Buffer;
}
let pads: HmacPads | undefined;

function padsFor(pepper: string): HmacPads {
  if (pads?.pepper === pepper) return pads;
  let secret = Buffer.from(pepper, 'utf8');
  if (secret.length > HMAC_BLOCK) secret = hash('sha256', secret, 'buffer');
  const inner = Buffer.alloc(HMAC_BLOCK + 256);
  const outer = Buffer.alloc(HMAC_BLOCK + 32);
  for (let i = 0; i < HMAC_BLOCK; i++) {
    const byte = secret[i] ?? 0;
    inner[i] = byte ^ 0x36;
    outer[i] = byte ^ 0x5c;
  }
  pads = { pepper, inner, outer, innerView: inner.subarray(0, HMAC_BLOCK) };
  return pads;
}

/**
 * Keyed hash stored instead of the key; lookups go by this value: HMAC-SHA256(pepper, key) in
 * base64url. It runs on every request, so it is computed here as RFC 2104 defines it, with two
 * one-shot `crypto.hash` calls over pads prepared once, instead of an HMAC object per request
 * (`createHmac`), which costs more CPU on the hot path (docs/benchmarks.md). The same value as
 * `createHmac` (unit-tested against it). The key's bytes are wiped from the shared buffer once
 * hashed.
 */
export function hashApiKey(key: string, pepper: string): string {
  const p = padsFor(pepper);
  const { inner, outer } = p;
  if (Buffer.byteLength(key, 'utf8') > inner.length - HMAC_BLOCK)
    return createHmac('sha256', pepper).update(key).digest('base64url');
  const written = inner.write(key, HMAC_BLOCK, 'utf8');
  if (p.innerView.length !== HMAC_BLOCK + written) p.innerView = inner.subarray(0, HMAC_BLOCK + written);
  hash('sha256', p.innerView, 'buffer').copy(outer, HMAC_BLOCK);
  inner.fill(0, HMAC_BLOCK, HMAC_BLOCK + written);
  return hash('sha256', outer, 'base64url');
}

/** What lists show: enough to recognise a key, useless to use it. */
export function displayPrefix(key: string): string {
  return key.slice(0, API_KEY_PREFIX.length + 6);
}
