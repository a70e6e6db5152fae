import { execFile, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import request from 'supertest';
import { signalInput } from '../services/signals/test/signals-harness';
import { startSystem, type SystemHarness } from '../services/api-gateway/test/system-harness';

/**
 * `bash scripts/up.sh status` as a user runs it (a plain shell, the system's PATH): each process
 * of the run directory up or down, and the last signal's age read through a real gateway with
 * the demo key. The run directory is one of the test's own (SIGNAL_RUN_DIR), never the checkout's.
 */
const ROOT = path.join(__dirname, '..');

function status(runDir: string, gatewayPort: string): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    execFile(
      'bash',
      [path.join(ROOT, 'scripts', 'up.sh'), 'status'],
      {
        cwd: ROOT,
        env: { PATH: '/usr/bin:/bin', SIGNAL_RUN_DIR: runDir, GATEWAY_PORT: gatewayPort },
        encoding: 'utf8',
      },
      (err, stdout, stderr) => resolve({ code: err ? Number(err.code ?? 1) : 0, out: stdout + stderr }),
    );
  });
}

/** The STATE column of each process row. */
const states = (out: string) =>
  Object.fromEntries(
    out
      .split('\n')
      .map((l) => l.trim().split(/\s+/))
      .filter((w) => w.length >= 3 && /^(up|down)$/.test(w[1]!))
      .map((w) => [w[0]!, w[1]!]),
  );

describe('bash scripts/up.sh status', () => {
  let sys: SystemHarness;
  let runDir: string;
  let alive: ReturnType<typeof spawn>;

  beforeAll(async () => {
    sys = await startSystem('upstatus');
    runDir = mkdtempSync(path.join(tmpdir(), 'signal-run-'));
    mkdirSync(path.join(runDir, 'pids'), { recursive: true });
    // One process that is running (a stand-in pid: status only asks whether it lives) and one
    // whose process is gone.
    alive = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
    writeFileSync(path.join(runDir, 'pids', 'signals.pid'), String(alive.pid));
    const gone = spawn(process.execPath, ['-e', ''], { stdio: 'ignore' });
    await new Promise((r) => gone.once('exit', r));
    writeFileSync(path.join(runDir, 'pids', 'stats.pid'), String(gone.pid));
  }, 120_000);
  afterAll(async () => {
    alive?.kill();
    rmSync(runDir, { recursive: true, force: true });
    await sys?.stop();
  });

  it('when there is no demo key, then each process is listed up or down and the last signal is unknown', async () => {
    const { code, out } = await status(runDir, new URL(sys.gw.url).port);
    expect(code).toBe(0);
    expect(states(out)).toEqual({
      signals: 'up',
      stats: 'down',
      'webhooks-api': 'down',
      'webhooks-worker': 'down',
      'api-gateway': 'down',
      simulator: 'down',
    });
    expect(out).toMatch(/last signal: +unknown \(no demo key/);
  });

  it('when a signal came a moment ago, then its age is given in seconds and a stopped feed is pointed out', async () => {
    const { key } = await sys.gw.account();
    writeFileSync(path.join(runDir, 'demo-api-key'), `${key}\n`, { mode: 0o600 });
    await request(sys.signals.url)
      .post('/internal/signals')
      .set(sys.signals.ingestAuth)
      .send(signalInput({ type: 'new' }))
      .expect(201);
    const { code, out } = await status(runDir, new URL(sys.gw.url).port);
    expect(code).toBe(0);
    const age = /last signal: +(\d+) s ago \((\S+)\)/.exec(out);
    expect(age).not.toBeNull();
    expect(Number.isNaN(Date.parse(age![2]!))).toBe(false);
    expect(out).toContain("the demo feed is not running: 'bash scripts/up.sh simulate' starts it");
  });
});
