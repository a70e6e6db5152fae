import { SIGNAL_TYPES, type SignalType } from '@signal/contracts';
import {
  exactnessViolations,
  infraUrls,
  startReceiver,
  uniqueName,
  type LimitedResponse,
  type Receiver,
} from '@signal/test-kit';
import mongoose from 'mongoose';
import { request } from 'undici';
import path from 'node:path';
import { ROOT, benchApiKey } from '../harness';
import { conformanceWalk, type ConformanceResult } from './conformance';
import { ChaosLoad, type CreatedSignal, type Outcome } from './load';
import { StreamClients } from './streams';
import { REPLICAS, startChaosSystem, type ChaosSystem, type Dependency, type ServiceName } from './system';

/**
 * `upgrade:x`: x's replicas replaced one at a time by `upgradeRoot`'s build (a rolling upgrade).
 * `node:x`: a fault of the `injectors` option (chaos/cluster.ts: a node of a cluster killed).
 */
export type FaultName =
  `kill:${ServiceName}` | `cut:${Dependency}` | `upgrade:${ServiceName}` | `node:${string}`;

/** A fault injected by the caller; resolves once what it broke is back. */
export type FaultInjector = (run: {
  system: ChaosSystem;
  accountId: string;
  outageMs: number;
}) => Promise<void>;

export const ALL_FAULTS: FaultName[] = [
  'kill:signals',
  'kill:stats',
  'kill:webhooks-api',
  'kill:webhooks-worker',
  'kill:gateway',
  'cut:redis',
  'cut:rabbitmq',
  'cut:mongo',
];

export interface ChaosOptions {
  seconds: number;
  readsPerSecond: number;
  signalsPerSecond: number;
  subscribers: number;
  /** Live-stream clients through the gateways (each takes every event). */
  streamClients: number;
  outageSeconds: number;
  faults: FaultName[];
  /** How long the end checks may wait for the system to catch up after the load stops. */
  drainSeconds: number;
  logDir: string;
  /** Retry spacing of webhook deliveries during the run (the default 10 s / 2 min / 15 min outlasts it). */
  webhookRetryDelaysMs: string;
  /** Deployables started from another checkout's build (`pnpm compat`: the release's worktree). */
  roots?: Partial<Record<ServiceName, string>>;
  /** The build `upgrade:` faults replace replicas with (default this checkout's). */
  upgradeRoot?: string;
  /** After the load: every API-key operation once, held to this checkout's OpenAPI document. */
  conformance?: boolean;
  /** Load kept after the last fault's outage, so recovery is seen under load (default 2 s). */
  tailSeconds?: number;
  /** The `node:` faults, by name (chaos/cluster.ts). */
  injectors?: Record<string, FaultInjector>;
  log?: (line: string) => void;
}

/** Clients get this long after a fault ends to find the dependency again (ioredis back-off ≤ 2 s, AMQP reconnect, MongoDB server selection). */
export const GRACE_MS = 5000;

export interface FaultReport {
  fault: FaultName;
  /** s since the load started. */
  at: number;
  /** s from the fault's start to its end: the cut's length, or kill → restarted process ready. */
  lasted: number;
  /** s from the fault's end until the last failed request it caused (0: none after the end). */
  recovery: number;
  /** 503 with Retry-After inside the window [start, end + grace]: the allowed response. */
  unavailableInside: number;
  /** 5xx other than 503-with-Retry-After inside the window (must be 0). */
  bad5xxInside: number;
  /** Requests without any response inside the window; allowed only from the killed process's own clients. */
  noResponseInside: number;
  noResponseAllowed: boolean;
  /** 5xx or no response after the window, before the next fault (must be 0). */
  failuresOutside: number;
  /** What failed from the fault's start to the next fault's, by kind and outcome. */
  failed: Record<string, number>;
}

export interface ChaosReport {
  options: Omit<ChaosOptions, 'log' | 'injectors'>;
  faults: FaultReport[];
  requests: Record<Outcome['kind'], Record<string, number>>;
  /** Reads not sent because 400 were already waiting: how many, and from when to when (s). */
  skippedReads: { count: number; from?: number; to?: number };
  /** New signals not started because 100 were still being written: how many, from when to when (s). */
  skippedWrites: { count: number; from?: number; to?: number };
  /** Start-ups that exited before ready and were started again, by service. */
  crashRestarts: Record<string, number>;
  /** Connections each balancer handed to each replica (by deployable; replica 1 first). */
  connectionsByReplica: Record<string, number[]>;
  /** Response time by kind (ms): p50, p99, max. */
  latency: Record<string, { p50: number; p99: number; max: number }>;
  /** Second by second (by start time): reads and writes sent, failed (5xx / no response), p99 ms. */
  timeline: Array<{
    t: number;
    reads: number;
    readsFailed: number;
    readP99: number;
    writes: number;
    writesFailed: number;
    writeP99: number;
  }>;
  rejectedWrites: string[];
  created: number;
  transitions: number;
  /** The end checks, each after waiting up to drainSeconds. */
  checks: {
    inList: number;
    listTotal: number;
    listDuplicates: number;
    inStats: number;
    statsWinners: number;
    expectedWinners: number;
    pairsExpected: number;
    pairsDelivered: number;
    /** Deliveries received more than once (at-least-once; receivers dedupe by webhook-id). */
    redeliveries: number;
    /** (event, subscription) pairs whose attempts came with more than one webhook-id (must be 0). */
    pairsWithSeveralIds: number;
    /** The conformance walk (`conformance` option): exchanges checked and what departed from the document. */
    conformance?: ConformanceResult;
    /** Live-stream clients: every signal event each must be handed exactly once. */
    streams: {
      clients: number;
      expectedEach: number;
      /** Events missing, summed over the clients (must be 0). */
      missing: number;
      /** Events handed out more than once, summed over the clients (must be 0). */
      duplicates: number;
      /** Connections each client opened (1 + its reconnects). */
      connections: number[];
      resets: number[];
      errors: string[];
    };
    storedSignals: number;
    distinctIdempotencyKeys: number;
    drainedInSeconds: number;
    /**
     * A burst on a key with a small per-minute limit, spread over both gateways at once after the
     * run: per minute window, exactly the limit admitted (test-kit's exactnessViolations).
     */
    limits: {
      limit: number;
      sent: number;
      admitted: number;
      /** Responses by gateway replica. */
      byGateway: number[];
      windows: number;
      violations: string[];
    };
  };
  violations: string[];
}

function seconds(ms: number | undefined): number | undefined {
  return ms === undefined ? undefined : Math.round(ms / 100) / 10;
}

function timeline(outcomes: Outcome[]): ChaosReport['timeline'] {
  const seconds = new Map<number, Outcome[]>();
  for (const o of outcomes) {
    const t = Math.floor(o.start / 1000);
    const list = seconds.get(t) ?? [];
    list.push(o);
    seconds.set(t, list);
  }
  const p99 = (os: Outcome[]) => {
    const ms = os.map((o) => o.end - o.start).sort((a, b) => a - b);
    return ms[Math.min(ms.length - 1, Math.floor(0.99 * ms.length))] ?? 0;
  };
  const isFailed = (o: Outcome) => o.status === null || o.status >= 500;
  return [...seconds.entries()]
    .sort(([a], [b]) => a - b)
    .map(([t, os]) => {
      const reads = os.filter((o) => o.kind === 'list' || o.kind === 'detail' || o.kind === 'stats');
      const writes = os.filter((o) => o.kind === 'ingest' || o.kind === 'transition');
      return {
        t,
        reads: reads.length,
        readsFailed: reads.filter(isFailed).length,
        readP99: p99(reads),
        writes: writes.length,
        writesFailed: writes.filter(isFailed).length,
        writeP99: p99(writes),
      };
    });
}

function latencyByKind(outcomes: Outcome[]): ChaosReport['latency'] {
  const byKind = new Map<string, number[]>();
  for (const o of outcomes) {
    const list = byKind.get(o.kind) ?? [];
    list.push(o.end - o.start);
    byKind.set(o.kind, list);
  }
  const out: ChaosReport['latency'] = {};
  for (const [kind, ms] of byKind) {
    ms.sort((a, b) => a - b);
    const q = (p: number) => ms[Math.min(ms.length - 1, Math.floor(p * ms.length))]!;
    out[kind] = { p50: q(0.5), p99: q(0.99), max: ms[ms.length - 1]! };
  }
  return out;
}

/** `kind outcome` → count, e.g. `list 503`, `ingest ECONNREFUSED`. */
function countBy(outcomes: Outcome[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const o of outcomes) {
    const key = `${o.kind} ${o.status ?? o.error}`;
    out[key] = (out[key] ?? 0) + 1;
  }
  return out;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Subscriber i takes every signal event of two types, so each type has ~subscribers/3 subscribers. */
function subscriberTypes(i: number): SignalType[] {
  return [SIGNAL_TYPES[i % SIGNAL_TYPES.length]!, SIGNAL_TYPES[(i + 1) % SIGNAL_TYPES.length]!];
}

async function injectFault(
  system: ChaosSystem,
  fault: FaultName,
  outageMs: number,
  upgradeRoot: string,
  accountId: string,
  injectors: Record<string, FaultInjector> = {},
): Promise<void> {
  const injector = injectors[fault];
  if (injector) return injector({ system, accountId, outageMs });
  const [action, target] = fault.split(':') as ['kill' | 'cut' | 'upgrade', string];
  if (action === 'cut') {
    const proxy = system.proxies[target as Dependency];
    proxy.cut();
    await sleep(outageMs);
    proxy.restore();
    return;
  }
  if (action === 'upgrade') {
    // One replica at a time, each ready before the next goes: the other keeps serving.
    for (const replica of system.services[target as ServiceName]) await replica.replaceWith(upgradeRoot);
    return;
  }
  // One replica of the deployable; the other goes on serving.
  const service = system.services[target as ServiceName][0]!;
  await service.kill();
  await service.start();
}

async function json(url: string, headers: Record<string, string>): Promise<unknown> {
  const res = await request(url, { headers, headersTimeout: 15_000, bodyTimeout: 15_000 });
  return res.body.json();
}

/** Every id the public list holds, paged by cursor through the gateway. */
async function listAll(
  gatewayUrl: string,
  auth: Record<string, string>,
): Promise<{ ids: string[]; total: number }> {
  const ids: string[] = [];
  let cursor: string | null = null;
  let total: number;
  do {
    const page = (await json(
      `${gatewayUrl}/v1/signals?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      auth,
    )) as { data: Array<{ id: string }>; meta: { total: number; next_cursor: string | null } };
    ids.push(...page.data.map((s) => s.id));
    total = page.meta.total;
    cursor = page.meta.next_cursor;
  } while (cursor);
  return { ids, total };
}

function deliveredPairs(receivers: Receiver[]): {
  pairs: Set<string>;
  redeliveries: number;
  pairsWithSeveralIds: number;
} {
  const idsByPair = new Map<string, Set<string>>();
  let redeliveries = 0;
  receivers.forEach((r, i) => {
    const seen = new Set<string>();
    for (const req of r.requests) {
      const id = String(req.headers['webhook-id'] ?? '');
      if (seen.has(id)) redeliveries += 1;
      seen.add(id);
      try {
        const body = JSON.parse(req.body) as { event: string; data: { id: string } };
        const pair = `${i}|${body.event}|${body.data.id}`;
        const ids = idsByPair.get(pair) ?? new Set<string>();
        ids.add(id);
        idsByPair.set(pair, ids);
      } catch {
        // not a webhook body: ignored (counted nowhere)
      }
    }
  });
  return {
    pairs: new Set(idsByPair.keys()),
    redeliveries,
    pairsWithSeveralIds: [...idsByPair.values()].filter((ids) => ids.size > 1).length,
  };
}

/** The per-minute limit of the burst after the run, and how many requests it sends. */
const BURST_LIMIT = 40;
const BURST_SIZE = 120;

/**
 * A burst of BURST_SIZE requests on a fresh key limited to BURST_LIMIT a minute, all in flight at
 * once and sent straight to the gateway replicas in turn (each on a connection of its own): the
 * limit holds across the processes, exactly.
 */
async function limitsAcrossGateways(system: ChaosSystem): Promise<ChaosReport['checks']['limits']> {
  const { key } = benchApiKey(
    system.databases.gateway,
    system.redisPrefix,
    `${uniqueName('limits')}@example.com`,
    {
      perMinute: BURST_LIMIT,
      perDay: 1_000_000,
    },
  );
  const gateways = system.services.gateway;
  const byGateway = gateways.map(() => 0);
  const responses = await Promise.all(
    Array.from({ length: BURST_SIZE }, async (_, i): Promise<LimitedResponse> => {
      const g = i % gateways.length;
      const res = await request(`${gateways[g]!.url}/v1/stats`, {
        headers: { authorization: `Bearer ${key}`, connection: 'close' },
        headersTimeout: 15_000,
        bodyTimeout: 15_000,
      });
      await res.body.dump();
      byGateway[g]! += 1;
      const header = (name: string) => {
        const v = res.headers[name];
        return Array.isArray(v) ? v[0] : v;
      };
      return {
        status: res.statusCode,
        reset: header('x-ratelimit-reset'),
        remaining: header('x-ratelimit-remaining'),
      };
    }),
  );
  const { violations, windows } = exactnessViolations(responses, BURST_LIMIT);
  return {
    limit: BURST_LIMIT,
    sent: BURST_SIZE,
    admitted: responses.filter((r) => r.status === 200).length,
    byGateway,
    windows,
    violations,
  };
}

function expectedPairs(created: CreatedSignal[], subscribers: number): string[] {
  const out: string[] = [];
  for (let i = 0; i < subscribers; i++) {
    const types = subscriberTypes(i);
    for (const s of created) {
      if (!types.includes(s.type)) continue;
      out.push(`${i}|signal.new|${s.id}`);
      if (s.transition) out.push(`${i}|signal.${s.transition}|${s.id}`);
    }
  }
  return out;
}

/**
 * `pnpm chaos`: mixed load on the whole system while, in turn, each service process is SIGKILLed
 * and restarted and each dependency is cut through its TCP proxy; then checks that nothing was
 * lost or doubled. See docs/operations.md "Chaos".
 */
export async function runChaos(options: ChaosOptions): Promise<ChaosReport> {
  const log = options.log ?? (() => undefined);
  const system = await startChaosSystem(options.logDir, options.webhookRetryDelaysMs, options.roots);
  const receivers: Receiver[] = [];
  let load: ChaosLoad | undefined;
  let streams: StreamClients | undefined;
  try {
    const { key, accountId } = benchApiKey(
      system.databases.gateway,
      system.redisPrefix,
      `${uniqueName('chaos')}@example.com`,
    );
    const auth = { authorization: `Bearer ${key}` };
    for (let i = 0; i < options.subscribers; i++) {
      const receiver = await startReceiver();
      receivers.push(receiver);
      const res = await request(`${system.gatewayUrl}/v1/webhooks`, {
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json' },
        body: JSON.stringify({
          url: `${receiver.url}/hook`,
          events: ['signal.new', 'signal.winner', 'signal.dead', 'signal.rugged'],
          types: subscriberTypes(i),
        }),
      });
      if (res.statusCode !== 201)
        throw new Error(`subscription ${i}: ${res.statusCode} ${await res.body.text()}`);
      await res.body.dump();
    }

    streams = new StreamClients(system.gatewayUrl, key, options.streamClients);
    streams.start();

    const t0 = Date.now();
    const clock = () => Date.now() - t0;
    load = new ChaosLoad({
      gatewayUrl: system.gatewayUrl,
      signalsUrl: system.signalsUrl,
      apiKey: key,
      ingestToken: system.ingestToken,
      readsPerSecond: options.readsPerSecond,
      signalsPerSecond: options.signalsPerSecond,
      transitionShare: 0.4,
      runId: uniqueName('chaos'),
      clock,
    });
    load.start();
    log(
      `load: ${options.readsPerSecond} reads/s, ${options.signalsPerSecond} signals/s for ${options.seconds} s`,
    );

    const outageMs = options.outageSeconds * 1000;
    const lead = Math.min(6000, (options.seconds * 1000) / 8);
    const spacing =
      options.faults.length > 1
        ? (options.seconds * 1000 - lead - outageMs - (options.tailSeconds ?? 2) * 1000) /
          (options.faults.length - 1)
        : 0;
    const windows: Array<{ fault: FaultName; start: number; end: number }> = [];
    for (const [i, fault] of options.faults.entries()) {
      const due = lead + i * spacing;
      if (clock() < due) await sleep(due - clock());
      const start = clock();
      log(`t=${(start / 1000).toFixed(1)} s: ${fault}`);
      await injectFault(system, fault, outageMs, options.upgradeRoot ?? ROOT, accountId, options.injectors);
      windows.push({ fault, start, end: clock() });
    }
    if (clock() < options.seconds * 1000) await sleep(options.seconds * 1000 - clock());
    const loadEnd = clock();
    await load.stop(30_000);
    log(`load stopped at t=${(loadEnd / 1000).toFixed(1)} s; ${load.created.length} signals created`);

    // Per fault: its window, what failed inside and after it (until the next fault starts).
    const failed = (o: Outcome) => o.status === null || o.status >= 500;
    const faults: FaultReport[] = windows.map((w, i) => {
      const next = windows[i + 1]?.start ?? Number.POSITIVE_INFINITY;
      const windowEnd = w.end + GRACE_MS;
      // A request belongs to the period it ended in (one in flight when the fault struck is the fault's),
      // and is inside the window when its time overlaps it.
      const inPeriod = load!.outcomes.filter((o) => o.end >= w.start && o.end < next);
      const inside = inPeriod.filter((o) => o.start <= windowEnd);
      const outside = inPeriod.filter((o) => o.start > windowEnd);
      const lastFailure = Math.max(w.end, ...inPeriod.filter(failed).map((o) => o.end));
      const killedFrontDoor = /^(kill|upgrade):(gateway|signals)$/.test(w.fault);
      const noResponseInside = inside.filter((o) => o.status === null);
      // A dead process responds to nothing: its own clients (reads → gateway, ingest → signals) see refusals.
      const noResponseAllowed =
        killedFrontDoor &&
        noResponseInside.every((o) =>
          w.fault.endsWith(':gateway')
            ? o.kind === 'list' || o.kind === 'detail' || o.kind === 'stats'
            : o.kind === 'ingest' || o.kind === 'transition',
        );
      return {
        fault: w.fault,
        at: Math.round(w.start / 100) / 10,
        lasted: Math.round((w.end - w.start) / 100) / 10,
        recovery: Math.round((lastFailure - w.end) / 100) / 10,
        unavailableInside: inside.filter((o) => o.status === 503 && o.retryAfter).length,
        bad5xxInside: inside.filter(
          (o) => o.status !== null && o.status >= 500 && !(o.status === 503 && o.retryAfter),
        ).length,
        noResponseInside: noResponseInside.length,
        noResponseAllowed,
        failuresOutside: outside.filter(failed).length,
        failed: countBy(inPeriod.filter(failed)),
      };
    });
    // Failures before the first fault are failures outside every window too.
    const failedBefore = load.outcomes.filter((o) => o.end < (windows[0]?.start ?? loadEnd) && failed(o));
    const beforeFirst = failedBefore.length;

    // End checks: wait (up to drainSeconds) until the system has caught up with every write.
    const created = load.created;
    const expected = expectedPairs(created, options.subscribers);
    const expectedEvents = created.flatMap((s) => [
      `signal.new|${s.id}`,
      ...(s.transition ? [`signal.${s.transition}|${s.id}`] : []),
    ]);
    const expectedWinners = created.filter((s) => s.transition === 'winner').length;
    const drainStarted = Date.now();
    let list = { ids: [] as string[], total: 0 };
    let stats = { total_signals: 0, winners: 0 };
    let delivered = deliveredPairs(receivers);
    for (;;) {
      list = await listAll(system.gatewayUrl, auth).catch(() => list);
      stats =
        (
          (await json(`${system.gatewayUrl}/v1/stats`, auth).catch(() => undefined)) as
            { data?: typeof stats } | undefined
        )?.data ?? stats;
      delivered = deliveredPairs(receivers);
      const listed = new Set(list.ids);
      const done =
        created.every((s) => listed.has(s.id)) &&
        stats.total_signals === created.length &&
        stats.winners === expectedWinners &&
        expected.every((p) => delivered.pairs.has(p)) &&
        streams.hasAll(expectedEvents);
      if (done || Date.now() - drainStarted > options.drainSeconds * 1000) break;
      await sleep(1000);
    }
    const drainedInSeconds = Math.round((Date.now() - drainStarted) / 100) / 10;
    await streams.stop();
    const streamCheck: ChaosReport['checks']['streams'] = {
      clients: options.streamClients,
      expectedEach: expectedEvents.length,
      missing: streams.seen.reduce((n, seen) => n + expectedEvents.filter((k) => !seen.has(k)).length, 0),
      duplicates: streams.seen.reduce((n, seen) => n + [...seen.values()].filter((c) => c > 1).length, 0),
      connections: streams.connections,
      resets: streams.resets,
      errors: streams.errors,
    };

    const conformance = options.conformance
      ? await conformanceWalk(
          system.gatewayUrl,
          key,
          `${receivers[0]?.url ?? 'http://127.0.0.1:9'}/conformance`,
        ).catch((err: unknown): ConformanceResult => ({
          checked: 0,
          operations: 0,
          retried: 0,
          problems: [`the walk failed: ${String(err)}`],
        }))
      : undefined;

    const limits = await limitsAcrossGateways(system).catch(
      (err: unknown): ChaosReport['checks']['limits'] => ({
        limit: BURST_LIMIT,
        sent: BURST_SIZE,
        admitted: 0,
        byGateway: [],
        windows: 0,
        violations: [`the burst failed: ${String(err)}`],
      }),
    );

    const conn = await mongoose.createConnection(infraUrls().mongoUrl).asPromise();
    const signalsDb = conn.useDb(system.databases.signals).collection('signals');
    const storedSignals = await signalsDb.countDocuments({});
    const distinctIdempotencyKeys = (await signalsDb.distinct('idem_key')).length;
    await conn.close();

    const listed = new Set(list.ids);
    const checks: ChaosReport['checks'] = {
      inList: created.filter((s) => listed.has(s.id)).length,
      listTotal: list.total,
      listDuplicates: list.ids.length - listed.size,
      inStats: stats.total_signals,
      statsWinners: stats.winners,
      expectedWinners,
      pairsExpected: expected.length,
      pairsDelivered: expected.filter((p) => delivered.pairs.has(p)).length,
      redeliveries: delivered.redeliveries,
      pairsWithSeveralIds: delivered.pairsWithSeveralIds,
      streams: streamCheck,
      ...(conformance ? { conformance } : {}),
      storedSignals,
      distinctIdempotencyKeys,
      drainedInSeconds,
      limits,
    };

    const requests = {} as ChaosReport['requests'];
    for (const o of load.outcomes) {
      const byStatus = (requests[o.kind] ??= {});
      const key = o.status === null ? `no response (${o.error})` : String(o.status);
      byStatus[key] = (byStatus[key] ?? 0) + 1;
    }

    const violations: string[] = [];
    if (beforeFirst > 0)
      violations.push(
        `${beforeFirst} failed requests before the first fault: ${JSON.stringify(countBy(failedBefore))}`,
      );
    for (const f of faults) {
      if (f.failuresOutside > 0)
        violations.push(`${f.fault}: ${f.failuresOutside} 5xx/no response outside its window`);
      if (f.bad5xxInside > 0)
        violations.push(`${f.fault}: ${f.bad5xxInside} 5xx other than 503 + Retry-After`);
      if (f.noResponseInside > 0 && !f.noResponseAllowed)
        violations.push(`${f.fault}: ${f.noResponseInside} requests without a response`);
    }
    if (load.rejected.length > 0) violations.push(`${load.rejected.length} writes refused with a 4xx`);
    if (checks.inList !== created.length)
      violations.push(`${created.length - checks.inList} created signals missing from the list`);
    if (checks.listTotal !== created.length || checks.listDuplicates > 0)
      violations.push(
        `list total ${checks.listTotal} (${checks.listDuplicates} duplicates) for ${created.length} signals`,
      );
    if (checks.inStats !== created.length)
      violations.push(`stats count ${checks.inStats} of ${created.length} signals`);
    if (checks.statsWinners !== expectedWinners)
      violations.push(`stats winners ${checks.statsWinners}, expected ${expectedWinners}`);
    if (checks.pairsDelivered !== checks.pairsExpected)
      violations.push(
        `${checks.pairsExpected - checks.pairsDelivered} (event, subscription) pairs not delivered`,
      );
    if (checks.pairsWithSeveralIds > 0)
      violations.push(
        `${checks.pairsWithSeveralIds} (event, subscription) pairs delivered under several webhook-ids`,
      );
    for (const v of limits.violations) violations.push(`limit across gateways: ${v}`);
    for (const p of conformance?.problems ?? []) violations.push(`conformance: ${p}`);
    if (streamCheck.missing > 0)
      violations.push(`${streamCheck.missing} stream events missing over ${streamCheck.clients} clients`);
    if (streamCheck.duplicates > 0)
      violations.push(`${streamCheck.duplicates} stream events handed out twice`);
    for (const e of streamCheck.errors) violations.push(e);
    if (storedSignals !== created.length || distinctIdempotencyKeys !== storedSignals)
      violations.push(
        `${storedSignals} stored signals (${distinctIdempotencyKeys} idempotency keys) for ${created.length} created`,
      );

    const { log: _log, injectors: _injectors, ...reported } = options;
    return {
      options: reported,
      faults,
      requests,
      skippedReads: {
        count: load.skippedReadsAt.length,
        from: seconds(load.skippedReadsAt[0]),
        to: seconds(load.skippedReadsAt[load.skippedReadsAt.length - 1]),
      },
      skippedWrites: {
        count: load.skippedWritesAt.length,
        from: seconds(load.skippedWritesAt[0]),
        to: seconds(load.skippedWritesAt[load.skippedWritesAt.length - 1]),
      },
      latency: latencyByKind(load.outcomes),
      crashRestarts: Object.fromEntries(
        Object.values(system.services)
          .flat()
          .filter((s) => s.crashRestarts > 0)
          .map((s) => [s.label, s.crashRestarts]),
      ),
      connectionsByReplica: Object.fromEntries(
        Object.entries(system.balancers).map(([name, b]) => [name, [...b.handedOut]]),
      ),
      timeline: timeline(load.outcomes),
      rejectedWrites: load.rejected.slice(0, 20),
      created: created.length,
      transitions: created.filter((s) => s.transition).length,
      checks,
      violations,
    };
  } finally {
    await streams?.stop();
    await load?.close();
    for (const r of receivers) await r.close();
    await system.stop();
  }
}

/** The full run (`pnpm chaos`) and the CI one (`--short`): the same faults, half the rates, shorter cuts and spacing. */
export function chaosOptions(short: boolean): ChaosOptions {
  return short
    ? {
        seconds: 50,
        readsPerSecond: 100,
        signalsPerSecond: 10,
        subscribers: 10,
        streamClients: 3,
        outageSeconds: 4,
        faults: ALL_FAULTS,
        drainSeconds: 60,
        logDir: path.join(ROOT, '.run', 'chaos'),
        webhookRetryDelaysMs: '1000,3000,8000',
      }
    : {
        seconds: 120,
        readsPerSecond: 200,
        signalsPerSecond: 20,
        subscribers: 10,
        streamClients: 4,
        outageSeconds: 10,
        faults: ALL_FAULTS,
        drainSeconds: 120,
        logDir: path.join(ROOT, '.run', 'chaos'),
        webhookRetryDelaysMs: '2000,10000,30000',
      };
}

/** What the run did to the system, for the report's first line. */
function faultsInWords(o: ChaosReport['options']): string {
  const roots = Object.keys(o.roots ?? {});
  const at = roots.length ? `${roots.join(', ')} from ${o.roots?.[roots[0] as ServiceName] ?? ''}; ` : '';
  if (o.faults.length === 0) return `${at}no faults`;
  if (o.faults.every((f) => f.startsWith('node:'))) return `${at}${o.faults.join(', ')} in turn`;
  if (o.faults.every((f) => f.startsWith('upgrade:')))
    return `${at}each upgraded to ${o.upgradeRoot ?? ROOT} one replica at a time, in turn`;
  return `${at}one of each killed in turn, each dependency cut`;
}

/** The report as docs/operations.md prints it. */
export function formatReport(r: ChaosReport): string {
  const lines: string[] = [];
  const o = r.options;
  lines.push(
    `chaos: ${REPLICAS} replicas of every deployable (${faultsInWords(o)}); ${o.seconds} s, ${o.readsPerSecond} reads/s through the gateways, ${o.signalsPerSecond} signals/s ingested (40 % later moved), ${o.subscribers} webhook subscribers; cuts last ${o.outageSeconds} s; window = fault + ${GRACE_MS / 1000} s`,
  );
  lines.push('');
  lines.push(
    '| fault | at (s) | lasted (s) | recovered after (s) | 503 + Retry-After inside | other 5xx inside | no response inside | 5xx / no response outside |',
  );
  lines.push('|---|---|---|---|---|---|---|---|');
  for (const f of r.faults)
    lines.push(
      `| ${f.fault} | ${f.at} | ${f.lasted} | ${f.recovery} | ${f.unavailableInside} | ${f.bad5xxInside} | ${f.noResponseInside}${f.noResponseInside && f.noResponseAllowed ? ' (its own clients)' : ''} | ${f.failuresOutside} |`,
    );
  lines.push('');
  for (const f of r.faults)
    if (Object.keys(f.failed).length)
      lines.push(
        `${f.fault} → ${Object.entries(f.failed)
          .map(([k, n]) => `${k}: ${n}`)
          .join(', ')}`,
      );
  lines.push('');
  for (const [kind, byStatus] of Object.entries(r.requests)) {
    const l = r.latency[kind];
    const counts = Object.entries(byStatus).map(([status, n]) => `${status}: ${n}`);
    lines.push(
      `${kind.padEnd(10)} ${counts.join(', ')}${l ? ` (p50 ${l.p50} ms, p99 ${l.p99} ms, max ${l.max} ms)` : ''}`,
    );
  }
  if (r.skippedReads.count)
    lines.push(
      `reads not sent (400 already in flight): ${r.skippedReads.count}, t=${r.skippedReads.from}–${r.skippedReads.to} s`,
    );
  if (r.skippedWrites.count)
    lines.push(
      `signals not started (100 writes already in flight): ${r.skippedWrites.count}, t=${r.skippedWrites.from}–${r.skippedWrites.to} s`,
    );
  if (Object.keys(r.crashRestarts).length)
    lines.push(`start-ups that exited and were started again: ${JSON.stringify(r.crashRestarts)}`);
  lines.push(
    `connections per replica: ${Object.entries(r.connectionsByReplica)
      .map(([name, n]) => `${name} ${n.join(' / ')}`)
      .join(', ')}`,
  );
  const c = r.checks;
  lines.push('');
  lines.push(
    `signals created ${r.created} (${r.transitions} moved); in the list ${c.inList} (total ${c.listTotal}, ${c.listDuplicates} duplicates); in stats ${c.inStats} (winners ${c.statsWinners} of ${c.expectedWinners})`,
  );
  lines.push(
    `(event, subscription) pairs delivered ${c.pairsDelivered} of ${c.pairsExpected} (${c.redeliveries} re-deliveries, ${c.pairsWithSeveralIds} pairs under several webhook-ids); stored signals ${c.storedSignals}, idempotency keys ${c.distinctIdempotencyKeys}; caught up ${c.drainedInSeconds} s after the load stopped`,
  );
  lines.push(
    `live streams: ${c.streams.clients} clients × ${c.streams.expectedEach} events: ${c.streams.missing} missing, ${c.streams.duplicates} twice; connections per client ${JSON.stringify(c.streams.connections)} (reconnects resumed with Last-Event-ID), resets ${JSON.stringify(c.streams.resets)}`,
  );
  if (c.conformance)
    lines.push(
      `conformance: ${c.conformance.checked} exchanges over ${c.conformance.operations} operations held to the OpenAPI document (${c.conformance.retried} tried again after a 503/504), ${c.conformance.problems.length} departures`,
    );
  lines.push(
    `limit across gateways: ${c.limits.sent} requests on a ${c.limits.limit}/min key, ${c.limits.admitted} admitted in ${c.limits.windows} window(s), sent per gateway ${JSON.stringify(c.limits.byGateway)}`,
  );
  if (r.rejectedWrites.length) lines.push(`refused writes: ${r.rejectedWrites.join('; ')}`);
  lines.push(r.violations.length ? `VIOLATIONS:\n- ${r.violations.join('\n- ')}` : 'no violations');
  return lines.join('\n');
}
