import { ROOT } from '../harness';
import type { ConformanceResult } from './conformance';
import type { Outcome } from './load';
import { REPLICAS, type ChaosSystem, type Dependency, type ServiceName } from './system';

/** What a chaos run is asked to do and what it reports: its options, its report and how it prints. */

/** `upgrade:x`: x's replicas replaced one at a time by `upgradeRoot`'s build (a rolling upgrade). */
/** `node:x`: a fault of the `injectors` option (chaos/cluster.ts: a node of a cluster killed). */
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
