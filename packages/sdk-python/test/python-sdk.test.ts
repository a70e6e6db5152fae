import { SignalClient, verifyWebhook } from '@signal/sdk';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Webhook } from 'standardwebhooks';
import { INGEST_TOKEN } from '../../../services/signals/test/signals-harness';
import { signatureHeaders } from '../../../services/webhooks/src/domain/signing';
import { startSystem, type SystemHarness } from '../../../services/api-gateway/test/system-harness';

/**
 * The Python SDK (packages/sdk-python) in the project's one test command: installed from the
 * repository path into a virtual environment with no package index, then its unit and live
 * tests (`python3 -m unittest discover`) run against the whole system started here, with an
 * account and keys made through the public API and webhook signatures made by the TypeScript code.
 */
const PACKAGE = path.join(__dirname, '..');

interface Run {
  code: number | null;
  output: string;
}

/** Asynchronous: the services of this test run in this process and must keep responding. */
function run(command: string, args: string[], options: { cwd?: string; env?: Record<string, string> } = {}) {
  return new Promise<Run>((resolve, reject) => {
    const child = spawn(command, args, {
      cwd: options.cwd ?? PACKAGE,
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '',
        PYTHONDONTWRITEBYTECODE: '1',
        ...options.env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, output }));
  });
}

/** Fails the test with the command's whole output when it did not exit 0. */
function succeeded(label: string, result: Run): string {
  if (result.code !== 0) throw new Error(`${label} exited ${String(result.code)}:\n${result.output}`);
  return result.output;
}

interface Vector {
  name: string;
  body: string;
  headers: Record<string, string>;
  secrets: string[];
  now: number;
  ts_ok: boolean;
}

const secret = () => `whsec_${randomBytes(24).toString('base64')}`;

/** Requests signed by the worker's signing and by the standardwebhooks library, judged by the TypeScript SDK. */
function webhookVectors(): { vectors: Vector[]; expected: boolean[] } {
  const now = 1_800_000_000;
  const body = JSON.stringify({
    event: 'signal.winner',
    timestamp: '2027-01-15T08:00:00.000Z',
    data: { id: 'sig_01J0000000000000000000000', token: { symbol: 'ÆTHER', name: 'Æther — ünïcode' } },
  });
  const [oldSecret, newSecret, otherSecret] = [secret(), secret(), secret()];
  const live = { created_at: new Date(0), expires_at: null };
  const overlapping = { created_at: new Date(0), expires_at: new Date(now * 1000 + 60_000) };
  const expired = { created_at: new Date(0), expires_at: new Date(now * 1000 - 1) };
  const worker = (secrets: { secret: string; created_at: Date; expires_at: Date | null }[]) =>
    signatureHeaders(secrets, 'dlv_01J0000000000000000000000', body, now * 1000);
  const single = worker([{ ...live, secret: newSecret }]);
  const rotating = worker([
    { ...live, secret: newSecret },
    { ...overlapping, secret: oldSecret },
  ]);
  const afterOverlap = worker([
    { ...live, secret: newSecret },
    { ...expired, secret: oldSecret },
  ]);
  const library = new Webhook(newSecret);
  const libraryHeaders = {
    'webhook-id': 'msg_library',
    'webhook-timestamp': String(now),
    'webhook-signature': library.sign('msg_library', new Date(now * 1000), body),
  };
  const cases: [string, string, Record<string, string>, string[], number, boolean][] = [
    ['worker, one secret', body, single, [newSecret], now, true],
    ['worker, rotation overlap, new secret', body, rotating, [newSecret], now, true],
    ['worker, rotation overlap, old secret', body, rotating, [oldSecret], now, true],
    ['worker, rotation overlap, both secrets', body, rotating, [otherSecret, oldSecret], now, true],
    ['worker, overlap over, old secret', body, afterOverlap, [oldSecret], now, false],
    ['worker, overlap over, new secret', body, afterOverlap, [newSecret], now, true],
    ['worker, other secret', body, single, [otherSecret], now, false],
    ['worker, body changed', body.replace('winner', 'dead'), single, [newSecret], now, false],
    ['worker, id changed', body, { ...single, 'webhook-id': 'dlv_other' }, [newSecret], now, false],
    ['worker, 299 s later', body, single, [newSecret], now + 299, true],
    ['worker, 301 s later', body, single, [newSecret], now + 301, false],
    ['worker, 301 s earlier', body, single, [newSecret], now - 301, false],
    ['standardwebhooks library', body, libraryHeaders, [newSecret], now, true],
    ['standardwebhooks library, other secret', body, libraryHeaders, [oldSecret], now, false],
  ];
  const vectors = cases.map(([name, b, headers, secrets, at]) => {
    let ok = true;
    try {
      verifyWebhook(b, headers, secrets, { now: new Date(at * 1000) });
    } catch {
      ok = false;
    }
    return { name, body: b, headers, secrets, now: at, ts_ok: ok };
  });
  return { vectors, expected: cases.map((c) => c[5]) };
}

describe('the Python SDK against the running system', () => {
  let sys: SystemHarness;
  let dir: string;

  /** An account made by the operator (there is no public sign-up), its key made through the public API. */
  async function accountKey(plan: { per_minute: number; per_day: number }) {
    const password = `pw-${randomBytes(8).toString('hex')}`;
    const { email } = await sys.gw.account(plan, password);
    const client = new SignalClient({ baseUrl: sys.gw.url });
    await client.auth.login(email, password);
    const { key } = await client.account.createKey({ name: 'python sdk test' });
    return { email, password, key };
  }

  beforeAll(async () => {
    sys = await startSystem('pysdk');
    dir = mkdtempSync(path.join(tmpdir(), 'signal-pysdk-'));
  });
  afterAll(async () => {
    await sys.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('when the TypeScript code signs webhook requests, then its own SDK judges each vector as intended', () => {
    const { vectors, expected } = webhookVectors();
    expect(vectors.map((v) => [v.name, v.ts_ok])).toEqual(vectors.map((v, i) => [v.name, expected[i]]));
  });

  it('when the package is installed from the repository path with no index, then its unit and live tests pass', async () => {
    const main = await accountKey({ per_minute: 10_000, per_day: 100_000 });
    const limited = await accountKey({ per_minute: 5, per_day: 1000 });
    const vectorsFile = path.join(dir, 'webhook-vectors.json');
    writeFileSync(vectorsFile, JSON.stringify(webhookVectors().vectors));

    const venv = path.join(dir, 'venv');
    succeeded('python3 -m venv', await run('python3', ['-m', 'venv', '--system-site-packages', venv]));
    const python = path.join(venv, 'bin', 'python');
    succeeded(
      'pip install',
      await run(
        python,
        ['-m', 'pip', 'install', '--no-build-isolation', '--no-index', '--no-cache-dir', PACKAGE],
        {
          cwd: dir,
        },
      ),
    );
    const where = succeeded(
      'import signal_sdk',
      await run(python, ['-c', 'import signal_sdk; print(signal_sdk.__file__)'], { cwd: dir }),
    );
    expect(where.trim().startsWith(venv)).toBe(true);

    const result = await run(python, ['-m', 'unittest', 'discover', '-s', 'tests', '-t', '.', '-v'], {
      env: {
        SIGNAL_BASE_URL: sys.gw.url,
        SIGNAL_API_KEY: main.key,
        SIGNAL_EMAIL: main.email,
        SIGNAL_PASSWORD: main.password,
        SIGNAL_LIMITED_API_KEY: limited.key,
        SIGNAL_INGEST_URL: sys.signals.url,
        SIGNAL_INGEST_TOKEN: INGEST_TOKEN,
        SIGNAL_SDK_WEBHOOK_VECTORS: vectorsFile,
      },
    });
    const output = succeeded('python3 -m unittest', result);
    // Every live test ran: none skipped for want of the environment.
    expect({ skipped: /skipped/i.test(output), ok: /^OK$/m.test(output) }).toEqual({
      skipped: false,
      ok: true,
    });
    expect(output).toMatch(/test_when_the_bot_runs_as_written/);
    expect(output).toMatch(/test_types\.ServedDocumentTests/);
  }, 300_000);
});
