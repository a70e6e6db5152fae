import { escapedForDisplay, shownBody } from '../src/bodies';

describe('what the dashboard shows of a body', () => {
  it('when a body is JSON text, then it is shown pretty with nothing noted', () => {
    expect(shownBody('{"a":1}', 'text')).toEqual({ text: '{\n  "a": 1\n}' });
  });

  it('when a body is base64 of bytes that are not UTF-8, then the bytes show as ASCII and \\xNN, never as the base64', () => {
    const bytes = Buffer.from([0x41, 0x00, 0x42, 0xff, 0xfe, 0x0a, 0x43]);
    const shown = shownBody(bytes.toString('base64'), 'base64');
    expect(shown.text).toBe('A\\x00B\\xff\\xfe\nC');
    expect(shown.note).toContain('\\xNN');
  });

  it('when a base64 body is UTF-8 that only held NUL, then it shows as that text', () => {
    expect(shownBody(Buffer.from('café\u0000ok').toString('base64'), 'base64').text).toBe('café\\x00ok');
  });

  it('when text holds an escape sequence or a direction mark, then they show escaped and it is noted', () => {
    expect(escapedForDisplay('red \u001b[31m x \u202Egnp.exe\ttab')).toBe(
      'red \\x1b[31m x \\u202egnp.exe\ttab',
    );
    expect(shownBody('a\u202Eb', 'text')).toEqual({
      text: 'a\\u202eb',
      note: 'Control characters and direction marks are shown as escapes.',
    });
  });
});
