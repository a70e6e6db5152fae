import { parseCliArgs, readCommandLine } from '@signal/service-kit';
import { removeBrokerPrefix } from '../topology';

/**
 * purge [--prefix P]: removes every queue and exchange of one deployment (`AMQP_URL`), messages
 * included. `scripts/up.sh reset` runs it: events of a wiped database left in the queues would
 * reach the next one (a reset during a backfill would count its signals twice in stats).
 */
async function main(): Promise<void> {
  const { prefix } = readCommandLine({ name: 'purge', usage: 'usage: purge [--prefix P]' }, () =>
    parseCliArgs(process.argv.slice(2), { prefix: { type: 'string', default: '' } }),
  );
  const url = process.env.AMQP_URL;
  if (!url) {
    console.error('purge: AMQP_URL is required');
    process.exit(2);
  }
  await removeBrokerPrefix(url, prefix);
  console.log(`purge: removed the queues and exchanges of prefix "${prefix}"`);
}

main().catch((err: unknown) => {
  console.error(`purge: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
