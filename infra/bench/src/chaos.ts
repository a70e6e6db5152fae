import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseCliArgs, readCommandLine } from '@signal/service-kit';
import { ROOT, wholeNumberOption } from './harness';
import { ALL_FAULTS, formatReport, type ChaosOptions, type FaultName } from './chaos/report';
import { chaosOptions, runChaos } from './chaos/run';
import { clusterChaosOptions, formatClusterFigures, runClusterChaos } from './chaos/cluster';
import { DEPLOYABLES } from './compat';

/**
 * pnpm chaos [--short] [--seconds 120] [--reads 200] [--signals 20] [--subscribers 10] [--outage 10] [--out file]
 *            [--release DIR --at-release webhooks-worker,...] [--faults kill:signals,upgrade:gateway,...]
 * A mixed load on the whole system, two replicas of every deployable, while one replica of each
 * is SIGKILLed and restarted and each dependency (Redis, RabbitMQ, the MongoDB-wire server) is
 * cut through a TCP proxy, in turn; then every created signal must be in the list and in stats,
 * every (event, subscription) pair delivered under one webhook-id, no signal doubled, and a key's
 * per-minute limit exact across the gateways. Prints the report, writes it as JSON (--out,
 * default bench-results/chaos.json), exits 1 on a violation. --short: the CI version (50 s of
 * load, the same eight faults, half the rates, shorter cuts). --release with --at-release runs
 * those deployables from another build (infra/compat/release.sh prints the recorded release's),
 * so one run proves the faults and the version boundary together (scripts/test.sh does).
 * --cluster: the same load against infra/local/cluster.sh's Redis Cluster and three-node RabbitMQ
 * while a Redis master and a RabbitMQ node are killed and brought back (chaos/cluster.ts).
 * --faults runs only those faults, in that order; `upgrade:x` replaces x's replicas one at a time
 * by this checkout's build (a graceful restart of each).
 */

const CLI = {
  name: 'chaos',
  usage:
    'usage: pnpm chaos [--short] [--cluster] [--seconds 120] [--reads 200] [--signals 20] [--subscribers 10] [--outage 10] [--out file] [--release DIR --at-release webhooks-worker,...] [--faults kill:signals,upgrade:gateway,...]',
};

/**
 * A fault --faults may name: the run's own (the cluster run's `node:` faults among them), every
 * kill and cut, or `upgrade:x` (with no --release, x's replicas replaced by the same build: a
 * graceful restart).
 */
const faultOf = (base: readonly FaultName[], name: string): FaultName | undefined =>
  [...base, ...ALL_FAULTS].find((f) => f === name) ??
  DEPLOYABLES.map((d) => `upgrade:${d}` as const).find((f) => f === name);

async function main() {
  const opts = readCommandLine(CLI, () =>
    parseCliArgs(process.argv.slice(2), {
      short: { type: 'boolean', default: false },
      cluster: { type: 'boolean', default: false },
      seconds: { type: 'string' },
      reads: { type: 'string' },
      signals: { type: 'string' },
      subscribers: { type: 'string', default: '10' },
      outage: { type: 'string' },
      out: { type: 'string', default: path.join(ROOT, 'bench-results', 'chaos.json') },
      release: { type: 'string' },
      'at-release': { type: 'string' },
      faults: { type: 'string' },
    }),
  );
  const base =
    opts.cluster === true ? clusterChaosOptions(opts.short === true) : chaosOptions(opts.short === true);
  const number = (name: 'seconds' | 'reads' | 'signals' | 'subscribers' | 'outage', fallback: number) =>
    opts[name] === undefined ? fallback : wholeNumberOption(CLI, opts, name);
  const atRelease = (opts['at-release'] ?? '').split(',').filter((d) => d !== '');
  const unknown = atRelease.filter((d) => !(DEPLOYABLES as string[]).includes(d));
  if (unknown.length || atRelease.length > 0 !== (opts.release !== undefined))
    throw new Error(`--release DIR and --at-release ${DEPLOYABLES.join(',')} go together\n${CLI.usage}`);
  const named = opts.faults === undefined ? base.faults : opts.faults.split(',').filter((f) => f !== '');
  const faults = named.flatMap((f) => faultOf(base.faults, f) ?? []);
  const unknownFaults = named.filter((f) => !faultOf(base.faults, f));
  if (unknownFaults.length)
    throw new Error(
      `unknown fault ${unknownFaults.join(', ')}: kill:<deployable>, cut:<dependency> or upgrade:<deployable>\n${CLI.usage}`,
    );
  const options: ChaosOptions = {
    ...base,
    faults,
    ...(opts.release ? { roots: Object.fromEntries(atRelease.map((d) => [d, opts.release])) } : {}),
    seconds: number('seconds', base.seconds),
    readsPerSecond: number('reads', base.readsPerSecond),
    signalsPerSecond: number('signals', base.signalsPerSecond),
    subscribers: number('subscribers', base.subscribers),
    outageSeconds: number('outage', base.outageSeconds),
    log: (line) => console.error(line),
  };
  const { report, cluster } =
    opts.cluster === true
      ? await runClusterChaos(options)
      : { report: await runChaos(options), cluster: undefined };
  console.log(formatReport(report) + (cluster ? formatClusterFigures(cluster) : ''));
  const out = opts.out ?? path.join(ROOT, 'bench-results', 'chaos.json');
  mkdirSync(path.dirname(out), { recursive: true });
  writeFileSync(out, JSON.stringify(cluster ? { ...report, cluster } : report, null, 2));
  process.exit(report.violations.length ? 1 : 0);
}

if (require.main === module)
  main().catch((err: unknown) => {
    console.error(err);
    process.exit(1);
  });
