import { randomInt } from 'node:crypto';
import { fillPath, ROUTES, SIGNAL_TYPES, type SignalType } from '@signal/contracts';
import { Pool } from 'undici';

/** One HTTP exchange of the load, as the client saw it. */
export interface Outcome {
  kind: 'list' | 'detail' | 'stats' | 'ingest' | 'transition';
  /** ms since the run started. */
  start: number;
  end: number;
  /** null: no response (refused, reset, timed out). */
  status: number | null;
  retryAfter: boolean;
  error?: string;
}

export type Transition = 'winner' | 'dead' | 'rugged';

export interface CreatedSignal {
  id: string;
  type: SignalType;
  transition?: Transition;
}

export interface LoadOptions {
  gatewayUrl: string;
  signalsUrl: string;
  apiKey: string;
  ingestToken: string;
  readsPerSecond: number;
  signalsPerSecond: number;
  /** Share of new signals that later move to winner, dead or rugged. */
  transitionShare: number;
  runId: string;
  clock: () => number;
}

const TRANSITIONS: Transition[] = ['winner', 'winner', 'dead', 'rugged'];
const REQUEST_TIMEOUT_MS = 15_000;
const MAX_READS_IN_FLIGHT = 400;
/** New signals are not started while this many are still being written (a producer's bound). */
const MAX_WRITES_IN_FLIGHT = 100;

function pick<T>(items: readonly T[]): T {
  return items[randomInt(items.length)]!;
}

/** A valid ingest body (the ingest API's schema), varied enough to spread over every filter. */
function signalBody(n: number, type: SignalType) {
  const entry = 10_000 + randomInt(1_000_000);
  return {
    token: {
      symbol: `CH${n}`,
      name: `Chaos token ${n}`,
      contract: `Chaos${String(n).padStart(12, '0')}pump`,
      age_hours: randomInt(1, 500) / 10,
      dex_paid: randomInt(2) === 1,
      socials: { twitter: 'https://x.com/chaos' },
    },
    metrics: {
      mcap_entry: entry,
      mcap_current: Math.round(entry * (0.5 + Math.random() * 3)),
      volume_24h: randomInt(1, 1_000_000),
      holders: randomInt(10, 5000),
      liquidity: randomInt(1000, 500_000),
    },
    type,
    is_premium: type === 'premium',
  };
}

/**
 * The chaos run's clients: public reads through the gateway at a fixed rate (open loop: a slow
 * response never slows the next request), and an ingest client that writes new signals at a fixed
 * rate and moves some of them later, retrying every write until it is accepted (with the same
 * Idempotency-Key, so a retried write cannot create a second signal), as a careful producer does.
 */
export class ChaosLoad {
  readonly outcomes: Outcome[] = [];
  readonly created: CreatedSignal[] = [];
  /** Writes refused with a 4xx other than the expected ones: a defect, listed in the report. */
  readonly rejected: string[] = [];
  private readonly gateway: Pool;
  private readonly signals: Pool;
  private readsInFlight = 0;
  /** When a read was not sent because MAX_READS_IN_FLIGHT were waiting (ms since the start). */
  readonly skippedReadsAt: number[] = [];
  /** When a new signal was not started because MAX_WRITES_IN_FLIGHT were still being written. */
  readonly skippedWritesAt: number[] = [];
  private writesInFlight = 0;
  private readonly pending = new Set<Promise<void>>();
  private timers: NodeJS.Timeout[] = [];
  private stopping = false;
  private n = 0;

  constructor(private readonly o: LoadOptions) {
    this.gateway = new Pool(o.gatewayUrl, { connections: 128, keepAliveTimeout: 10_000 });
    this.signals = new Pool(o.signalsUrl, { connections: 64, keepAliveTimeout: 10_000 });
  }

  start(): void {
    const tickMs = 50;
    let readDebt = 0;
    let ingestDebt = 0;
    this.timers.push(
      setInterval(() => {
        readDebt += (this.o.readsPerSecond * tickMs) / 1000;
        ingestDebt += (this.o.signalsPerSecond * tickMs) / 1000;
        for (; readDebt >= 1; readDebt -= 1) this.read();
        for (; ingestDebt >= 1; ingestDebt -= 1) {
          if (this.writesInFlight >= MAX_WRITES_IN_FLIGHT) {
            this.skippedWritesAt.push(this.o.clock());
            continue;
          }
          this.writesInFlight += 1;
          this.track(this.ingestOne().finally(() => (this.writesInFlight -= 1)));
        }
      }, tickMs),
    );
  }

  /** Stops new work; the writes already begun keep retrying until accepted (or `deadlineMs`). */
  async stop(deadlineMs: number): Promise<void> {
    for (const t of this.timers) clearInterval(t);
    this.timers = [];
    const deadline = Date.now() + deadlineMs;
    while (this.pending.size > 0 && Date.now() < deadline) await Promise.race([...this.pending, sleep(500)]);
    this.stopping = true;
    await Promise.race([Promise.allSettled([...this.pending]), sleep(REQUEST_TIMEOUT_MS + 1000)]);
  }

  async close(): Promise<void> {
    await Promise.all([this.gateway.close(), this.signals.close()]);
  }

  private track(p: Promise<void>): void {
    this.pending.add(p);
    void p.finally(() => this.pending.delete(p));
  }

  private async exchange(
    pool: Pool,
    kind: Outcome['kind'],
    method: 'GET' | 'POST',
    path: string,
    headers: Record<string, string>,
    body?: unknown,
  ): Promise<{ outcome: Outcome; json: unknown }> {
    const start = this.o.clock();
    try {
      const res = await pool.request({
        method,
        path,
        headers: body === undefined ? headers : { ...headers, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
        headersTimeout: REQUEST_TIMEOUT_MS,
        bodyTimeout: REQUEST_TIMEOUT_MS,
      });
      const text = await res.body.text();
      const outcome: Outcome = {
        kind,
        start,
        end: this.o.clock(),
        status: res.statusCode,
        retryAfter: res.headers['retry-after'] !== undefined,
      };
      this.outcomes.push(outcome);
      let json: unknown;
      try {
        json = JSON.parse(text);
      } catch {
        json = undefined;
      }
      return { outcome, json };
    } catch (err) {
      const e = err as { code?: string; name?: string };
      const outcome: Outcome = {
        kind,
        start,
        end: this.o.clock(),
        status: null,
        retryAfter: false,
        error: e.code ?? e.name ?? 'error',
      };
      this.outcomes.push(outcome);
      return { outcome, json: undefined };
    }
  }

  private read(): void {
    if (this.readsInFlight >= MAX_READS_IN_FLIGHT) {
      this.skippedReadsAt.push(this.o.clock());
      return;
    }
    const auth = { authorization: `Bearer ${this.o.apiKey}` };
    const roll = randomInt(100);
    let kind: Outcome['kind'];
    let path: string;
    if (roll < 50 || this.created.length === 0) {
      kind = 'list';
      path = pick([
        ROUTES.listSignals.path,
        `${ROUTES.listSignals.path}?type=${pick(SIGNAL_TYPES)}`,
        `${ROUTES.listSignals.path}?status=winner&limit=50`,
        `${ROUTES.listSignals.path}?type=${pick(SIGNAL_TYPES)}&status=active&page=2`,
      ]);
    } else if (roll < 80) {
      kind = 'detail';
      path = fillPath(ROUTES.getSignal.path, { signal_id: pick(this.created).id });
    } else {
      kind = 'stats';
      path = `${ROUTES.getStats.path}?period=${pick(['24h', '7d', 'all'])}${randomInt(2) ? `&type=${pick(SIGNAL_TYPES)}` : ''}`;
    }
    this.readsInFlight += 1;
    this.track(
      this.exchange(this.gateway, kind, 'GET', path, auth).then(
        () => void (this.readsInFlight -= 1),
        () => void (this.readsInFlight -= 1),
      ),
    );
  }

  private ingestAuth() {
    return { authorization: `Bearer ${this.o.ingestToken}` };
  }

  /** Retries until accepted; the wait honours Retry-After (the services send 1 s). */
  private async untilAccepted(
    kind: Outcome['kind'],
    path: string,
    body: unknown,
    headers: Record<string, string>,
    accepted: (status: number, attempt: number) => boolean,
  ): Promise<unknown> {
    for (let attempt = 1; !this.stopping; attempt++) {
      const { outcome, json } = await this.exchange(this.signals, kind, 'POST', path, headers, body);
      if (outcome.status !== null && accepted(outcome.status, attempt)) return json;
      if (outcome.status !== null && outcome.status < 500) {
        this.rejected.push(`${kind} ${path}: ${outcome.status} ${JSON.stringify(json).slice(0, 200)}`);
        return undefined;
      }
      await sleep(outcome.retryAfter ? 1000 : 250);
    }
    return undefined;
  }

  private async ingestOne(): Promise<void> {
    const n = ++this.n;
    const type = pick(SIGNAL_TYPES);
    const json = await this.untilAccepted(
      'ingest',
      '/internal/signals',
      signalBody(n, type),
      { ...this.ingestAuth(), 'idempotency-key': `${this.o.runId}-${n}` },
      (status) => status === 201 || status === 200,
    );
    const id = (json as { data?: { id?: unknown } } | undefined)?.data?.id;
    if (typeof id !== 'string') return;
    const signal: CreatedSignal = { id, type };
    this.created.push(signal);
    if (Math.random() >= this.o.transitionShare || this.stopping) return;
    const to = pick(TRANSITIONS);
    await sleep(1000 + randomInt(5000));
    // active → winner|dead|rugged is the only move this client makes, so a 409 on a retry means
    // an earlier attempt was applied and its response lost (the process died or a proxy cut it).
    const moved = await this.untilAccepted(
      'transition',
      `/internal/signals/${id}/status`,
      { status: to },
      this.ingestAuth(),
      (status, attempt) => status === 200 || (status === 409 && attempt > 1),
    );
    if (moved !== undefined) signal.transition = to;
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
