import { monotonicFactory, ulid } from 'ulid';

const nextUlid = monotonicFactory();

/**
 * Sortable prefixed identifiers: `sig_…`, `evt_…`, `wh_…`, `dlv_…`, `key_…`, `acc_…`.
 * With `time` (backfills) the id sorts at that moment rather than after the last one made.
 */
export function newId(prefix: string, time?: number): string {
  return `${prefix}_${time === undefined ? nextUlid() : ulid(time)}`;
}
