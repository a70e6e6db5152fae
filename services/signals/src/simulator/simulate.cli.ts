import type { CreateSignalInput, SignalDetail } from '@signal/contracts';
import { Pool } from 'undici';
import { newToken, outcome, rng } from './market';

/**
 * Feeds realistic memecoin-style signals through the authenticated ingest API.
 *   pnpm simulate --backfill 500            historical signals over 30 days, resolved, with progress
 *   pnpm simulate --count 100 --rate 2      live: new signals, market moves, status changes
 * Env: SIGNALS_URL (default http://127.0.0.1:4001), INGEST_TOKEN.
 */
interface Options {
  url: string;
  token: string;
  backfill: number;
  count: number;
  rate: number;
  seed: number;
  quiet: boolean;
}

function parseArgs(argv: string[]): Options {
  const get = (name: string, fallback: string) => {
    const i = argv.indexOf(`--${name}`);
    return i >= 0 && argv[i + 1] !== undefined ? argv[i + 1]! : fallback;
  };
  const num = (name: string, fallback: number) => {
    const v = Number(get(name, String(fallback)));
    if (!Number.isFinite(v) || v < 0) {
      process.stderr.write(`simulate: --${name} must be a non-negative number\n`);
      process.exit(2);
    }
    return v;
  };
  const token = process.env.INGEST_TOKEN ?? '';
  if (!token) {
    process.stderr.write('simulate: INGEST_TOKEN is required\n');
    process.exit(2);
  }
  return {
    url: get('url', process.env.SIGNALS_URL ?? 'http://127.0.0.1:4001'),
    token,
    backfill: num('backfill', 0),
    count: num('count', 0),
    rate: num('rate', 1),
    seed: num('seed', Date.now() % 1_000_000),
    quiet: argv.includes('--quiet'),
  };
}

class Ingest {
  private readonly pool: Pool;
  constructor(private readonly o: Options) {
    this.pool = new Pool(new URL(o.url).origin, { connections: 8 });
  }
  async call<T>(method: 'POST' | 'PATCH', path: string, body: unknown, idempotencyKey?: string): Promise<T> {
    const res = await this.pool.request({
      method,
      path,
      headers: {
        'content-type': 'application/json',
        authorization: `Bearer ${this.o.token}`,
        ...(idempotencyKey ? { 'idempotency-key': idempotencyKey } : {}),
      },
      body: JSON.stringify(body),
    });
    const text = await res.body.text();
    if (res.statusCode >= 300)
      throw new Error(`${method} ${path} → ${res.statusCode}: ${text.slice(0, 300)}`);
    return (JSON.parse(text) as { data: T }).data;
  }
  close() {
    return this.pool.close();
  }
}

function progress(label: string, done: number, total: number, started: number) {
  const pct = total ? Math.floor((done / total) * 100) : 100;
  const bar = '#'.repeat(Math.floor(pct / 4)).padEnd(25, '.');
  const rate = Math.round(done / Math.max(0.001, (Date.now() - started) / 1000));
  process.stderr.write(`\r${label} [${bar}] ${pct}% ${done}/${total} (${rate}/s)`);
}

/** Resolves a created signal: market moves to its fate, then the status transition. */
async function resolve(ingest: Ingest, r: () => number, s: SignalDetail) {
  const { status, multiple } = outcome(r);
  const peak = Math.max(multiple, 1 + r() * (status === 'winner' ? multiple : 1.5));
  await ingest.call('PATCH', `/internal/signals/${s.id}`, {
    metrics: {
      mcap_ath: Math.round(s.metrics.mcap_entry * peak),
      mcap_current: Math.round(s.metrics.mcap_entry * multiple),
      holders: Math.round(s.metrics.holders * (0.5 + multiple)),
    },
    performance: { time_to_ath_hours: Math.round(r() * 72 * 10) / 10 },
  });
  if (status !== 'active') await ingest.call('POST', `/internal/signals/${s.id}/status`, { status });
}

async function backfill(ingest: Ingest, o: Options, r: () => number) {
  const started = Date.now();
  const BATCH = 200;
  let done = 0;
  for (let i = 0; i < o.backfill; i += BATCH) {
    const n = Math.min(BATCH, o.backfill - i);
    const batch: CreateSignalInput[] = Array.from({ length: n }, () =>
      newToken(r, new Date(Date.now() - r() * 30 * 86_400_000)),
    );
    const result = await ingest.call<{ ids: string[] }>(
      'POST',
      '/internal/signals/bulk',
      { signals: batch },
      `backfill-${o.seed}-${i}`,
    );
    // Resolve each new historical signal (a few requests each), 8 at a time.
    const ids = result.ids;
    for (let j = 0; j < ids.length; j += 8) {
      await Promise.all(
        ids.slice(j, j + 8).map((id, k) => {
          const input = batch[j + k]!;
          const detail = {
            id,
            metrics: { mcap_entry: input.metrics.mcap_entry, holders: input.metrics.holders },
          } as SignalDetail;
          return resolve(ingest, r, detail);
        }),
      );
    }
    done += n;
    if (!o.quiet) progress('backfill', done, o.backfill, started);
  }
  if (!o.quiet) process.stderr.write('\n');
}

async function live(ingest: Ingest, o: Options, r: () => number) {
  const open: SignalDetail[] = [];
  const interval = 1000 / Math.max(o.rate, 0.001);
  for (let i = 0; i < o.count || o.count === 0; i++) {
    const s = await ingest.call<SignalDetail>(
      'POST',
      '/internal/signals',
      newToken(r),
      `live-${o.seed}-${i}`,
    );
    open.push(s);
    process.stdout.write(`signal.new ${s.id} ${s.token.symbol} (${s.type}) mcap ${s.metrics.mcap_entry}\n`);
    // Some older open signals move; a few resolve.
    for (const x of open.splice(0, open.length > 5 && r() < 0.5 ? 1 : 0)) {
      await resolve(ingest, r, x);
      process.stdout.write(`resolved ${x.id}\n`);
    }
    await new Promise((res) => setTimeout(res, interval));
  }
}

async function main() {
  const o = parseArgs(process.argv.slice(2));
  if (!o.backfill && !o.count && !process.argv.includes('--forever')) {
    process.stderr.write(
      'usage: simulate [--backfill N] [--count N | --forever] [--rate PER_SECOND] [--seed S] [--url URL] [--quiet]\n',
    );
    process.exit(2);
  }
  const r = rng(o.seed);
  const ingest = new Ingest(o);
  try {
    if (o.backfill) await backfill(ingest, o, r);
    if (o.count || process.argv.includes('--forever')) await live(ingest, o, r);
  } finally {
    await ingest.close();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`\nsimulate: ${(err as Error).message}\n`);
  process.exit(1);
});
