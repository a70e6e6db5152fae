import { execFile, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
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
  return upSh('status', runDir, gatewayPort);
}

function upSh(command: string, runDir: string, gatewayPort: string): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    execFile(
      'bash',
      [path.join(ROOT, 'scripts', 'up.sh'), command],
      {
        cwd: ROOT,
        env: { PATH: '/usr/bin:/bin', SIGNAL_RUN_DIR: runDir, GATEWAY_PORT: gatewayPort, NO_DOCKER: '1' },
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

describe('bash scripts/up.sh beside a port it does not hold', () => {
  it('when a port is held by a process the script did not start, then it says which and exits 1 before starting anything', async () => {
    // The gateway's port, held here (the services' fixed ports may be free, or held by a system
    // the run command runs: either way no process of this run directory holds them).
    const holder = createServer();
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    const runDir = mkdtempSync(path.join(tmpdir(), 'signal-run-'));
    try {
      const { code, out } = await upSh('up', runDir, String((holder.address() as AddressInfo).port));
      expect(code).toBe(1);
      expect(out).toMatch(/error: port \d+ is in use by a process this script did not start/);
      // Nothing was started: no pid file, no service log.
      expect(readdirSync(path.join(runDir, 'pids'))).toEqual([]);
      expect(readdirSync(path.join(runDir, 'logs'))).toEqual([]);
    } finally {
      holder.close();
      rmSync(runDir, { recursive: true, force: true });
    }
  });
  it('when another start holds the run directory, then a second start refuses at once, naming it, and starts nothing', async () => {
    const lockedDir = mkdtempSync(path.join(tmpdir(), 'signal-run-'));
    // The first start, as far as the lock tells: a process that is running.
    const first = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
    try {
      mkdirSync(path.join(lockedDir, 'up.lock'), { recursive: true });
      writeFileSync(path.join(lockedDir, 'up.lock', 'pid'), String(first.pid));
      const { code, out } = await upSh('up', lockedDir, '4999');
      expect(code).toBe(1);
      expect(out).toContain(`another 'bash scripts/up.sh' (pid ${first.pid}) is running for ${lockedDir}`);
      expect(readdirSync(path.join(lockedDir, 'pids'))).toEqual([]);
      expect(readdirSync(path.join(lockedDir, 'logs'))).toEqual([]);
    } finally {
      first.kill();
      rmSync(lockedDir, { recursive: true, force: true });
    }
  });
});
