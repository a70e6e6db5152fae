import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';

/**
 * The README's commands run as written in a plain shell after the run command: each command of
 * its bash blocks starts with a program of the system's PATH, a shell builtin or one of this
 * repository's scripts — never pnpm (which lives in .tools/ until toolchain.sh is sourced), never
 * a macOS-only `open`.
 */
const ROOT = path.join(__dirname, '..');
const SYSTEM_PATH = ['/usr/bin', '/bin'];
const BUILTINS = new Set(['cd', 'export', 'source', '.', 'set', 'echo', 'test', '[']);

/**
 * The commands of every ```bash block: lines without comments, a command substitution `$(…)`
 * taken out as a command of its own, split at && || | ; and ( ); assignments alone dropped.
 */
function readmeCommands(markdown: string): string[] {
  const blocks = [...markdown.matchAll(/```bash\n([\s\S]*?)```/g)].map((m) => m[1]!);
  return blocks
    .flatMap((b) => b.split('\n'))
    .map((line) => line.replace(/\s+#.*$/, '').trim())
    .filter((line) => line !== '' && !line.startsWith('#'))
    .map((line) => line.replace(/\$\(([^()]*)\)/g, (_, inner: string) => `"" ; ${inner} ;`))
    .flatMap((line) => line.split(/&&|\|\||[|;()]/))
    .map((c) => c.trim())
    .filter((c) => c !== '' && !/^([A-Z_][A-Z0-9_]*=\S*\s*)+$/.test(c));
}

/** The program a command runs: its first word after any VAR=value assignments. */
function programOf(command: string): string {
  const words = command.split(/\s+/);
  while (words.length > 1 && /^[A-Z_][A-Z0-9_]*=/.test(words[0]!)) words.shift();
  return words[0]!;
}

describe('the README', () => {
  const readme = readFileSync(path.join(ROOT, 'README.md'), 'utf8');
  const commands = readmeCommands(readme);

  it('when its commands are read, then there are the run, test, SDK, status and simulate steps', () => {
    expect(commands).toEqual(
      expect.arrayContaining([
        'bash scripts/up.sh',
        'bash scripts/test.sh',
        'bash scripts/sdk.sh',
        'bash scripts/up.sh status',
        'bash scripts/up.sh simulate',
      ]),
    );
  });

  it('when each command is run in a shell with only the system PATH, then its program is there', () => {
    const missing = commands.filter((command) => {
      const program = programOf(command);
      if (BUILTINS.has(program)) return false;
      if (program === 'bash') return !existsSync(path.join(ROOT, command.split(/\s+/)[1]!));
      // A program a previous command made (a venv's python under ~): the line itself names it.
      if (program.startsWith('~/')) return false;
      return !SYSTEM_PATH.some((dir) => existsSync(path.join(dir, program)));
    });
    expect(missing).toEqual([]);
    expect(commands.filter((c) => /(^|\s)(pnpm|open)\s/.test(c))).toEqual([]);
  });

  it('when a command names a file of the repository, then the file is there', () => {
    const named = commands.flatMap((c) => [...c.matchAll(/(?:^|\s)\.\/([\w./-]+)/g)].map((m) => m[1]!));
    expect(named.length).toBeGreaterThan(0);
    expect(named.filter((f) => !existsSync(path.join(ROOT, f)))).toEqual([]);
  });
});
