import { infraUrls, silentLogger, testDatabase } from '@signal/test-kit';
import request from 'supertest';
import { run, UsageError } from '../src/cli/admin.cli';
import { createDependencies } from '../src/cli/admin.dependencies';
import { startGateway, type GatewayHarness } from './gateway-harness';
import { signalInput, startSignals, type SignalsHarness } from '../../signals/test/signals-harness';

let gw: GatewayHarness;
let signals: SignalsHarness;
beforeAll(async () => {
  signals = await startSignals('admin_cli');
  await request(signals.url)
    .post('/internal/signals')
    .set(signals.ingestAuth)
    .send(signalInput())
    .expect(201);
  gw = await startGateway({
    label: 'admin_cli',
    upstreams: { signals: signals.url, stats: 'http://127.0.0.1:9', webhooks: 'http://127.0.0.1:9' },
  });
});
afterAll(async () => {
  await gw.stop();
  await signals.stop();
});

const DEVELOPMENT = { production: false, defaultPlan: { per_minute: 60, per_day: 10_000 } };

async function cli(...argv: string[]): Promise<string[]> {
  const lines: string[] = [];
  await run(argv, gw.deps.accounts, (l) => lines.push(l), DEVELOPMENT);
  return lines;
}

describe('operator CLI', () => {
  it('when an operator creates an account and a key, then the key works, lists, changes plan and revokes', async () => {
    const [created] = await cli(
      'create-account',
      '--email',
      'ops@example.com',
      '--per-minute',
      '2',
      '--per-day',
      '100',
    );
    const accountId = /account (acc_\S+)/.exec(created!)![1]!;
    const keyLines = await cli('create-key', '--account', accountId, '--name', 'prod');
    const key = /API key \(shown once\): (\S+)/.exec(keyLines[1]!)![1]!;
    const keyId = /key (key_\S+)/.exec(keyLines[0]!)![1]!;
    const auth = { Authorization: `Bearer ${key}` };
    await request(gw.url).get('/v1/signals').set(auth).expect(200);
    await request(gw.url).get('/v1/signals').set(auth).expect(200);
    await request(gw.url).get('/v1/signals').set(auth).expect(429);

    await cli('set-plan', '--account', accountId, '--per-minute', '10', '--per-day', '100');
    const res = await request(gw.url).get('/v1/signals').set(auth).expect(200);
    expect(res.headers['x-ratelimit-limit']).toBe('10');

    const list = await cli('list-keys', '--account', accountId);
    expect(list[0]).toContain(keyId);
    expect(list[0]).toContain('active');
    expect(list.join('\n')).not.toContain(key);

    await cli('revoke-key', '--account', accountId, '--key', keyId);
    await request(gw.url).get('/v1/signals').set(auth).expect(401);
    expect((await cli('list-keys', '--account', accountId))[0]).toContain('revoked');
  });

  it('when arguments are missing or wrong, then a clear error names them', async () => {
    await expect(cli('create-key', '--name', 'x')).rejects.toThrow('--account is required');
    await expect(
      cli('set-plan', '--account', 'acc_x', '--per-minute', 'ten', '--per-day', '1'),
    ).rejects.toThrow('--per-minute must be a whole number');
    await expect(cli('create-key', '--account', 'acc_missing', '--name', 'x')).rejects.toThrow(
      'Account acc_missing was not found.',
    );
    await expect(cli('frobnicate')).rejects.toThrow('unknown command "frobnicate"');
    await cli('create-account', '--email', 'twice@example.com');
    await expect(cli('create-account', '--email', 'twice@example.com')).rejects.toThrow('exists');
  });

  it('when a flag is misspelt or belongs to another command, then it is a usage error, never a silent default', async () => {
    await expect(cli('create-account', '--email', 'typo@example.com', '--per-minte', '100')).rejects.toThrow(
      UsageError,
    );
    await expect(cli('list-keys', '--account', 'acc_x', '--name', 'x')).rejects.toThrow(
      'list-keys does not take --name',
    );
    await expect(cli('list-keys', 'stray')).rejects.toThrow(UsageError);
  });

  it('when the demo command runs twice, then it reuses the demo account, prints its random password once and a working key', async () => {
    const first = await cli('demo', '--email', 'demo-cli@signal.local');
    const second = await cli('demo', '--email', 'demo-cli@signal.local');
    expect(first[0]!.split(' ')[1]).toBe(second[0]!.split(' ')[1]);
    const password = first.find((l) => l.startsWith('DEMO_PASSWORD='))!.split(/[= ]/)[1]!;
    expect(password).toMatch(/^[A-Za-z0-9_-]{24}$/);
    expect(password).not.toBe('demo-password');
    expect(second.join('\n')).not.toContain('DEMO_PASSWORD');
    const key = second.find((l) => l.startsWith('DEMO_API_KEY='))!.replace('DEMO_API_KEY=', '');
    await request(gw.url).get('/v1/signals').set('Authorization', `Bearer ${key}`).expect(200);
    await request(gw.url)
      .post('/v1/auth/login')
      .send({ email: 'demo-cli@signal.local', password })
      .expect(200);
    await request(gw.url)
      .post('/v1/auth/login')
      .send({ email: 'demo-cli@signal.local', password: 'demo-password' })
      .expect(401);
  });

  it('when the demo command runs in production, then it is refused and no account is made', async () => {
    const lines: string[] = [];
    await expect(
      run(['demo', '--email', 'prod-demo@signal.local'], gw.deps.accounts, (l) => lines.push(l), {
        ...DEVELOPMENT,
        production: true,
      }),
    ).rejects.toThrow('development only');
    expect(await gw.deps.accounts.repository.findAccountByEmail('prod-demo@signal.local')).toBeNull();
  });

  it('when Redis cannot be reached, then the CLI stops with a clear message instead of a stream error', async () => {
    const db = testDatabase('admin_cli_no_redis');
    await expect(
      createDependencies(
        {
          MONGO_URL: infraUrls().mongoUrl,
          GATEWAY_DB: db.dbName,
          REDIS_URL: 'redis://127.0.0.1:9',
          REDIS_PREFIX: 'admin_cli_no_redis:',
          API_KEY_PEPPER: 'pepper-for-the-test-only-0123456789',
        },
        silentLogger,
        300,
      ),
    ).rejects.toThrow('Redis is not reachable (REDIS_URL); nothing was changed');
    await db.drop();
  });
});
