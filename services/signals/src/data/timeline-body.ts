import {
  SIGNAL_STATUSES,
  SIGNAL_TYPES,
  type SignalDetail,
  type SignalSnapshot,
  type SignalStatus,
  type SignalType,
} from '@signal/contracts';

/**
 * The detail body kept beside the timeline ids, as a positional JSON array: about half the
 * bytes of the keyed object, which is what keeps the index under 1 KiB per signal. Stored as
 * `version|status|<json>` so the index script can guard versions and move status sets
 * without decoding JSON in Lua.
 */
type Body = [
  symbol: string,
  name: string,
  contract: string,
  age_hours: number,
  dex_paid: 0 | 1,
  twitter: string | null,
  telegram: string | null,
  website: string | null,
  mcap_entry: number,
  mcap_current: number,
  mcap_ath: number,
  volume_24h: number,
  holders: number,
  liquidity: number,
  roi: number,
  ath_roi: number,
  time_to_ath_hours: number,
  type: SignalType,
  is_premium: 0 | 1,
  created_ms: number,
  updated_ms: number,
];

export function encodeBody(s: SignalSnapshot): string {
  const body: Body = [
    s.token.symbol,
    s.token.name,
    s.token.contract,
    s.token.age_hours,
    s.token.dex_paid ? 1 : 0,
    s.token.socials.twitter,
    s.token.socials.telegram,
    s.token.socials.website,
    s.metrics.mcap_entry,
    s.metrics.mcap_current,
    s.metrics.mcap_ath,
    s.metrics.volume_24h,
    s.metrics.holders,
    s.metrics.liquidity,
    s.performance.roi,
    s.performance.ath_roi,
    s.performance.time_to_ath_hours,
    s.type,
    s.is_premium ? 1 : 0,
    Date.parse(s.created_at),
    Date.parse(s.updated_at),
  ];
  return `${s.version}|${s.performance.status}|${JSON.stringify(body)}`;
}

const str = (v: unknown): string => (typeof v === 'string' ? v : '');
const num = (v: unknown): number => (typeof v === 'number' ? v : 0);
const strOrNull = (v: unknown): string | null => (typeof v === 'string' ? v : null);
const oneOf = <T extends string>(values: readonly T[], v: unknown, fallback: T): T =>
  values.find((x) => x === v) ?? fallback;

/** The stored body back to the public detail shape; undefined when it is not a body of ours. */
export function decodeDetail(id: string, stored: string): SignalDetail | undefined {
  const first = stored.indexOf('|');
  const second = stored.indexOf('|', first + 1);
  if (first < 0 || second < 0) return undefined;
  const status: SignalStatus = oneOf(SIGNAL_STATUSES, stored.slice(first + 1, second), 'active');
  let parsed: unknown;
  try {
    parsed = JSON.parse(stored.slice(second + 1));
  } catch {
    return undefined;
  }
  if (!Array.isArray(parsed) || parsed.length < 21) return undefined;
  const b: unknown[] = parsed;
  return {
    id,
    token: {
      symbol: str(b[0]),
      name: str(b[1]),
      contract: str(b[2]),
      age_hours: num(b[3]),
      dex_paid: b[4] === 1,
      socials: { twitter: strOrNull(b[5]), telegram: strOrNull(b[6]), website: strOrNull(b[7]) },
    },
    metrics: {
      mcap_entry: num(b[8]),
      mcap_current: num(b[9]),
      volume_24h: num(b[11]),
      holders: num(b[12]),
      liquidity: num(b[13]),
      mcap_ath: num(b[10]),
    },
    performance: { roi: num(b[14]), ath_roi: num(b[15]), status, time_to_ath_hours: num(b[16]) },
    type: oneOf(SIGNAL_TYPES, b[17], 'new'),
    is_premium: b[18] === 1,
    created_at: new Date(num(b[19])).toISOString(),
    updated_at: new Date(num(b[20])).toISOString(),
  };
}
