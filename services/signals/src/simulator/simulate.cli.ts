import { numberOption, parseCliArgs, readCommandLine, UsageError } from '@signal/service-kit';
import { signalDetailResponseSchema, type CreateSignalInput, type SignalDetail } from '@signal/contracts';
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
  forever: boolean;
  rate: number;
  seed: number;
  quiet: boolean;
  concurrency: number;
}

const USAGE =
  'usage: simulate [--backfill N] [--count N | --forever] [--rate PER_SECOND] [--seed S] [--url URL] [--concurrency N] [--quiet]';

function parseOptions(argv: string[]): Options {
  const values = parseCliArgs(argv, {
    url: { type: 'string' },
    backfill: { type: 'string' },
    count: { type: 'string' },
    rate: { type: 'string' },
    seed: { type: 'string' },
    concurrency: { type: 'string' },
    forever: { type: 'boolean' },
    quiet: { type: 'boolean' },
  });
  const whole = (name: 'backfill' | 'count' | 'seed', fallback: number) =>
    numberOption(values[name], name, { min: 0, fallback });
  const token = process.env.INGEST_TOKEN ?? '';
  if (!token) throw new UsageError('INGEST_TOKEN is required');
  const o: Options = {
    url: values.url ?? process.env.SIGNALS_URL ?? 'http://127.0.0.1:4001',
    token,
    backfill: whole('backfill', 0),
    count: whole('count', 0),
    forever: values.forever ?? false,
    rate: numberOption(values.rate, 'rate', { min: 0, whole: false, fallback: 1 }),
    seed: whole('seed', Date.now() % 1_000_000),
    quiet: values.quiet ?? false,
    concurrency: numberOption(values.concurrency, 'concurrency', { min: 1, fallback: 4 }),
  };
  if (!o.backfill && !o.count && !o.forever)
    throw new UsageError('nothing to do: give --backfill, --count or --forever');
  return o;
}

/** A response of the ingest API other than 2xx. */
class IngestRefused extends Error {
  constructor(
    readonly statusCode: number,
    message: string,
  ) {
    super(message);
  }
}

class Ingest {
  private readonly pool: Pool;
  constructor(private readonly o: Options) {
    this.pool = new Pool(new URL(o.url).origin, { connections: Math.max(8, o.concurrency) });
  }
  /** The response body, parsed JSON; callers that read it validate it with its contract schema. */
  async call(
    method: 'POST' | 'PATCH',
    path: string,
    body: unknown,
    idempotencyKey?: string,
  ): Promise<unknown> {
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
      throw new IngestRefused(res.statusCode, `${method} ${path} → ${res.statusCode}: ${text.slice(0, 300)}`);
    return JSON.parse(text);
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

/** A created signal's fate, drawn once: how its market moves, then its status transition. */
function resolution(r: () => number, s: SignalDetail) {
  const { status, multiple } = outcome(r);
  const peak = Math.max(multiple, 1 + r() * (status === 'winner' ? multiple : 1.5));
  return {
    move: {
      metrics: {
        mcap_ath: Math.round(s.metrics.mcap_entry * peak),
        mcap_current: Math.round(s.metrics.mcap_entry * multiple),
        holders: Math.round(s.metrics.holders * (0.5 + multiple)),
      },
      performance: { time_to_ath_hours: Math.round(r() * 72 * 10) / 10 },
    },
    status,
  };
}

/** A historical signal with its resolved state, in one create: no follow-up requests. */
function historicalSignal(r: () => number, createdAt: Date): CreateSignalInput {
  const input = newToken(r, createdAt);
  const { status, multiple } = outcome(r);
  const peak = Math.max(multiple, 1 + r() * (status === 'winner' ? multiple : 1.5));
  return {
    ...input,
    metrics: {
      ...input.metrics,
      mcap_current: Math.round(input.metrics.mcap_entry * multiple),
      mcap_ath: Math.round(input.metrics.mcap_entry * peak),
    },
    performance: { status, time_to_ath_hours: Math.round(r() * 72 * 10) / 10 },
  };
}

/**
 * History through the bulk ingest API: batches of 1,000 resolved signals, `concurrency` in
 * flight. Each batch has its own Idempotency-Key, so a re-run with the same seed adds nothing.
 *
 * The 30 days are replayed oldest first, as a feed of history arrives: signal i of N is created
 * at a random moment of the i-th N-th of the window. Ids carry their creation time, so every
 * store index on `_id` or `created_at` grows at its end. In random order, inserts would touch
 * pages all over indexes larger than the shared buffers of the PostgreSQL under the embedded
 * store, which would spend its time evicting and re-reading them.
 */
async function backfill(ingest: Ingest, o: Options, r: () => number) {
  const started = Date.now();
  const windowEnd = started - 120_000;
  const slice = (30 * 86_400_000) / o.backfill;
  const createdAt = (i: number) => new Date(windowEnd - (o.backfill - i - r()) * slice);
  const BATCH = 1000;
  let done = 0;
  let next = 0;
  const worker = async () => {
    while (next < o.backfill) {
      const from = next;
      const n = Math.min(BATCH, o.backfill - from);
      next += n;
      const batch = Array.from({ length: n }, (_, k) => historicalSignal(r, createdAt(from + k)));
      try {
        await ingest.call('POST', '/internal/signals/bulk', { signals: batch }, `backfill-${o.seed}-${from}`);
      } catch (err) {
        // 409: this seed's slot was backfilled by an earlier run (its signals dated from that
        // run's start, so the bodies differ): the data is there already.
        if (!(err instanceof IngestRefused && err.statusCode === 409)) throw err;
      }
      done += n;
      if (!o.quiet) progress('backfill', done, o.backfill, started);
    }
  };
  await Promise.all(Array.from({ length: o.concurrency }, worker));
  if (!o.quiet)
    process.stderr.write(`\nbackfill: ${done} signals in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
}

const sleep = (ms: number) => new Promise((res) => setTimeout(res, ms));

/** A failure that passes: the service down or restarting (no connection, 5xx), or a 429. */
const passing = (err: unknown) =>
  !(err instanceof IngestRefused) || err.statusCode >= 500 || err.statusCode === 429;

/**
 * Runs one step of the feed; with --forever a failure that passes is waited out (1 s, doubling
 * to 30 s) and the step tried again, so a restart of the service does not end the feed. Each step
 * is safe to repeat: a create carries its Idempotency-Key, a repeated PATCH sets the same values.
 */
async function step<T>(o: Options, what: string, run: () => Promise<T>): Promise<T> {
  for (let wait = 1000; ; wait = Math.min(wait * 2, 30_000)) {
    try {
      return await run();
    } catch (err) {
      if (!o.forever || !passing(err)) throw err;
      const reason = err instanceof Error ? err.message : String(err);
      process.stderr.write(`simulate: ${what}: ${reason}; trying again in ${wait / 1000} s\n`);
      await sleep(wait);
    }
  }
}

async function live(ingest: Ingest, o: Options, r: () => number) {
  const open: SignalDetail[] = [];
  const interval = 1000 / Math.max(o.rate, 0.001);
  for (let i = 0; i < o.count || o.count === 0; i++) {
    const token = newToken(r);
    const { data: s } = signalDetailResponseSchema.parse(
      await step(o, 'create', () => ingest.call('POST', '/internal/signals', token, `live-${o.seed}-${i}`)),
    );
    open.push(s);
    process.stdout.write(`signal.new ${s.id} ${s.token.symbol} (${s.type}) mcap ${s.metrics.mcap_entry}\n`);
    // Some older open signals move; a few resolve.
    for (const x of open.splice(0, open.length > 5 && r() < 0.5 ? 1 : 0)) {
      const fate = resolution(r, x);
      await step(o, `move ${x.id}`, () => ingest.call('PATCH', `/internal/signals/${x.id}`, fate.move));
      if (fate.status !== 'active') {
        const body = { status: fate.status };
        // A 409 on a repeat: the transition was made by the try whose response was lost.
        await step(o, `resolve ${x.id}`, () =>
          ingest.call('POST', `/internal/signals/${x.id}/status`, body).catch((err: unknown) => {
            if (err instanceof IngestRefused && err.statusCode === 409) return undefined;
            throw err;
          }),
        );
      }
      process.stdout.write(`resolved ${x.id}\n`);
    }
    await sleep(interval);
  }
}

async function main() {
  const o = readCommandLine({ name: 'simulate', usage: USAGE }, () => parseOptions(process.argv.slice(2)));
  const r = rng(o.seed);
  const ingest = new Ingest(o);
  try {
    if (o.backfill) await backfill(ingest, o, r);
    if (o.count || o.forever) await live(ingest, o, r);
  } finally {
    await ingest.close();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`\nsimulate: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
