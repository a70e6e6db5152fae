import { execFile, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
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

/**
 * A start as far as the run directory's lock goes: takes it as up.sh does and says so, then holds
 * it until the seven others have been refused (at most 5 s: two holders would wait for a refusal
 * that never comes), so no start comes late enough to find it free again.
 */
const CONTENDER = `
  ( set -e
    source ${JSON.stringify(path.join(ROOT, 'scripts', 'lib', 'run-dir.sh'))}
    take_run_lock "$1"
    echo "$$" >>"$1/holders"
    for _ in $(seq 250); do [ "$(cat "$1/refused" 2>/dev/null | wc -l)" -ge 7 ] && break; sleep 0.02; done
  ) || { echo refused >>"$1/refused"; exit 1; }`;

/** Eight starts of one run directory at once: how each ended. */
function contend(runDir: string): Promise<Array<{ code: number; err: string }>> {
  return Promise.all(
    Array.from(
      { length: 8 },
      () =>
        new Promise<{ code: number; err: string }>((resolve) => {
          execFile(
            'bash',
            ['-c', CONTENDER, 'contender', runDir],
            { encoding: 'utf8' },
            (err, _out, stderr) => resolve({ code: err ? Number(err.code ?? 1) : 0, err: stderr }),
          );
        }),
    ),
  );
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

  it('when the demo key is over its limit or refused, then the last signal is unknown and the status says why', async () => {
    // A day's limit of one request, used up here (away from midnight UTC, when the day turns).
    const toMidnight = 86_400_000 - (Date.now() % 86_400_000);
    if (toMidnight < 60_000) await new Promise((r) => setTimeout(r, toMidnight + 1_000));
    const { key } = await sys.gw.account({ per_minute: 60, per_day: 1 });
    await request(sys.gw.url).get('/v1/signals?limit=1').set('Authorization', `Bearer ${key}`).expect(200);
    writeFileSync(path.join(runDir, 'demo-api-key'), `${key}\n`, { mode: 0o600 });
    const limited = await status(runDir, new URL(sys.gw.url).port);
    expect(limited.code).toBe(0);
    expect(limited.out).toMatch(
      /last signal: +unknown \(the demo key is over its rate limit: 429, retry in \d+ s\)/,
    );

    writeFileSync(path.join(runDir, 'demo-api-key'), `sk_live_${'x'.repeat(40)}\n`, { mode: 0o600 });
    const refused = await status(runDir, new URL(sys.gw.url).port);
    expect(refused.out).toMatch(/last signal: +unknown \(the gateway refused the demo key: 401/);
  });
});

describe("bash scripts/up.sh's stop of its processes", () => {
  it('when a process takes longer than a second to shut down, then the stop lets it finish and returns once its port is free', async () => {
    const runDir = mkdtempSync(path.join(tmpdir(), 'signal-run-'));
    mkdirSync(path.join(runDir, 'pids'));
    // A service that drains for 1.5 s after SIGTERM, holding its port, then says so and exits.
    const drained = path.join(runDir, 'drained');
    const service = spawn(
      process.execPath,
      [
        '-e',
        `const s = require('node:net').createServer().listen(0, '127.0.0.1', () => console.log(s.address().port));
         process.on('SIGTERM', () => setTimeout(() => { require('node:fs').writeFileSync(${JSON.stringify(drained)}, 'yes'); process.exit(0); }, 1500));`,
      ],
      { stdio: ['ignore', 'pipe', 'ignore'] },
    );
    try {
      const port = Number(
        await new Promise<string>((resolve) =>
          service.stdout!.once('data', (d: Buffer) => resolve(d.toString())),
        ),
      );
      writeFileSync(path.join(runDir, 'pids', 'signals.pid'), String(service.pid));
      const code = await new Promise<number>((resolve) =>
        execFile(
          'bash',
          [
            '-c',
            `source ${JSON.stringify(path.join(ROOT, 'scripts', 'lib', 'run-dir.sh'))}; stop_run_processes "$1"`,
            'stop',
            runDir,
          ],
          (err) => resolve(err ? 1 : 0),
        ),
      );
      expect(code).toBe(0);
      // It shut down by itself (not killed mid-drain), and its port is free at once.
      expect(readFileSync(drained, 'utf8')).toBe('yes');
      const free = createServer();
      await new Promise<void>((resolve, reject) => {
        free.once('error', reject);
        free.listen(port, '127.0.0.1', resolve);
      });
      free.close();
      expect(readdirSync(path.join(runDir, 'pids'))).toEqual([]);
    } finally {
      service.kill('SIGKILL');
      rmSync(runDir, { recursive: true, force: true });
    }
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
  it('when eight starts take one run directory at once, again and again, then each time one holds it and the others refuse', async () => {
    const runDir = mkdtempSync(path.join(tmpdir(), 'signal-run-'));
    try {
      for (let trial = 0; trial < 30; trial++) {
        for (const file of ['holders', 'refused']) rmSync(path.join(runDir, file), { force: true });
        const results = await contend(runDir);
        const holders = readFileSync(path.join(runDir, 'holders'), 'utf8').trim().split('\n');
        expect({ trial, holders: holders.length }).toEqual({ trial, holders: 1 });
        expect(results.filter((r) => r.code === 0)).toHaveLength(1);
        for (const r of results.filter((x) => x.code !== 0))
          expect(r.err).toMatch(/another 'bash scripts\/up\.sh'/);
        // Nothing is left behind but the guard file: the lock went with its holder.
        expect(readdirSync(runDir).sort()).toEqual(['holders', 'refused', 'up.lock.guard']);
      }
    } finally {
      rmSync(runDir, { recursive: true, force: true });
    }
  });
  it('when the holder of the lock was killed, then one start takes it over, again and again', async () => {
    const runDir = mkdtempSync(path.join(tmpdir(), 'signal-run-'));
    const gone = spawn(process.execPath, ['-e', ''], { stdio: 'ignore' });
    await new Promise((r) => gone.once('exit', r));
    try {
      for (let trial = 0; trial < 10; trial++) {
        for (const file of ['holders', 'refused']) rmSync(path.join(runDir, file), { force: true });
        mkdirSync(path.join(runDir, 'up.lock'));
        writeFileSync(path.join(runDir, 'up.lock', 'pid'), String(gone.pid));
        const results = await contend(runDir);
        const holders = readFileSync(path.join(runDir, 'holders'), 'utf8').trim().split('\n');
        expect({ trial, holders: holders.length }).toEqual({ trial, holders: 1 });
        expect(results.filter((r) => r.code === 0)).toHaveLength(1);
        expect(readdirSync(runDir).sort()).toEqual(['holders', 'refused', 'up.lock.guard']);
      }
    } finally {
      rmSync(runDir, { recursive: true, force: true });
    }
  });
});
