import { randomFillSync } from 'node:crypto';
import { monotonicFactory, ulid } from 'ulid';

/**
 * ulid's default generator calls `crypto.randomBytes(1)` for each of an id's 16 random
 * characters: 16 system calls per id, a real share of the CPU of a service that makes several ids
 * per signal during a bulk backfill. This one draws the same kernel randomness 4 KiB at a time.
 * A byte / 256 picks one of 32 characters uniformly (256 is a multiple of 32).
 */
const randomPool = Buffer.alloc(4096);
let randomPoolNext = randomPool.length;
function pooledRandom(): number {
  if (randomPoolNext === randomPool.length) {
    randomFillSync(randomPool);
    randomPoolNext = 0;
  }
  return randomPool.readUInt8(randomPoolNext++) / 256;
}

const nextUlid = monotonicFactory(pooledRandom);

/**
 * Sortable prefixed identifiers: `sig_…`, `evt_…`, `wh_…`, `dlv_…`, `key_…`, `acc_…`.
 * With `time` (backfills) the id sorts at that moment rather than after the last one made.
 */
export function newId(prefix: string, time?: number): string {
  return `${prefix}_${time === undefined ? nextUlid() : ulid(time, pooledRandom)}`;
}

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

/** The time in ms an id made by `newId` carries: its ULID's first 10 characters (Crockford base32). */
export function idTimeMs(id: string): number {
  const ulidTime = id.slice(id.indexOf('_') + 1, id.indexOf('_') + 11);
  let ms = 0;
  for (const ch of ulidTime) ms = ms * 32 + CROCKFORD.indexOf(ch);
  return ms;
}
