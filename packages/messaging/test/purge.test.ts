import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { infraUrls, testBrokerPrefix } from '@signal/test-kit';
import { connect } from 'amqplib';
import { brokerNames } from '../src/topology';
import { removeBrokerPrefix } from '../src';

const run = promisify(execFile);
const CLI = path.join(__dirname, '..', 'dist', 'cli', 'purge.cli.js');

/** Whether a queue exists (a passive check on a channel of its own: a miss closes the channel). */
async function exists(queue: string): Promise<boolean> {
  const conn = await connect(infraUrls().amqpUrl);
  try {
    const ch = await conn.createChannel();
    ch.on('error', () => undefined);
    return await ch.checkQueue(queue).then(
      () => true,
      () => false,
    );
  } finally {
    await conn.close().catch(() => undefined);
  }
}

describe('purge CLI (scripts/up.sh reset)', () => {
  const gone = testBrokerPrefix('purge_gone', removeBrokerPrefix);
  const kept = testBrokerPrefix('purge_kept', removeBrokerPrefix);
  afterAll(async () => {
    await gone.cleanup();
    await kept.cleanup();
  });

  it("when run for a prefix, then that deployment's queues and their messages are gone and another prefix keeps its own", async () => {
    const conn = await connect(infraUrls().amqpUrl);
    const ch = await conn.createConfirmChannel();
    for (const prefix of [gone.prefix, kept.prefix]) {
      const q = brokerNames(prefix).statsQueue;
      await ch.assertQueue(q, { durable: true });
      ch.sendToQueue(q, Buffer.from('{"left":"over"}'), { persistent: true });
    }
    await ch.waitForConfirms();
    await conn.close();

    const { stdout } = await run(process.execPath, [CLI, '--prefix', gone.prefix], {
      env: { ...process.env, AMQP_URL: infraUrls().amqpUrl },
    });
    expect(stdout).toContain(gone.prefix);
    expect(await exists(brokerNames(gone.prefix).statsQueue)).toBe(false);
    expect(await exists(brokerNames(kept.prefix).statsQueue)).toBe(true);
  });

  it('when given an unknown option, then it is a usage error with exit code 2', async () => {
    await expect(run(process.execPath, [CLI, '--prefx', 'x'])).rejects.toMatchObject({ code: 2 });
  });
});
