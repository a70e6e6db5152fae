import { rollApiKeyInputSchema } from './accounts';
import { hasHiddenCharacters, replaceHiddenCharacters } from './text';

describe('text shown as sent', () => {
  it.each([
    ['an escape sequence', 'a\u001b[31mb'],
    ['a bell', 'a\u0007'],
    ['a line break', 'a\nb'],
    ['DEL', 'a\u007f'],
    ['a C1 control', 'a\u009bb'],
    ['a right-to-left override', 'invoice\u202efdp.exe'],
    ['a directional isolate', 'a\u2066b\u2069'],
    ['a right-to-left mark', 'a\u200fb'],
  ])('when text holds %s, then it has hidden characters', (_what, text) => {
    expect(hasHiddenCharacters(text)).toBe(true);
  });

  it.each([
    ['plain ASCII', 'production key'],
    ['letters of a right-to-left script', 'מפתח ראשי'],
    ['accents and emoji', 'clé 🔑'],
  ])('when text holds %s, then it has none', (_what, text) => {
    expect(hasHiddenCharacters(text)).toBe(false);
  });

  it('when hidden characters are replaced, then each one is, and the rest stays', () => {
    expect(replaceHiddenCharacters('a\u001bb\u202ec', '\uFFFD')).toBe('a\uFFFDb\uFFFDc');
  });
});

describe('a roll overlap refused', () => {
  const messages = (overlap: unknown) => {
    const parsed = rollApiKeyInputSchema.safeParse({ overlap_seconds: overlap });
    return parsed.success ? [] : parsed.error.issues.map((i) => i.message);
  };

  it.each([
    [-1, ['overlap_seconds must be 0 or at least 60']],
    [59, ['overlap_seconds must be 0 or at least 60']],
    [60.5, ['overlap_seconds must be a whole number of seconds']],
    [604_801, ['overlap_seconds must be at most 7 days (604800)']],
    ['soon', ['overlap_seconds must be a number']],
  ])('when overlap_seconds is %p, then the one message says what is wrong with it', (overlap, expected) => {
    expect(messages(overlap)).toEqual(expected);
  });

  it.each([0, 60, 604_800, '3600'])('when overlap_seconds is %p, then it is taken', (overlap) => {
    expect(messages(overlap)).toEqual([]);
  });
});
