import { signalSnapshotReaderSchema } from '@signal/contracts';
import { createLogger, parseCliArgs, readCommandLine } from '@signal/service-kit';
import { request } from 'undici';
import { z } from 'zod';
import { loadConfig } from '../config';
import { createDependencies } from '../dependencies';
import { projectSignals } from '../domain/project-signals.use-case';

const pageSchema = z.object({
  data: z.array(signalSnapshotReaderSchema),
  meta: z.object({ next_after: z.string().nullable() }),
});

/**
 * Rebuilds the projection from the signals service's internal export (fresh deployment or
 * data loss). Safe to run while events flow: older states never overwrite newer ones.
 *   SIGNALS_URL=… INGEST_TOKEN=… pnpm --filter stats rebuild
 */
async function main(): Promise<void> {
  readCommandLine({ name: 'stats rebuild', usage: 'usage: rebuild (no options)' }, () =>
    parseCliArgs(process.argv.slice(2), {}),
  );
  const config = loadConfig();
  if (!config.SIGNALS_URL || !config.INGEST_TOKEN) {
    process.stderr.write('stats rebuild: SIGNALS_URL and INGEST_TOKEN are required\n');
    process.exit(2);
  }
  const logger = createLogger('stats-rebuild', 'warn');
  const deps = await createDependencies(config, logger);
  let after: string | null = null;
  let seen = 0;
  let changed = 0;
  const started = Date.now();
  do {
    const url = new URL('/internal/signals/export', config.SIGNALS_URL);
    url.searchParams.set('limit', '2000');
    if (after) url.searchParams.set('after', after);
    const res = await request(url, { headers: { authorization: `Bearer ${config.INGEST_TOKEN}` } });
    if (res.statusCode !== 200)
      throw new Error(`export responded ${res.statusCode}: ${await res.body.text()}`);
    const page = pageSchema.parse(await res.body.json());
    changed += await projectSignals(deps, page.data);
    seen += page.data.length;
    after = page.meta.next_after;
    process.stderr.write(
      `\rrebuild: ${seen} signals read, ${changed} projected (${Math.round(seen / ((Date.now() - started) / 1000 || 1))}/s)`,
    );
  } while (after);
  await deps.cache.invalidate();
  process.stderr.write(`\nrebuild: done, ${seen} signals, ${changed} changed\n`);
  await deps.close();
}

main().catch((err: unknown) => {
  process.stderr.write(`\nstats rebuild failed: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
