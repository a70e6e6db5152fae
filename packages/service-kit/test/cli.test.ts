import { numberOption, parseCliArgs, UsageError } from '../src/cli';

/** The one command-line parser every CLI uses (pure rules, no process). */
const OPTIONS = {
  'per-minute': { type: 'string' },
  fresh: { type: 'boolean' },
  id: { type: 'string', multiple: true },
} as const;

describe('parseCliArgs', () => {
  it('when the options are known, then their values come back typed', () => {
    expect(parseCliArgs(['--per-minute', '100', '--fresh', '--id', 'a', '--id', 'b'], OPTIONS)).toEqual({
      'per-minute': '100',
      fresh: true,
      id: ['a', 'b'],
    });
  });

  it.each([
    [['--per-minte', '100'], /Unknown option '--per-minte'/],
    [['--per-minute'], /argument missing/],
    [['stray'], /Unexpected argument 'stray'/],
    [['--fresh=yes'], /does not take an argument/],
  ])('when the command line is %j, then a UsageError names the problem', (argv, message) => {
    expect(() => parseCliArgs(argv, OPTIONS)).toThrow(UsageError);
    expect(() => parseCliArgs(argv, OPTIONS)).toThrow(message);
  });
});

describe('numberOption', () => {
  it('when the option is absent, then the fallback; when present, then its number', () => {
    expect(numberOption(undefined, 'rate', { fallback: 7 })).toBe(7);
    expect(numberOption('60', 'per-minute')).toBe(60);
    expect(numberOption('0', 'seed', { min: 0 })).toBe(0);
    expect(numberOption('2.5', 'rate', { whole: false, min: 0 })).toBe(2.5);
  });

  it.each([
    ['0', {}, '--n must be a whole number ≥ 1'],
    ['1.5', {}, '--n must be a whole number ≥ 1'],
    ['', {}, '--n must be a whole number ≥ 1'],
    ['ten', { whole: false, min: 0 }, '--n must be a number ≥ 0'],
    [undefined, {}, '--n must be a whole number ≥ 1'],
    [true, {}, '--n must be a whole number ≥ 1'],
  ])('when the value is %j (%j), then a UsageError: %s', (raw, options, message) => {
    expect(() => numberOption(raw, 'n', options)).toThrow(new UsageError(message));
  });
});
