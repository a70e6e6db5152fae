import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { startTcpProxy, viaProxy, waitFor } from '@signal/test-kit';
import request from 'supertest';
import { startSignals, type SignalsHarness, INGEST_TOKEN } from './signals-harness';

const CLI = path.join(__dirname, '..', 'dist', 'simulator', 'simulate.cli.js');

function simulate(
  url: string,
  ...args: string[]
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  if (!existsSync(CLI)) throw new Error('simulator not built: run "pnpm build"');
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI, '--url', url, ...args], {
      env: { PATH: process.env.PATH ?? '', INGEST_TOKEN },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

let svc: SignalsHarness;
beforeAll(async () => {
  svc = await startSignals('simulator');
});
afterAll(() => svc.stop());

describe('simulator', () => {
  it('when it backfills 120 signals and runs live for 3, then they are stored over 30 days, varied, resolved, with every social link', async () => {
    const out = await simulate(svc.url, '--backfill', '120', '--count', '3', '--rate', '20', '--seed', '42');
    expect(out.code).toBe(0);
    expect(out.stderr).toMatch(/backfill \[#+\] 100% 120\/120/);
    expect(out.stdout.match(/^signal\.new /gm)).toHaveLength(3);

    const auth = { Authorization: `Bearer ${svc.token()}` };
    const all = await request(svc.url).get('/v1/signals?limit=100').set(auth).expect(200);
    expect(all.body.meta.total).toBe(123);
    const statuses = await Promise.all(
      ['winner', 'dead', 'rugged', 'active'].map(
        async (s) =>
          (await request(svc.url).get(`/v1/signals?status=${s}&limit=1`).set(auth)).body.meta.total as number,
      ),
    );
    for (const n of statuses) expect(n).toBeGreaterThan(0);
    expect(statuses[0]! / 123).toBeGreaterThan(0.1);
    expect(statuses[0]! / 123).toBeLessThan(0.45);
    const types = new Set(all.body.data.map((s: { type: string }) => s.type));
    expect(types.size).toBeGreaterThanOrEqual(4);
    // Spread over the backfill's 30 days: the newest and the oldest stored more than 10 days apart
    // (read from the signals themselves, not the test's clock).
    const times = all.body.data.map((s: { created_at: string }) => Date.parse(s.created_at));
    expect(Math.max(...times) - Math.min(...times)).toBeGreaterThan(10 * 86_400_000);
    const winner = (await request(svc.url).get('/v1/signals?status=winner&limit=1').set(auth)).body.data[0];
    expect(winner.performance.roi).toBeGreaterThan(100);
    // The spec types each social link as a URL: the demo feed fills all three.
    const detail = (await request(svc.url).get(`/v1/signals/${winner.id}`).set(auth).expect(200)).body.data;
    for (const link of ['twitter', 'telegram', 'website'])
      expect(new URL(detail.token.socials[link]).protocol).toBe('https:');
  }, 180_000);

  it('when the ingest token is missing or the arguments are bad, then it says so and exits non-zero', async () => {
    const bad = await simulate(svc.url, '--backfill=-3');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--backfill must be a whole number ≥ 0');
    const misspelt = await simulate(svc.url, '--backfil', '3');
    expect(misspelt.code).toBe(2);
    expect(misspelt.stderr).toContain("Unknown option '--backfil'");
  });

  it('when the service goes away while the feed runs forever, then the feed waits it out and goes on, never exits', async () => {
    const proxy = await startTcpProxy('127.0.0.1', Number(new URL(svc.url).port));
    const child = spawn(
      process.execPath,
      [CLI, '--url', viaProxy(svc.url, proxy), '--forever', '--rate', '20'],
      {
        env: { PATH: process.env.PATH ?? '', INGEST_TOKEN },
      },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    let exited = false;
    child.on('exit', () => (exited = true));
    const created = () => stdout.match(/^signal\.new /gm)?.length ?? 0;
    try {
      await waitFor(() => created() >= 2, 20_000, 20, 'the feed to create signals');
      proxy.cut();
      await waitFor(() => stderr.includes('trying again'), 20_000, 20, 'the feed to wait out the outage');
      const before = created();
      proxy.restore();
      await waitFor(() => created() >= before + 2, 30_000, 50, 'the feed to go on after the outage');
      expect(exited).toBe(false);
    } finally {
      child.kill('SIGTERM');
      await proxy.close();
    }
  }, 90_000);
});
