import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

/** infra/k8s/capacity.mjs (docs/capacity.md) reads its figures from the README's Benchmarks tables. */
const ROOT = path.join(__dirname, '..');
const SCRIPT = path.join(ROOT, 'infra/k8s/capacity.mjs');

interface Model {
  figures: Record<string, number>;
  fromReadme: string[];
  plans: Array<{ rps: number; 'api-gateway': number; signals: number }>;
  first: { part: string; atRps: number };
}

function run(...args: string[]): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [SCRIPT, ...args], { encoding: 'utf8' });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}
const model = (...args: string[]): Model => JSON.parse(run('--json', ...args).stdout) as Model;

describe('capacity model', () => {
  it('when run, then every measured figure comes from the README Benchmarks tables', () => {
    expect(model().fromReadme.sort()).toEqual(
      [
        'db-direct-rps',
        'db-gateway-rps',
        'deliveries-per-s',
        'list-p99-ms',
        'nodb-direct-rps',
        'nodb-gateway-rps',
        'stats-p99-ms',
      ].sort(),
    );
  });

  it('when the README figures change, then the table follows them (the latest gateway run, thousands separators and all)', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'capacity-'));
    const readme = readFileSync(path.join(ROOT, 'README.md'), 'utf8').replace(
      /^\| read by id, `GET \/v1\/signals\/\{id\}` \| [\d,.]+, /m,
      '| read by id, `GET /v1/signals/{id}` | 100,000, ',
    );
    writeFileSync(path.join(dir, 'README.md'), readme);
    const changed = model('--readme', path.join(dir, 'README.md'));
    expect(changed.figures['db-direct-rps']).toBe(100000);
    expect(changed.plans[2]!['api-gateway']).not.toBe(model().plans[2]!['api-gateway']);
  });

  it('when a flag overrides a figure, then it wins, and loads scale the stateless pods up', () => {
    const m = model('--list-p99-ms', '10');
    expect(m.figures['list-p99-ms']).toBe(10);
    const [a, b, c] = m.plans;
    expect(a!['api-gateway']).toBeLessThanOrEqual(b!['api-gateway']);
    expect(b!['api-gateway']).toBeLessThan(c!['api-gateway']);
    expect(m.first.atRps).toBeGreaterThan(1000);
  });

  it('when a flag is unknown or not a positive number, then it exits 2 with a message', () => {
    const unknown = run('--bogus', '1');
    expect(unknown.status).toBe(2);
    expect(unknown.stderr).toMatch(/Unknown option '--bogus'/);
    const bad = run('--headroom', 'zero');
    expect(bad.status).toBe(2);
    expect(bad.stderr).toMatch(/--headroom: a positive number/);
  });

  it('when printed, then the table has the three loads and the deliveries column', () => {
    const out = run().stdout;
    expect(out).toMatch(/^\| {2}\| 1k req\/s \| 10k req\/s \| 100k req\/s \| 10M deliveries\/day \|$/m);
    expect(out).toMatch(/^saturates first: /m);
  });
});
