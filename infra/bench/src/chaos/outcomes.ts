import type { ChaosReport } from './report';
import type { Outcome } from './load';

/** The load's outcomes summed up for the report: per second, per kind of request, per result. */

/** Milliseconds since the run began → seconds, to a tenth. */
export function seconds(ms: number | undefined): number | undefined {
  return ms === undefined ? undefined : Math.round(ms / 100) / 10;
}

export function timeline(outcomes: Outcome[]): ChaosReport['timeline'] {
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

export function latencyByKind(outcomes: Outcome[]): ChaosReport['latency'] {
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
export function countBy(outcomes: Outcome[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const o of outcomes) {
    const key = `${o.kind} ${o.status ?? o.error}`;
    out[key] = (out[key] ?? 0) + 1;
  }
  return out;
}
