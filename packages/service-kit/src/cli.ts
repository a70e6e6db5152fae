import { parseArgs, type ParseArgsOptionsConfig } from 'node:util';

/** A command line that cannot run as written: printed with the usage, exit code 2. */
export class UsageError extends Error {}

type StrictConfig<O extends ParseArgsOptionsConfig> = {
  args: string[];
  options: O;
  strict: true;
  allowPositionals: false;
};

/** The parsed options of a strict command line. */
export type CliValues<O extends ParseArgsOptionsConfig> = ReturnType<
  typeof parseArgs<StrictConfig<O>>
>['values'];

/**
 * The one command-line parser of every CLI (admin, simulate, reindex, rebuild, purge, the
 * benches, chaos): `node:util` parseArgs in strict mode, no positionals. A misspelt or unknown
 * option, or one without its value, is a UsageError, never a silent default.
 */
export function parseCliArgs<O extends ParseArgsOptionsConfig>(argv: string[], options: O): CliValues<O> {
  try {
    return parseArgs({ args: argv, options, strict: true, allowPositionals: false }).values;
  } catch (err) {
    throw new UsageError(err instanceof Error ? err.message : String(err));
  }
}

/** `--name`'s value as a number ≥ `min` (whole unless `whole: false`); absent → `fallback`. */
export function numberOption(
  raw: string | boolean | undefined,
  name: string,
  { min = 1, whole = true, fallback }: { min?: number; whole?: boolean; fallback?: number } = {},
): number {
  if (raw === undefined && fallback !== undefined) return fallback;
  const n = typeof raw === 'string' && raw.trim() !== '' ? Number(raw) : Number.NaN;
  if (!Number.isFinite(n) || n < min || (whole && !Number.isInteger(n)))
    throw new UsageError(`--${name} must be a ${whole ? 'whole ' : ''}number ≥ ${min}`);
  return n;
}

export interface CliSpec {
  /** What the messages start with: `<name>: <problem>`. */
  name: string;
  usage: string;
}

/** Prints `<name>: <problem>` and the usage on stderr and exits 2. */
export function exitWithUsage(cli: CliSpec, problem: string): never {
  process.stderr.write(`${cli.name}: ${problem}\n${cli.usage}\n`);
  process.exit(2);
}

/**
 * Runs `read` (parsing and checking the command line) and exits 2 with the usage on a
 * UsageError; anything else is thrown on. For a CLI's first step, before any config or
 * connection: a typo is told at once, not after a connection error.
 */
export function readCommandLine<T>(cli: CliSpec, read: () => T): T {
  try {
    return read();
  } catch (err) {
    if (err instanceof UsageError) exitWithUsage(cli, err.message);
    throw err;
  }
}
