import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import ts from 'typescript';

/**
 * The TypeScript samples of the SDK's README and of the webhooks guide, type-checked as a user
 * compiles them: each ```ts block an ES module of its own (top-level await), strict, importing
 * `@signal/sdk` as the built package resolves (its `exports`, the ESM types in esm/, from `pnpm
 * run build`). A sample that stops compiling, from a renamed method or a type that changed,
 * fails here instead of in a reader's editor.
 */
const root = path.join(__dirname, '..');
const repo = path.join(root, '..', '..');
const DOCS = [path.join(root, 'README.md'), path.join(repo, 'docs', 'receiving-webhooks.md')];

/**
 * The samples live beside the package's package.json, so `@signal/sdk` resolves as the package
 * naming itself, through its `exports`, to the built types.
 */
const SAMPLES = path.join(root, '.readme-samples');

/**
 * What the samples after the README's first go on from: its `client`. Global, so a sample that
 * makes its own (the first) shadows it.
 */
const PRELUDE = `import type { SignalClient } from '@signal/sdk';
declare global {
  const client: SignalClient;
}
export {};
`;

interface Sample {
  /** Where it is shown: the document and the block's first line. */
  origin: string;
  file: string;
  text: string;
}

function samplesOf(doc: string): Sample[] {
  const markdown = readFileSync(doc, 'utf8');
  const name = path.relative(repo, doc);
  return [...markdown.matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((m, i) => ({
    origin: `${name}:${markdown.slice(0, m.index).split('\n').length + 1}`,
    file: path.join(SAMPLES, `${path.basename(doc, '.md')}-${i + 1}.mts`),
    text: m[1] ?? '',
  }));
}

/**
 * Express's types, as the samples import `express`: the SDK has no dependency on it, so they
 * come from the workspace package that has (service-kit serves HTTP with Express).
 */
function expressTypes(): string {
  const fromServiceKit = createRequire(path.join(repo, 'packages', 'service-kit', 'package.json'));
  return fromServiceKit.resolve('@types/express/index.d.ts');
}

function diagnose(samples: Sample[]): string[] {
  const options: ts.CompilerOptions = {
    strict: true,
    noUncheckedIndexedAccess: true,
    target: ts.ScriptTarget.ES2023,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    lib: ['lib.es2023.d.ts'],
    types: ['node'],
    typeRoots: [path.join(repo, 'node_modules', '@types')],
    paths: { express: [expressTypes()] },
    skipLibCheck: true,
    noEmit: true,
  };
  const prelude = path.join(SAMPLES, 'prelude.d.mts');
  const virtual = new Map<string, string>([[prelude, PRELUDE]]);
  for (const s of samples) virtual.set(s.file, s.text);
  const host = ts.createCompilerHost(options);
  const { getSourceFile, fileExists, readFile } = host;
  host.fileExists = (f) => virtual.has(f) || fileExists.call(host, f);
  host.readFile = (f) => virtual.get(f) ?? readFile.call(host, f);
  host.getSourceFile = (f, language, ...rest) => {
    const text = virtual.get(f);
    return text === undefined
      ? getSourceFile.call(host, f, language, ...rest)
      : ts.createSourceFile(f, text, language);
  };
  const program = ts.createProgram([prelude, ...virtual.keys()], options, host);
  const origins = new Map(samples.map((s) => [s.file, s.origin]));
  return ts.getPreEmitDiagnostics(program).map((d) => {
    const message = ts.flattenDiagnosticMessageText(d.messageText, '\n');
    if (!d.file || d.start === undefined) return `TS${d.code}: ${message}`;
    const { line } = d.file.getLineAndCharacterOfPosition(d.start);
    const where = origins.get(d.file.fileName) ?? d.file.fileName;
    return `${where} (line ${line + 1} of the sample) TS${d.code}: ${message}`;
  });
}

describe('the TypeScript samples of the docs', () => {
  it('when the SDK is built, then every ts sample of its README and of the webhooks guide type-checks against it', () => {
    expect(existsSync(path.join(root, 'esm', 'index.d.ts'))).toBe(true);
    const samples = DOCS.flatMap(samplesOf);
    // The README's client, webhook receiver and stream; the guide's receiver.
    expect(samples.map((s) => path.basename(s.file))).toEqual(
      expect.arrayContaining(['README-1.mts', 'README-2.mts', 'README-3.mts', 'receiving-webhooks-1.mts']),
    );
    expect(diagnose(samples)).toEqual([]);
  });

  it('when a sample uses what the SDK lacks, then the check reports it with the sample’s place', () => {
    const broken: Sample = {
      origin: 'README.md:1',
      file: path.join(SAMPLES, 'broken.mts'),
      text: "import { SignalClient } from '@signal/sdk';\nawait new SignalClient({ baseUrl: 'x' }).signals.nope();\n",
    };
    expect(diagnose([broken])).toEqual([
      expect.stringMatching(/^README\.md:1 \(line 2 of the sample\) TS2339: Property 'nope' does not exist/),
    ]);
  });
});
