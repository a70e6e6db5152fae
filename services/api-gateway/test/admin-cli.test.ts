import { infraUrls, silentLogger, testDatabase } from '@signal/test-kit';
import { spawnSync } from 'node:child_process';
import { get, type IncomingMessage } from 'node:http';
import { existsSync } from 'node:fs';
import path from 'node:path';
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

/** The gateway's own account use cases, with the lookup by email the demo command needs. */
const adminDeps = () => ({ ...gw.deps.accounts, repository: gw.deps.repository });

const DEVELOPMENT = { production: false, defaultPlan: { per_minute: 60, per_day: 10_000 } };

async function cli(...argv: string[]): Promise<string[]> {
  const lines: string[] = [];
  await run(argv, adminDeps(), (l) => lines.push(l), DEVELOPMENT);
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

  it('when an operator gives a short password or a malformed email, then the sign-up rules refuse them and no account is made', async () => {
    await expect(
      cli('create-account', '--email', 'short-pw@example.com', '--password', 'short'),
    ).rejects.toThrow(new UsageError('--password: password must have at least 12 characters'));
    await expect(cli('create-account', '--email', 'not-an-email')).rejects.toThrow(UsageError);
    await expect(cli('create-account', '--email', 'not-an-email')).rejects.toThrow('--email');
    await expect(cli('demo', '--email', 'not-an-email')).rejects.toThrow('--email');
    // Nothing was made: the address is still free, and the account then made logs in.
    const [made] = await cli(
      'create-account',
      '--email',
      'short-pw@example.com',
      '--password',
      'twelve chars ok',
    );
    expect(made).toMatch(/^account acc_\S+ short-pw@example.com /);
    await request(gw.url)
      .post('/v1/auth/login')
      .send({ email: 'short-pw@example.com', password: 'twelve chars ok' })
      .expect(200);
  });

  it('when a plan allows fewer requests a day than a minute, then it is refused and the plan stays as it was', async () => {
    await expect(
      cli('set-plan', '--account', 'acc_x', '--per-minute', '100', '--per-day', '10'),
    ).rejects.toThrow(new UsageError('--per-day (10) must be at least --per-minute (100)'));
    await expect(
      cli(
        'create-account',
        '--email',
        'day-below-minute@example.com',
        '--per-minute',
        '100',
        '--per-day',
        '10',
      ),
    ).rejects.toThrow('--per-day (10) must be at least --per-minute (100)');
    // With the default day (10,000 here), a minute above it is refused as well.
    await expect(
      cli('create-account', '--email', 'day-below-minute@example.com', '--per-minute', '20000'),
    ).rejects.toThrow('--per-day (10000) must be at least --per-minute (20000)');

    const [created] = await cli(
      'create-account',
      '--email',
      'day-below-minute@example.com',
      '--per-minute',
      '7',
    );
    const accountId = /account (acc_\S+)/.exec(created!)![1]!;
    const key = /API key \(shown once\): (\S+)/.exec(
      (await cli('create-key', '--account', accountId, '--name', 'plan'))[1]!,
    )![1]!;
    await expect(
      cli('set-plan', '--account', accountId, '--per-minute', '100', '--per-day', '10'),
    ).rejects.toThrow('must be at least');
    const res = await request(gw.url).get('/v1/signals').set('Authorization', `Bearer ${key}`).expect(200);
    expect(res.headers['x-ratelimit-limit']).toBe('7');
    // A day equal to the minute is a plan (one minute's worth a day).
    await cli('set-plan', '--account', accountId, '--per-minute', '50', '--per-day', '50');
  });

  it('when list-keys names an account that does not exist, then it says so, as the other commands do', async () => {
    await expect(cli('list-keys', '--account', 'acc_nope')).rejects.toThrow(
      'Account acc_nope was not found.',
    );
    const [created] = await cli('create-account', '--email', 'no-keys-yet@example.com');
    const accountId = /account (acc_\S+)/.exec(created!)![1]!;
    expect(await cli('list-keys', '--account', accountId)).toEqual(['no keys']);
  });

  it('when the built CLI meets an unknown account or a short password, then it exits 1 and 2 with the reason on stderr', () => {
    const script = path.join(__dirname, '..', 'dist', 'cli', 'admin.cli.js');
    expect(existsSync(script)).toBe(true); // pnpm run build
    const env = {
      PATH: process.env.PATH,
      NODE_ENV: 'test',
      MONGO_URL: gw.config.MONGO_URL,
      GATEWAY_DB: gw.config.GATEWAY_DB,
      REDIS_URL: gw.config.REDIS_URL,
      REDIS_PREFIX: gw.config.REDIS_PREFIX,
      API_KEY_PEPPER: gw.config.API_KEY_PEPPER,
    };
    const admin = (...argv: string[]) =>
      spawnSync(process.execPath, [script, ...argv], { env, encoding: 'utf8', timeout: 120_000 });
    const missing = admin('list-keys', '--account', 'acc_nope');
    expect({ status: missing.status, stdout: missing.stdout, stderr: missing.stderr }).toEqual({
      status: 1,
      stdout: '',
      stderr: 'admin: Account acc_nope was not found.\n',
    });
    const short = admin('create-account', '--email', 'exit-code@example.com', '--password', 'short');
    expect(short.status).toBe(2);
    expect(short.stderr).toContain('admin: --password: password must have at least 12 characters');
  });

  it('when the demo command runs twice, then it reuses the demo account, prints its random password once and a working key, the earlier one revoked', async () => {
    const first = await cli('demo', '--email', 'demo-cli@signal.local');
    const second = await cli('demo', '--email', 'demo-cli@signal.local');
    const firstKey = first.find((l) => l.startsWith('DEMO_API_KEY='))!.replace('DEMO_API_KEY=', '');
    await request(gw.url).get('/v1/signals').set('Authorization', `Bearer ${firstKey}`).expect(401);
    expect(second).toContain('revoked 1 earlier demo key(s)');
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
    // Run after run, the account holds one active demo key: the plan's cap of 20 is never reached.
    for (let i = 0; i < 20; i++) await cli('demo', '--email', 'demo-cli@signal.local');
    const accountId = second[0]!.split(' ')[1]!;
    const keys = await cli('list-keys', '--account', accountId);
    expect(keys.filter((l) => l.includes(' active '))).toHaveLength(1);
  });

  it('when the demo command runs in production, then it is refused and no account is made', async () => {
    const lines: string[] = [];
    await expect(
      run(['demo', '--email', 'prod-demo@signal.local'], adminDeps(), (l) => lines.push(l), {
        ...DEVELOPMENT,
        production: true,
      }),
    ).rejects.toThrow('development only');
    expect(await gw.deps.repository.findAccountByEmail('prod-demo@signal.local')).toBeNull();
  });

  it("when the operator revokes a key with the CLI, then its live stream on a gateway ends at once, as the API's revocation ends it", async () => {
    // A gateway that never checks its streams by itself in the test: only the CLI's notice ends it.
    const holder = await startGateway({
      label: 'admin_cli_streams',
      upstreams: { signals: signals.url, stats: 'http://127.0.0.1:9', webhooks: 'http://127.0.0.1:9' },
      share: { dbName: gw.config.GATEWAY_DB, redisPrefix: gw.config.REDIS_PREFIX },
      env: { STREAM_CHECK_INTERVAL_MS: '3600000' },
    });
    const ops = await createDependencies(
      {
        MONGO_URL: infraUrls().mongoUrl,
        GATEWAY_DB: gw.config.GATEWAY_DB,
        REDIS_URL: infraUrls().redisUrl,
        REDIS_PREFIX: gw.config.REDIS_PREFIX,
        API_KEY_PEPPER: gw.config.API_KEY_PEPPER,
        DEFAULT_PLAN_MAX_KEYS: 20,
        DEFAULT_PLAN_MAX_WEBHOOKS: 25,
        DEFAULT_PLAN_MAX_STREAMS: 5,
      },
      silentLogger,
    );
    try {
      const { accountId, key, keyId } = await gw.account();
      const stream = await new Promise<IncomingMessage>((resolve, reject) =>
        get(`${holder.url}/v1/signals/stream`, { headers: { authorization: `Bearer ${key}` } }, resolve).once(
          'error',
          reject,
        ),
      );
      expect(stream.statusCode).toBe(200);
      let text = '';
      stream.setEncoding('utf8');
      stream.on('data', (chunk: string) => (text += chunk));
      const ended = new Promise<void>((done) => stream.once('close', () => done()));
      await run(
        ['revoke-key', '--account', accountId, '--key', keyId],
        ops.accounts,
        () => undefined,
        DEVELOPMENT,
      );
      await ended;
      expect(text.trimEnd().split('\n\n').at(-1)).toBe(
        'event: error\ndata: {"code":"UNAUTHORIZED","message":"The API key was revoked."}',
      );
    } finally {
      await ops.close();
      await holder.stop();
    }
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
          DEFAULT_PLAN_MAX_KEYS: 20,
          DEFAULT_PLAN_MAX_WEBHOOKS: 25,
          DEFAULT_PLAN_MAX_STREAMS: 5,
        },
        silentLogger,
        300,
      ),
    ).rejects.toThrow('Redis is not reachable (REDIS_URL); nothing was changed');
    await db.drop();
  });
});
