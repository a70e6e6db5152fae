import { verifyWebhook } from '@signal/sdk';
import { deliveryIdOf } from '../src/cli';
import { startReceiver, waitFor, type Receiver } from '@signal/test-kit';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import request from 'supertest';
import { signalInput } from '../../../services/signals/test/signals-harness';
import { startSystem, type SystemHarness } from '../../../services/api-gateway/test/system-harness';
import { sseServer, whenOpened, type SseServer } from './sse-server';

/**
 * `signal listen` as a user runs it: the built bin (dist/cli.js) as a process, reading a local
 * event stream and forwarding to a local receiver; what arrives must pass the SDK's own
 * verifyWebhook with the secret the command printed.
 */
const root = path.join(__dirname, '..');
const cli = path.join(root, 'dist', 'cli.js');

interface Listening {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  exited: Promise<number | null>;
}

function listen(args: string[], env: Record<string, string> = {}): Listening {
  const child = spawn(process.execPath, [cli, 'listen', ...args], {
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
  return { child, stdout: () => out, stderr: () => err, exited };
}

describe('signal listen', () => {
  let server: SseServer;
  let receiver: Receiver;

  beforeAll(async () => {
    // The bin is the built file the tarball ships: build it from the sources under test.
    const tsc = path.join(root, '..', '..', 'node_modules', 'typescript', 'bin', 'tsc');
    execFileSync(process.execPath, [tsc, '-p', path.join(root, 'tsconfig.json')], { stdio: 'pipe' });
    receiver = await startReceiver();
  }, 180_000);
  beforeEach(async () => {
    server = await sseServer();
  });
  afterEach(() => server.close());
  afterAll(() => receiver.close());

  it('when events are published, then each is POSTed to the local URL signed with the printed secret, verifyWebhook accepts it, and a line names its status', async () => {
    const run = listen(
      [
        '--forward-to',
        `${receiver.url}/hook`,
        '--base-url',
        server.url,
        '--events',
        'signal.new,signal.winner',
      ],
      { SIGNAL_API_KEY: 'sk_test_cli' },
    );
    try {
      const secret = await waitFor(
        () => /Webhook signing secret: (whsec_\S+)/.exec(run.stdout())?.[1],
        10_000,
        20,
        'the secret',
      );
      await new Promise<void>((resolve) => whenOpened(server, 1, resolve));
      const published = [server.publish('signal.new'), server.publish('signal.winner')];
      await waitFor(() => receiver.requests.filter((r) => r.path === '/hook').length >= 2, 10_000, 20, 'two');
      // A dropped connection meanwhile: the command resumes, and the one published then arrives once.
      server.drop();
      published.push(server.publish('signal.new'));
      await waitFor(
        () => receiver.requests.filter((r) => r.path === '/hook').length >= 3,
        10_000,
        20,
        'three',
      );
      const got = receiver.requests.filter((r) => r.path === '/hook');
      const payloads = got.map((r) => verifyWebhook(r.body, r.headers, secret));
      expect(payloads.map((p) => [p.event, p.data.id])).toEqual(
        published.map((e) => [e.event, (JSON.parse(e.data) as { data: { id: string } }).data.id]),
      );
      // Delivery-like ids (dlv_ + a ULID), one per event, the event's own on every forward of it.
      const webhookIds = got.map((r) => String(r.headers['webhook-id']));
      for (const id of webhookIds) expect(id).toMatch(/^dlv_[0-9A-HJKMNP-TV-Z]{26}$/);
      expect(new Set(webhookIds).size).toBe(3);
      expect(webhookIds).toEqual(published.map((e) => deliveryIdOf(e.id)));
      expect(got.every((r) => r.headers['content-type'] === 'application/json')).toBe(true);
      expect(server.authorizations).toEqual(['Bearer sk_test_cli', 'Bearer sk_test_cli']);
      expect(server.opened).toEqual([undefined, '2-0']);
      // The receiver answers before the command prints the line of that forward: wait for the line.
      const postLines = () =>
        run
          .stdout()
          .split('\n')
          .filter((l) => l.includes('--> POST'));
      await waitFor(() => postLines().length >= 3, 20_000, 20, 'three forward lines');
      const lines = postLines();
      expect(lines).toHaveLength(3);
      expect(lines.every((l) => l.endsWith('[200]'))).toBe(true);
      expect(lines[1]).toContain('signal.winner  2-0  sig_2');
    } finally {
      run.child.kill('SIGINT');
    }
    expect(await run.exited).toBe(0);
  }, 180_000);

  it('when the API key is refused, then the command says so and exits 1 without claiming to forward', async () => {
    await server.close();
    server = await sseServer((_req, res) => {
      res.writeHead(401, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          success: false,
          error: { code: 'UNAUTHORIZED', message: 'Invalid API key.', request_id: 'req_1' },
        }),
      );
      return true;
    });
    const run = listen(['--forward-to', `${receiver.url}/refused`, '--base-url', server.url], {
      SIGNAL_API_KEY: 'sk_live_wrong',
    });
    expect(await run.exited).toBe(1);
    expect(run.stdout()).not.toContain('Ready');
    expect(run.stderr()).toContain('signal: the API key was refused (UNAUTHORIZED: Invalid API key.)');
    expect(server.opened).toHaveLength(1);
  });

  it('when --secret is given, then deliveries are signed with it', async () => {
    const secret = `whsec_${Buffer.from('a fixed secret of 24 bytes').toString('base64')}`;
    const run = listen(
      ['--forward-to', `${receiver.url}/fixed`, '--base-url', server.url, '--secret', secret],
      {
        SIGNAL_API_KEY: 'sk_test_cli',
      },
    );
    try {
      await new Promise<void>((resolve) => whenOpened(server, 1, resolve));
      server.publish('signal.dead');
      await waitFor(() => receiver.requests.some((r) => r.path === '/fixed'), 10_000, 20, 'one');
      const got = receiver.requests.find((r) => r.path === '/fixed')!;
      expect(verifyWebhook(got.body, got.headers, secret).event).toBe('signal.dead');
      expect(run.stdout()).toContain(`Webhook signing secret: ${secret}`);
    } finally {
      run.child.kill('SIGINT');
    }
    await run.exited;
  }, 180_000);

  it('when the target is not on this machine, then the command refuses it without --allow-remote and opens no stream', async () => {
    const run = listen(['--forward-to', 'https://hooks.example.com/hook', '--base-url', server.url], {
      SIGNAL_API_KEY: 'sk_test_cli',
    });
    expect(await run.exited).toBe(2);
    expect(run.stderr()).toContain('unless --allow-remote');
    expect(server.opened).toEqual([]);
  });

  it('when --allow-remote is given, then a remote target is taken and a failed forward is reported on its line', async () => {
    const run = listen(
      ['--forward-to', 'http://signal-cli-test.invalid/hook', '--base-url', server.url, '--allow-remote'],
      { SIGNAL_API_KEY: 'sk_test_cli' },
    );
    try {
      await new Promise<void>((resolve) => whenOpened(server, 1, resolve));
      server.publish('signal.new');
      const line = await waitFor(
        () =>
          run
            .stdout()
            .split('\n')
            .find((l) => l.includes('--> POST http://signal-cli-test.invalid/hook')),
        20_000,
        20,
        'the forward line',
      );
      expect(line).toMatch(/\[failed \(.+\)\]$/);
    } finally {
      run.child.kill('SIGINT');
    }
    expect(await run.exited).toBe(0);
  }, 180_000);

  it('when no API key is given, then the command says how to give one', async () => {
    const run = listen(['--forward-to', `${receiver.url}/hook`, '--base-url', server.url]);
    expect(await run.exited).toBe(2);
    expect(run.stderr()).toContain('set SIGNAL_API_KEY or pass --api-key');
    expect(server.opened).toEqual([]);
  });
});

describe('signal listen through the gateway', () => {
  let sys: SystemHarness;
  beforeAll(async () => {
    sys = await startSystem('sdk_cli');
  });
  afterAll(() => sys.stop());

  it('when a signal is ingested, then the command forwards its signal.new to the local handler, signed, and the line shows 200', async () => {
    const { key } = await sys.gw.account({ per_minute: 1000, per_day: 10_000 });
    const run = listen(
      ['--forward-to', `${sys.receiver.url}/listen`, '--base-url', sys.gw.url, '--type', 'premium'],
      {
        SIGNAL_API_KEY: key,
      },
    );
    try {
      const secret = await waitFor(
        () => /Webhook signing secret: (whsec_\S+)/.exec(run.stdout())?.[1],
        10_000,
        20,
        'the secret',
      );
      // The stream starts live once open: signals are ingested until one is forwarded.
      const ingested: string[] = [];
      await waitFor(
        async () => {
          if (sys.receiver.requests.some((r) => r.path === '/listen')) return true;
          const res = await request(sys.signals.url)
            .post('/internal/signals')
            .set(sys.signals.ingestAuth)
            .send(signalInput({ type: 'premium', is_premium: true }))
            .expect(201);
          ingested.push(res.body.data.id as string);
          return false;
        },
        15_000,
        250,
        'a forwarded event',
      );
      const got = sys.receiver.requests.find((r) => r.path === '/listen')!;
      const payload = verifyWebhook(got.body, got.headers, secret);
      expect([payload.event, payload.data.type]).toEqual(['signal.new', 'premium']);
      expect(String(got.headers['webhook-id'])).toMatch(/^dlv_[0-9A-HJKMNP-TV-Z]{26}$/);
      expect(ingested).toContain(payload.data.id);
      await waitFor(() => run.stdout().includes('[200]'), 10_000, 20, 'the forward line');
    } finally {
      run.child.kill('SIGINT');
    }
    expect(await run.exited).toBe(0);
  }, 180_000);
});
