import { monotonicFactory, ulid } from 'ulid';

const nextUlid = monotonicFactory();

/**
 * Sortable prefixed identifiers: `sig_…`, `evt_…`, `wh_…`, `dlv_…`, `key_…`, `acc_…`.
 * With `time` (backfills) the id sorts at that moment rather than after the last one made.
 */
export function newId(prefix: string, time?: number): string {
  return `${prefix}_${time === undefined ? nextUlid() : ulid(time)}`;
}

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

/** The time in ms an id made by `newId` carries: its ULID's first 10 characters (Crockford base32). */
export function idTimeMs(id: string): number {
  const ulidTime = id.slice(id.indexOf('_') + 1, id.indexOf('_') + 11);
  let ms = 0;
  for (const ch of ulidTime) ms = ms * 32 + CROCKFORD.indexOf(ch);
  return ms;
}
