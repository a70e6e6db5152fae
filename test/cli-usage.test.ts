import { runBuilt } from './built-services';

/**
 * The CLIs, from their built output, with nothing configured (every bench shares the gateway
 * bench's parsing, the dlq commands are tested in-process): a misspelt or unknown option is a
 * usage error — exit code 2 and the usage on stderr — before any config is read or any
 * connection made (`--per-minte 100` once gave 60/min in silence).
 */
const CASES: Array<[string, string, string[]]> = [
  [
    'admin',
    'services/api-gateway/dist/cli/admin.cli.js',
    ['create-account', '--email', 'a@example.com', '--per-minte', '100'],
  ],
  ['simulate', 'services/signals/dist/simulator/simulate.cli.js', ['--backfil', '10']],
  ['reindex', 'services/signals/dist/cli/reindex.cli.js', ['--fersh']],
  ['stats rebuild', 'services/stats/dist/cli/rebuild.cli.js', ['--all']],
  ['purge', 'packages/messaging/dist/cli/purge.cli.js', ['--prefx', 'p']],
  ['gateway bench', 'infra/bench/dist/gateway.bench.js', ['--secs', '3']],
  ['chaos', 'infra/bench/dist/chaos.js', ['--shrot']],
];

describe('command lines', () => {
  it('when any CLI gets a misspelt option, then it exits 2 with its usage, before config or connections', async () => {
    const results = await Promise.all(
      CASES.map(async ([name, entry, args]) => {
        const run = runBuilt(entry, {}, args);
        const code = await run.exited;
        const wrong = args.find((a) => a.startsWith('--') && a !== '--email');
        return { name, code, output: run.output(), wrong };
      }),
    );
    for (const r of results) {
      expect({ name: r.name, code: r.code }).toEqual({ name: r.name, code: 2 });
      expect(r.output).toContain(`${r.name}: Unknown option '${r.wrong}'`);
      expect(r.output).toMatch(/usage:/);
      expect(r.output).not.toMatch(/is required|ECONNREFUSED|\n\s+at /);
    }
  });

  it('when a number option is not a whole number ≥ 1, then exit 2 naming it, before config or connections', async () => {
    const run = runBuilt('infra/bench/dist/gateway.bench.js', {}, ['--seconds', '0']);
    expect(await run.exited).toBe(2);
    expect(run.output()).toContain('gateway bench: --seconds must be a whole number ≥ 1');
    const admin = runBuilt('services/api-gateway/dist/cli/admin.cli.js', {}, [
      'create-account',
      '--email',
      'a@example.com',
      '--per-minute',
      '1.5',
    ]);
    expect(await admin.exited).toBe(2);
    expect(admin.output()).toContain('admin: --per-minute must be a whole number ≥ 1');
    expect(admin.output()).not.toMatch(/is required/);
  });
});
