import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { transformFileSync } from '@swc/core';
import * as contracts from '../src';
import {
  BASELINES,
  baselineDocuments,
  checkContracts,
  oasdiffBinary,
  releaseBaseline,
} from '../../../scripts/contracts.js';

/**
 * The breaking-change check (scripts/contracts.js `breaking`): the documents the contracts make
 * now against the committed baselines, judged by oasdiff, and the baselines since the last release
 * against the CHANGELOG. The altered copies are built apart and judged by the command itself.
 */
const ROOT = path.join(__dirname, '../../..');
type Json = Record<string, unknown>;

let oasdiff = '';
beforeAll(() => {
  // Built once into the user's cache (a minute or two the first time, Go module download included).
  oasdiff = oasdiffBinary(ROOT);
}, 300_000);

const committed = (name: string): Json =>
  JSON.parse(readFileSync(path.join(ROOT, BASELINES, name), 'utf8')) as Json;
const NAMES = ['openapi.json', 'asyncapi.json', 'internal-http.json'];

/** A copy of packages/contracts/src with `edits` applied, built to CommonJS; returns its dir. */
function alteredContracts(work: string, edits: { file: string; from: string; to: string }[]): string {
  const src = path.join(work, 'src');
  cpSync(path.join(ROOT, 'packages/contracts/src'), src, { recursive: true });
  for (const { file, from, to } of edits) {
    const text = readFileSync(path.join(src, file), 'utf8');
    if (!text.includes(from)) throw new Error(`${file} has no ${from}`);
    writeFileSync(path.join(src, file), text.replace(from, to));
  }
  const dist = path.join(work, 'dist');
  mkdirSync(dist);
  for (const f of readdirSync(src).filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts'))) {
    const { code } = transformFileSync(path.join(src, f), {
      jsc: { target: 'es2023', parser: { syntax: 'typescript' } },
      module: { type: 'commonjs' },
    });
    writeFileSync(path.join(dist, f.replace(/\.ts$/, '.js')), code);
  }
  return dist;
}

/** Runs `node scripts/contracts.js breaking` on a build of the contracts. */
function breakingCommand(dist: string) {
  return spawnSync('node', [path.join(ROOT, 'scripts/contracts.js'), 'breaking', '--contracts', dist], {
    encoding: 'utf8',
    env: { ...process.env, OASDIFF: oasdiff },
  });
}

describe('the breaking-change check', () => {
  // Inside the checkout, so the copy resolves `zod` from its node_modules.
  let work = '';
  beforeEach(() => {
    mkdirSync(path.join(ROOT, '.run'), { recursive: true });
    work = mkdtempSync(path.join(ROOT, '.run', 'contracts-copy-'));
  });
  afterEach(() => rmSync(work, { recursive: true, force: true }));

  it('when the contracts are as committed, then it finds no problem', () => {
    const current = baselineDocuments(contracts);
    const problems = checkContracts({
      contracts,
      current,
      baselines: Object.fromEntries(NAMES.map((n) => [n, committed(n)])),
      released: Object.fromEntries(NAMES.map((n) => [n, releaseBaseline(ROOT, n)])),
      changelog: readFileSync(path.join(ROOT, 'CHANGELOG.md'), 'utf8'),
      oasdiff,
    });
    // On failure: a change broke a contract, or a baseline is stale (node scripts/contracts.js baseline).
    expect(problems).toEqual([]);
  });

  it('when a field of an event is renamed, then the command fails naming the message', () => {
    const dist = alteredContracts(work, [
      { file: 'events.ts', from: 'occurred_at: z.iso.datetime', to: 'happened_at: z.iso.datetime' },
    ]);
    const run = breakingCommand(dist);
    expect(run.status).toBe(1);
    expect(run.stderr).toMatch(
      /^asyncapi\.json: breaking change at signal\.events\/signalNew: .*`occurred_at`/m,
    );
    expect(run.stderr).not.toMatch(/^openapi\.json: breaking/m);
  });

  it('when a field of a response is renamed, then the command fails naming the operation', () => {
    const dist = alteredContracts(work, [{ file: 'stats.ts', from: 'best_roi:', to: 'top_roi:' }]);
    const run = breakingCommand(dist);
    expect(run.status).toBe(1);
    expect(run.stderr).toMatch(/^openapi\.json: breaking change at GET \/v1\/stats: .*best_roi/m);
    expect(run.stderr).toMatch(/^internal-http\.json: breaking change at GET \/v1\/stats: /m);
  });

  it('when a response only gains a field, then the command asks for the baseline and reports nothing breaking', () => {
    const dist = alteredContracts(work, [
      { file: 'stats.ts', from: 'best_roi:', to: 'median_roi: z.number(),\n    best_roi:' },
    ]);
    const run = breakingCommand(dist);
    expect(run.status).toBe(1);
    expect(run.stderr).not.toMatch(/breaking change/);
    expect(run.stderr).toMatch(/^contracts\/baselines\/openapi\.json: stale \(a compatible change\)/m);
  });

  it('when the baseline takes a breaking change, then the CHANGELOG must name it under Breaking', () => {
    const released = committed('openapi.json');
    const changed = structuredClone(released) as {
      components: { schemas: Record<string, { properties: Json; required: string[] }> };
    };
    const stats = changed.components.schemas.Statistics!;
    stats.properties.top_roi = stats.properties.best_roi;
    delete stats.properties.best_roi;
    stats.required = stats.required.map((r) => (r === 'best_roi' ? 'top_roi' : r));
    const check = (changelog: string) =>
      checkContracts({
        contracts,
        current: { 'openapi.json': changed },
        baselines: { 'openapi.json': changed },
        released: { 'openapi.json': released },
        changelog,
        oasdiff,
      });
    const unannounced = check(
      '# Changelog\n\n## [Unreleased]\n\n### Changed\n\n- Stats: `best_roi` is `top_roi`.\n',
    );
    expect(unannounced).toHaveLength(1);
    expect(unannounced[0]).toMatch(/breaks GET \/v1\/stats since the last release/);
    const announced = check(
      '# Changelog\n\n## [Unreleased]\n\n### Breaking\n\n- `GET /v1/stats`: `best_roi` is now `top_roi`, because …\n\n## [1.0.0]\n',
    );
    expect(announced).toEqual([]);
  });
});

describe('the recorded release', () => {
  it('when read, then releases/previous names a commit of this repository', () => {
    const commit = readFileSync(path.join(ROOT, 'releases/previous'), 'utf8').match(/^[0-9a-f]{40}$/m)?.[0];
    expect(commit).toBeDefined();
    expect(
      execFileSync('git', ['-C', ROOT, 'cat-file', '-t', commit ?? ''], { encoding: 'utf8' }).trim(),
    ).toBe('commit');
  });
});
