import { createLogger, parseCliArgs, readCommandLine } from '@signal/service-kit';
import { loadConfig } from '../config';
import { createDependencies } from '../dependencies';

/**
 * Rebuilds the signals timeline index in Redis by streaming the collection once.
 *   pnpm --filter @signal/signals reindex [--fresh] [--quiet]
 * --fresh drops the index first (lists are served from MongoDB until the rebuild ends).
 * Env: the signals service's own (MONGO_URL, REDIS_URL, REDIS_PREFIX, AMQP_URL, …).
 */
const USAGE = 'usage: reindex [--fresh] [--quiet]';

async function main(): Promise<void> {
  const values = readCommandLine({ name: 'reindex', usage: USAGE }, () =>
    parseCliArgs(process.argv.slice(2), {
      fresh: { type: 'boolean' },
      quiet: { type: 'boolean' },
      help: { type: 'boolean' },
    }),
  );
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  const config = loadConfig();
  const deps = await createDependencies(config, createLogger('reindex', 'warn'));
  try {
    const total = await deps.repository.count({});
    if (values.fresh) await deps.index.model.clear();
    const started = Date.now();
    const built = await deps.indexMaintenance.rebuild((done) => {
      if (values.quiet) return;
      const pct = total ? Math.min(100, Math.floor((done / total) * 100)) : 100;
      const rate = Math.round(done / Math.max(0.001, (Date.now() - started) / 1000));
      process.stderr.write(
        `\rreindex [${'#'.repeat(Math.floor(pct / 4)).padEnd(25, '.')}] ${pct}% ${done}/${total} (${rate}/s)`,
      );
    });
    if (!values.quiet) process.stderr.write('\n');
    if (!built) {
      process.stderr.write('reindex: another process is rebuilding the index; try again when it is done\n');
      process.exitCode = 1;
      return;
    }
    process.stdout.write(
      `timeline index ready: ${await deps.index.size()} signals in ${Date.now() - started} ms\n`,
    );
  } finally {
    await deps.amqp.close();
    deps.redis.disconnect();
    await deps.mongo.close();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`\nreindex: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
