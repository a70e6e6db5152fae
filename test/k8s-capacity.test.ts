import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

/** infra/k8s/capacity.mjs (docs/capacity.md) reads its figures from the benches' latest rows (infra/bench/latest.json). */
const ROOT = path.join(__dirname, '..');
const SCRIPT = path.join(ROOT, 'infra/k8s/capacity.mjs');

interface Model {
  figures: Record<string, number>;
  fromFigures: string[];
  plans: Array<{ rps: number; 'api-gateway': number; signals: number }>;
  first: { part: string; atRps: number };
}

function run(...args: string[]): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [SCRIPT, ...args], { encoding: 'utf8' });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}
const model = (...args: string[]): Model => JSON.parse(run('--json', ...args).stdout) as Model;

describe('capacity model', () => {
  it("when run, then every measured figure comes from the benches' latest rows", () => {
    expect(model().fromFigures.sort()).toEqual(
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

  it("when the benches' figures change, then the table follows them", () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'capacity-'));
    const latest = JSON.parse(readFileSync(path.join(ROOT, 'infra/bench/latest.json'), 'utf8')) as {
      gateway: { routes: Record<string, Array<{ name: string; rps: number }>> };
    };
    const read = Object.entries(latest.gateway.routes).find(([label]) =>
      label.startsWith('GET /v1/signals/{id}'),
    );
    read![1].find((r) => r.name.startsWith('(a)'))!.rps = 100000;
    writeFileSync(path.join(dir, 'latest.json'), JSON.stringify(latest));
    const changed = model('--figures', path.join(dir, 'latest.json'));
    expect(changed.figures['db-direct-rps']).toBe(100000);
    expect(changed.plans[2]!['api-gateway']).not.toBe(model().plans[2]!['api-gateway']);
  });

  it('when the figures file is not JSON, then it exits 2 naming it', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'capacity-'));
    writeFileSync(path.join(dir, 'latest.json'), '| a Markdown table |');
    const r = run('--figures', path.join(dir, 'latest.json'));
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/--figures .*latest\.json: not JSON/);
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

  it('when run on the committed figures, then docs/capacity.md shows the table it prints', () => {
    const table = run()
      .stdout.split('\n')
      .filter((line) => line.startsWith('|'))
      .join('\n');
    expect(table.split('\n').length).toBeGreaterThan(5);
    expect(readFileSync(path.join(ROOT, 'docs/capacity.md'), 'utf8')).toContain(table);
  });

  it('when printed, then the table has the three loads and the deliveries column', () => {
    const out = run().stdout;
    expect(out).toMatch(/^\| {2}\| 1k req\/s \| 10k req\/s \| 100k req\/s \| 10M deliveries\/day \|$/m);
    expect(out).toMatch(/^saturates first: /m);
  });
});
