import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

/**
 * The SDK as a user gets it: one command (`bash scripts/sdk.sh`) makes the tarball, and `npm install` of it in an empty
 * folder (no monorepo, no pnpm) gives a package that `require`, `import` and TypeScript all take.
 */
const root = path.join(__dirname, '..');
const repo = path.join(root, '..', '..');
const run = (cmd: string, args: string[], cwd: string) =>
  execFileSync(cmd, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();

describe('@signal/sdk tarball', () => {
  let scratch: string;
  let tarball: string;

  beforeAll(() => {
    scratch = mkdtempSync(path.join(tmpdir(), 'signal-sdk-'));
    // The README's command, in a shell with nothing on PATH but the system's (no pnpm): it prints
    // the tarball's path and nothing else on stdout.
    const printed = execFileSync('bash', [path.join(repo, 'scripts', 'sdk.sh'), scratch], {
      cwd: repo,
      encoding: 'utf8',
      env: { PATH: '/usr/bin:/bin', HOME: process.env.HOME ?? tmpdir() },
      stdio: ['ignore', 'pipe', 'pipe'],
    }).trim();
    const made = readdirSync(scratch).filter((f) => /^signal-sdk-.+\.tgz$/.test(f));
    expect(made).toHaveLength(1);
    tarball = made[0]!;
    expect(printed).toBe(path.join(scratch, tarball));
    writeFileSync(path.join(scratch, 'package.json'), JSON.stringify({ name: 'scratch', private: true }));
    run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', `./${tarball}`], scratch);
  }, 180_000);
  afterAll(() => {
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  });

  it('when the SDK generates its types from the contracts, then the committed types are the ones the contracts make', () => {
    // Exits non-zero (and the call throws) when src/generated/openapi.ts is out of date.
    expect(run(process.execPath, ['scripts/generate-types.mjs', '--check'], root)).toBe('');
  });

  it('when the tarball is installed in an empty folder, then it names the version, needs Node 18 and nothing else', () => {
    const pkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as {
      version: string;
      engines: { node: string };
      dependencies?: Record<string, string>;
    };
    expect(tarball).toBe(`signal-sdk-${pkg.version}.tgz`);
    expect(pkg.engines.node).toBe('>=18');
    expect(pkg.dependencies).toBeUndefined();
    const installed = readdirSync(path.join(scratch, 'node_modules')).filter((d) => !d.startsWith('.'));
    expect(installed).toEqual(['@signal']);
  });

  it('when it is required and imported from the scratch folder, then CommonJS and ES modules export the client', () => {
    expect(
      run(
        process.execPath,
        [
          '-e',
          "const s = require('@signal/sdk'); console.log(typeof s.SignalClient, typeof s.verifyWebhook)",
        ],
        scratch,
      ),
    ).toBe('function function');
    expect(
      run(
        process.execPath,
        [
          '--input-type=module',
          '-e',
          "import { SignalClient, verifyWebhook, RateLimitError } from '@signal/sdk'; console.log(typeof SignalClient, typeof verifyWebhook, typeof RateLimitError)",
        ],
        scratch,
      ),
    ).toBe('function function function');
  });

  it('when the tarball is installed, then its `signal` command runs from node_modules/.bin', () => {
    const bin = path.join(scratch, 'node_modules', '.bin', 'signal');
    expect(run(bin, ['--help'], scratch)).toContain('Usage: signal listen --forward-to <url>');
    const refused = (() => {
      try {
        run(bin, ['listen', '--forward-to', 'https://hooks.example.com/x', '--api-key', 'k'], scratch);
        return 0;
      } catch (err) {
        return typeof err === 'object' && err !== null && 'status' in err ? err.status : undefined;
      }
    })();
    expect(refused).toBe(2);
  });

  it('when a TypeScript user compiles against it (ES module and CommonJS), then the types resolve and narrow', () => {
    const source = `import { SignalClient, type WebhookPayload, type ListSignalsParams } from '@signal/sdk';
const client = new SignalClient({ baseUrl: 'http://localhost', apiKey: 'k', maxRetryWait: 1000, onRetry: (e) => e.delayMs });
const params: ListSignalsParams = { limit: 20, type: 'premium' };
// @ts-expect-error limit is an integer, not text
const wrong: ListSignalsParams = { limit: 'abc' };
export function winners(p: WebhookPayload): number | undefined {
  return p.event === 'signal.winner' ? p.data.performance.roi : undefined;
}
export const pending = [client.signals.list(params), wrong];
`;
    const tsc = path.join(repo, 'node_modules', 'typescript', 'bin', 'tsc');
    // One compiler run for both: under nodenext a .mts file is an ES module and a .cts file
    // CommonJS, each resolving the package through its own export condition.
    const files = ['esm.mts', 'cjs.cts'];
    for (const file of files) writeFileSync(path.join(scratch, file), source);
    const flags = ['--noEmit', '--strict', '--module', 'nodenext', '--lib', 'es2022,dom'];
    expect(run(process.execPath, [tsc, ...flags, ...files], scratch)).toBe('');
  });
});
