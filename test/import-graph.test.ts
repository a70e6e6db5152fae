import { existsSync, readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import madge from 'madge';
import ts from 'typescript';

/**
 * The import graph of every source tree has no cycle: a module can be read, tested and moved
 * without the ones that import it.
 */
const ROOT = path.join(__dirname, '..');

describe('the import graph', () => {
  // Read once for the two TypeScript cases (madge parses every file: the slow part of this file).
  let graph: Awaited<ReturnType<typeof madge>>;
  beforeAll(async () => {
    graph = await madge(['services', 'packages', 'infra/bench/src'], {
      baseDir: ROOT,
      fileExtensions: ['ts'],
      excludeRegExp: [/node_modules/, /[\\/]dist[\\/]/, /\.d\.ts$/, /[\\/]generated[\\/]/],
      tsConfig: parsedCompilerOptions(path.join(ROOT, 'tsconfig.base.json')),
    });
  });

  it('when every source folder is read, then no module imports itself through others', () => {
    expect(graph.circular()).toEqual([]);
    // The graph really was read: the gateway's entry and its app are in it.
    expect(Object.keys(graph.obj())).toEqual(
      expect.arrayContaining(['services/api-gateway/src/main.ts', 'services/api-gateway/src/app.ts']),
    );
  });

  it("when the gateway's folders are read layer by layer, then none needs another that needs it, and the accounts base needs no other feature", () => {
    // A layer is a feature's domain, data or http folder (a top-level module is its own): the
    // features may import each other in one direction only, and accounts' rules and stores sit
    // beneath the edge and the sessions, which reach them through ports.
    const SRC = 'services/api-gateway/src/';
    const layerOf = (file: string) => {
      const parts = file.slice(SRC.length).replace(/\.ts$/, '').split('/');
      return parts.length >= 3 ? `${parts[0]}/${parts[1]}` : parts[0]!;
    };
    const needs = new Map<string, Set<string>>();
    for (const [file, imports] of Object.entries(graph.obj())) {
      if (!file.startsWith(SRC) || file.endsWith('.test.ts')) continue;
      const layer = layerOf(file);
      const own = needs.get(layer) ?? new Set<string>();
      needs.set(layer, own);
      for (const imported of imports)
        if (imported.startsWith(SRC) && layerOf(imported) !== layer) own.add(layerOf(imported));
    }
    // The graph really was read: the edge's rules use the accounts' rules.
    expect([...(needs.get('edge/domain') ?? [])]).toContain('accounts/domain');
    expect(cyclesOf(needs)).toEqual([]);
    const base = [...(needs.get('accounts/domain') ?? []), ...(needs.get('accounts/data') ?? [])];
    expect(base.filter((layer) => !layer.startsWith('accounts/'))).toEqual([]);
  });

  it('when the Python SDK is read, then no module imports itself through others', () => {
    // Every relative import counts, those inside a function or under TYPE_CHECKING too: each is
    // a module that must be there (and loaded) for the other to work.
    const dir = path.join(ROOT, 'packages', 'sdk-python', 'src', 'signal_sdk');
    const modules = readdirSync(dir)
      .filter((f) => f.endsWith('.py'))
      .map((f) => f.slice(0, -'.py'.length));
    const needs = new Map(
      modules.map((m) => [m, pythonImports(readFileSync(path.join(dir, `${m}.py`), 'utf8'))]),
    );
    // The graph really was read: the client uses the stream.
    expect([...(needs.get('client') ?? [])]).toContain('stream');
    expect(cyclesOf(needs)).toEqual([]);
  });

  it('when the workspace packages and the imports of their tests are read, then no package needs itself through others', () => {
    // A package's tests count as its dependencies: messaging's tests use test-kit, so test-kit
    // must not need messaging (a dynamic import would hide such a loop from madge).
    const needs = new Map<string, Set<string>>();
    for (const dir of readdirSync(path.join(ROOT, 'packages'))) {
      // The Python SDK is no workspace package.
      if (!existsSync(path.join(ROOT, 'packages', dir, 'package.json'))) continue;
      const manifest: unknown = JSON.parse(
        readFileSync(path.join(ROOT, 'packages', dir, 'package.json'), 'utf8'),
      );
      if (typeof manifest !== 'object' || manifest === null) continue;
      const name = String(Reflect.get(manifest, 'name'));
      const declared = Object.keys(Reflect.get(manifest, 'dependencies') ?? {});
      const tests = sourcesUnder(path.join(ROOT, 'packages', dir, 'test'));
      const imported = tests.flatMap((file) =>
        [...readFileSync(file, 'utf8').matchAll(/from '(@signal\/[a-z-]+)'/g)].map((m) => m[1]!),
      );
      needs.set(
        name,
        new Set([...declared, ...imported].filter((d) => d.startsWith('@signal/') && d !== name)),
      );
    }
    expect(needs.get('@signal/messaging')).toContain('@signal/test-kit');
    expect(cyclesOf(needs)).toEqual([]);
  });
});

/** Each loop of `needs` as "a → b → a" (empty when there is none). */
function cyclesOf(needs: ReadonlyMap<string, Iterable<string>>): string[] {
  const loops: string[] = [];
  const visit = (name: string, trail: string[]) => {
    if (trail.includes(name)) {
      loops.push([...trail.slice(trail.indexOf(name)), name].join(' → '));
      return;
    }
    for (const next of needs.get(name) ?? []) visit(next, [...trail, name]);
  };
  for (const name of needs.keys()) visit(name, []);
  return loops;
}

/**
 * The package's modules a Python module imports: `from .x import …` is `x`; `from . import y` is
 * the package itself (`__init__`) and `y` (a name that is no module leads nowhere).
 */
function pythonImports(source: string): Set<string> {
  const found = new Set<string>();
  for (const m of source.matchAll(/^[ \t]*from \.(\w*) import (?:\(([^)]*)\)|([\w ,]+))/gm)) {
    if (m[1]) found.add(m[1]);
    else {
      found.add('__init__');
      for (const name of (m[2] ?? m[3] ?? '').split(',')) if (name.trim()) found.add(name.trim());
    }
  }
  return found;
}

function sourcesUnder(dir: string): string[] {
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return [];
  }
  return entries.flatMap((e) =>
    e.isDirectory()
      ? sourcesUnder(path.join(dir, e.name))
      : e.name.endsWith('.ts')
        ? [path.join(dir, e.name)]
        : [],
  );
}

/**
 * The compiler options of a tsconfig, parsed once, in the form madge's resolver takes as they
 * are (`{ options }`). Given a path, madge hands its resolver the parsed options as JSON to
 * convert again for every import it resolves, each time refusing an option it made itself
 * (`configFilePath`) with a spelling suggestion: two thirds of this file's CPU.
 */
function parsedCompilerOptions(file: string): { options: ts.CompilerOptions } {
  const config = ts.readJsonConfigFile(file, (name) => ts.sys.readFile(name));
  return { options: ts.parseJsonSourceFileConfigFileContent(config, ts.sys, path.dirname(file)).options };
}
