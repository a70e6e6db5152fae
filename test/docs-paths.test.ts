import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';

/**
 * The topic docs and the README send a newcomer to files by name (the three walks in
 * docs/architecture.md above all): every file they name must exist, so a move or a rename
 * that forgets the docs fails here. Decision records are exempt: their context names files
 * that a decision removed.
 */
const root = path.resolve(__dirname, '..');
const DOCS = ['README.md', ...listed('docs').filter((f) => /^docs\/[^/]+\.md$/.test(f))];
const tracked = listed('.');

function listed(dir: string): string[] {
  return execFileSync('git', ['ls-files', dir], { cwd: root, encoding: 'utf8' }).split('\n').filter(Boolean);
}

/** Backticked names of source files: a repository path, or a bare file name the text has placed. */
function namedFiles(text: string): string[] {
  const names = [...text.matchAll(/`([A-Za-z0-9_./-]+\.(?:ts|js|mjs|go|sh|py|yaml|md))`/g)].map((m) => m[1]!);
  // Built output and run-time files exist only after a build or a run.
  return names.filter((n) => !/(^|\/)(dist|\.run)\//.test(n) && !n.startsWith('../') && !n.startsWith('/'));
}

describe('files the docs name', () => {
  it.each(DOCS)('when %s names a file, then the repository has it', (doc) => {
    const missing = namedFiles(readFileSync(path.join(root, doc), 'utf8')).filter((name) =>
      name.includes('/')
        ? !existsSync(path.join(root, name)) && !tracked.some((f) => f.endsWith(`/${name}`))
        : !tracked.some((f) => f === name || f.endsWith(`/${name}`)),
    );
    expect(missing).toEqual([]);
  });
});
