import { ROUTES } from '@signal/contracts';
import { infraUrls, startReceiver, uniqueName, type Receiver } from '@signal/test-kit';
import mongoose from 'mongoose';
import { request } from 'undici';
import path from 'node:path';
import { ROOT, benchApiKey } from '../harness';
import { conformanceWalk, type ConformanceResult } from './conformance';
import {
  BURST_LIMIT,
  BURST_SIZE,
  deliveredPairs,
  expectedPairs,
  json,
  limitsAcrossGateways,
  listAll,
  subscriberTypes,
} from './end-checks';
import { ChaosLoad, type Outcome } from './load';
import { countBy, latencyByKind, seconds, timeline } from './outcomes';
import {
  ALL_FAULTS,
  GRACE_MS,
  type ChaosOptions,
  type ChaosReport,
  type FaultInjector,
  type FaultName,
  type FaultReport,
} from './report';
import { StreamClients } from './streams';
import { startChaosSystem, type ChaosSystem, type Dependency, type ServiceName } from './system';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

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
      const res = await request(`${system.gatewayUrl}${ROUTES.createWebhook.path}`, {
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
          (await json(`${system.gatewayUrl}${ROUTES.getStats.path}`, auth).catch(() => undefined)) as
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
          Object.values(options.roots ?? {}),
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
