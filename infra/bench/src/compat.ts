import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseCliArgs, readCommandLine } from '@signal/service-kit';
import { ROOT, wholeNumberOption } from './harness';
import { formatReport, type ChaosOptions, type ChaosReport } from './chaos/report';
import { chaosOptions, runChaos } from './chaos/run';
import type { ServiceName } from './chaos/system';

/**
 * pnpm compat [--only signals,stats,...] [--no-rolling | --rolling-only] [--seconds 20] [--out file]
 * (infra/compat/run.sh builds the recorded release and passes --release DIR.)
 *
 * Mixed versions: the chaos system (two replicas of every deployable, load through the gateways,
 * webhook receivers and live-stream clients) with one deployable at the release and the rest at
 * this checkout, for each deployable in turn; then a rolling upgrade: everything at the release,
 * and under load each deployable's replicas replaced one at a time by this checkout's build. The
 * chaos run's checks hold each: every signal in the list and in stats, every (event,
 * subscription) pair delivered under one webhook-id, every stream client handed every event
 * exactly once, no 5xx but 503 + Retry-After. Prints the reports, writes them as JSON, exits 1 on
 * a violation.
 */

export const DEPLOYABLES: ServiceName[] = ['gateway', 'signals', 'stats', 'webhooks-api', 'webhooks-worker'];

export interface CompatRun {
  name: string;
  /** The chaos report; absent when the system did not start (then `error` says why). */
  report?: ChaosReport;
  error?: string;
}

/** One run; a system that does not start is a failed run, and the next one still goes. */
async function attempt(name: string, options: ChaosOptions): Promise<CompatRun> {
  try {
    const report = await runChaos(options);
    console.log(`\n## ${name}\n\n${formatReport(report)}`);
    return { name, report };
  } catch (err) {
    console.log(`\n## ${name}\n\nFAILED: ${String(err)}`);
    return { name, error: String(err) };
  }
}

/**
 * The load of a mixed-version run: lighter than the short chaos run's (what is proven here is that
 * every event and answer crosses the version boundary, not throughput), so a busy machine's
 * slowness does not stand in for an incompatibility.
 */
const COMPAT_LOAD = { readsPerSecond: 40, signalsPerSecond: 5, subscribers: 5, streamClients: 3 };

/** One combination: the compat load, no faults, `seconds` long. */
export function combinationOptions(release: string, deployable: ServiceName, seconds: number): ChaosOptions {
  return {
    ...chaosOptions(true),
    ...COMPAT_LOAD,
    seconds,
    faults: [],
    drainSeconds: 60,
    conformance: true,
    logDir: path.join(ROOT, '.run', 'compat', `logs-${deployable}`),
    roots: { [deployable]: release },
  };
}

/** Everything at the release, then each deployable upgraded to this checkout one replica at a time. */
export function rollingOptions(release: string, seconds: number): ChaosOptions {
  return {
    ...chaosOptions(true),
    ...COMPAT_LOAD,
    seconds,
    faults: DEPLOYABLES.map((d) => `upgrade:${d}` as const),
    drainSeconds: 60,
    conformance: true,
    logDir: path.join(ROOT, '.run', 'compat', 'logs-rolling'),
    roots: Object.fromEntries(DEPLOYABLES.map((d) => [d, release])),
    upgradeRoot: ROOT,
  };
}

const CLI = {
  name: 'compat',
  usage:
    'usage: pnpm compat [--only gateway,signals,stats,webhooks-api,webhooks-worker] [--no-rolling | --rolling-only] [--seconds 20] [--rolling-seconds 60] [--out file]',
};

async function main() {
  const opts = readCommandLine(CLI, () =>
    parseCliArgs(process.argv.slice(2), {
      release: { type: 'string' },
      only: { type: 'string' },
      'no-rolling': { type: 'boolean', default: false },
      'rolling-only': { type: 'boolean', default: false },
      seconds: { type: 'string', default: '20' },
      'rolling-seconds': { type: 'string', default: '60' },
      out: { type: 'string', default: path.join(ROOT, 'bench-results', 'compat.json') },
    }),
  );
  const release = opts.release;
  if (!release) throw new Error('--release DIR (the release build; infra/compat/run.sh passes it)');
  const only = opts['rolling-only'] ? [] : opts.only ? opts.only.split(',') : DEPLOYABLES;
  const unknown = only.filter((d) => !(DEPLOYABLES as string[]).includes(d));
  if (unknown.length) throw new Error(`unknown deployables: ${unknown.join(', ')}\n${CLI.usage}`);
  const seconds = wholeNumberOption(CLI, opts, 'seconds');
  const rollingSeconds = wholeNumberOption(CLI, opts, 'rolling-seconds');
  const log = (line: string) => console.error(line);
  const runs: CompatRun[] = [];
  for (const deployable of only as ServiceName[]) {
    const name = `${deployable} at the release, the rest at HEAD`;
    log(`== ${name}`);
    runs.push(await attempt(name, { ...combinationOptions(release, deployable, seconds), log }));
  }
  if (!opts['no-rolling']) {
    const name = 'rolling upgrade from the release to HEAD';
    log(`== ${name}`);
    runs.push(await attempt(name, { ...rollingOptions(release, rollingSeconds), log }));
  }
  const out = opts.out ?? path.join(ROOT, 'bench-results', 'compat.json');
  mkdirSync(path.dirname(out), { recursive: true });
  writeFileSync(out, JSON.stringify(runs, null, 2));
  const failed = runs.filter((r) => !r.report || r.report.violations.length > 0);
  console.log(
    `\ncompat: ${runs.length - failed.length} of ${runs.length} runs without violations` +
      (failed.length ? ` (failed: ${failed.map((r) => r.name).join('; ')})` : ''),
  );
  process.exit(failed.length ? 1 : 0);
}

if (require.main === module)
  main().catch((err: unknown) => {
    console.error(err);
    process.exit(1);
  });
