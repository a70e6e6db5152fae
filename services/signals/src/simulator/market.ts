import type { CreateSignalInput, SignalStatus, SignalType } from '@signal/contracts';

/** Small seeded PRNG (mulberry32) so a demo or a benchmark can be replayed exactly. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const PREFIXES = [
  'Moon',
  'Pepe',
  'Doge',
  'Shiba',
  'Bonk',
  'Wif',
  'Giga',
  'Turbo',
  'Based',
  'Frog',
  'Cat',
  'Chad',
  'Pump',
  'Degen',
  'Laser',
  'Rocket',
  'Sigma',
  'Bull',
  'Ape',
  'Whale',
];
const SUFFIXES = [
  'Inu',
  'Coin',
  'AI',
  'Cat',
  'Dog',
  'Mars',
  'King',
  'Lord',
  'Punk',
  'Bros',
  'Fi',
  'Verse',
  'X',
  'Wizard',
  'Hat',
  'Sol',
];
const BASE58 = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz';
const TYPES: Array<[SignalType, number]> = [
  ['new', 0.4],
  ['3d', 0.15],
  ['7d', 0.12],
  ['30d', 0.08],
  ['wallet', 0.15],
  ['premium', 0.1],
];

function pick<T>(r: () => number, items: readonly T[]): T {
  return items[Math.floor(r() * items.length)]!;
}
function weighted<T>(r: () => number, items: Array<[T, number]>): T {
  let x = r();
  for (const [v, w] of items) if ((x -= w) <= 0) return v;
  return items[items.length - 1]![0];
}
/** Log-normal-ish: most tokens small, a few large, as on a memecoin launchpad. */
function logUniform(r: () => number, min: number, max: number): number {
  return Math.round(Math.exp(Math.log(min) + r() * (Math.log(max) - Math.log(min))));
}

export function newToken(r: () => number, createdAt?: Date): CreateSignalInput {
  const name = `${pick(r, PREFIXES)} ${pick(r, SUFFIXES)}`;
  const symbol = name.replace(/[^A-Z]/g, '').slice(0, 5) + pick(r, ['', '', 'X', '2', 'AI']);
  const contract = Array.from({ length: 40 }, () => pick(r, [...BASE58])).join('') + 'pump';
  const handle = name.toLowerCase().replace(/\s+/g, '');
  const mcap = logUniform(r, 20_000, 5_000_000);
  const type = weighted(r, TYPES);
  return {
    token: {
      symbol,
      name,
      contract,
      age_hours: Math.round(r() * 72 * 10) / 10,
      dex_paid: r() < 0.6,
      // Every link present: the spec types each as a URL, so the demo feed never shows a null.
      socials: {
        twitter: `https://x.com/${handle}`,
        telegram: `https://t.me/${handle}`,
        website: `https://${handle}.fun`,
      },
    },
    metrics: {
      mcap_entry: mcap,
      mcap_current: mcap,
      volume_24h: Math.round(mcap * (0.2 + r() * 3)),
      holders: Math.round(50 + r() * 3000),
      liquidity: Math.round(mcap * (0.05 + r() * 0.25)),
    },
    type,
    is_premium: type === 'premium' || r() < 0.1,
    ...(createdAt ? { created_at: createdAt.toISOString() } : {}),
  };
}

/** Where a signal ends up: roughly a quarter win, most fade out, some rug (plus a few still active). */
export function outcome(r: () => number): { status: SignalStatus; multiple: number } {
  const status = weighted<SignalStatus>(r, [
    ['winner', 0.25],
    ['dead', 0.45],
    ['rugged', 0.12],
    ['active', 0.18],
  ]);
  const multiple =
    status === 'winner'
      ? 2 + r() * 18
      : status === 'rugged'
        ? 0.01 + r() * 0.1
        : status === 'dead'
          ? 0.1 + r() * 0.6
          : 0.6 + r() * 1.8;
  return { status, multiple: Math.round(multiple * 1000) / 1000 };
}
