import { escapedText, headerLinesOf, storedBody, storedHeaders, type HeaderLine } from './receiver-bytes';

describe('what a receiver sends back, as kept', () => {
  it('when the body is UTF-8 without NUL, then it is kept as text', () => {
    expect(storedBody(Buffer.from('{"ok":"café ✓"}'))).toEqual({
      body: '{"ok":"café ✓"}',
      body_encoding: 'text',
    });
  });

  it('when the body holds NUL or is not UTF-8, then it is kept as base64 of the very bytes', () => {
    const nul = Buffer.from('bad\u0000byte');
    const invalid = Buffer.from([0x6f, 0x6b, 0xff, 0xfe, 0xc3, 0x28]);
    expect(storedBody(nul)).toEqual({ body: nul.toString('base64'), body_encoding: 'base64' });
    expect(storedBody(invalid)).toEqual({ body: invalid.toString('base64'), body_encoding: 'base64' });
    expect(Buffer.from(storedBody(invalid.subarray(2)).body, 'base64')).toEqual(invalid.subarray(2));
  });

  it('when a body cut at the size kept ends inside a character, then it is text to its last whole character', () => {
    const text = 'p' + 'é'.repeat(3000);
    for (const cut of [4095, 4096]) {
      const bytes = Buffer.from(text).subarray(0, cut);
      const kept = storedBody(bytes, true);
      expect(kept.body_encoding).toBe('text');
      expect(kept.body).toBe(text.slice(0, 1 + Math.floor((cut - 1) / 2)));
    }
    const emoji = Buffer.from('ok 😀😀').subarray(0, 8);
    expect(storedBody(emoji, true)).toEqual({ body: 'ok 😀', body_encoding: 'text' });
    // Whole or not, bytes that are not UTF-8 stay base64; a body that was not cut is not trimmed.
    const invalid = Buffer.from([0x6f, 0xff, 0x6b, 0xc3]);
    expect(storedBody(invalid, true).body_encoding).toBe('base64');
    expect(storedBody(Buffer.from('ok 😀').subarray(0, 5)).body_encoding).toBe('base64');
  });

  it('when a header holds control characters or lone surrogates, then they are shown escaped and nothing else changes', () => {
    expect(escapedText('a\u0000b\u0001c\td\u007f\u0085 café')).toBe('a\\x00b\\x01c\td\\x7f\\x85 café');
    expect(escapedText('x\ud800y \ud83d\ude00')).toBe('x\\ud800y \ud83d\ude00');
  });

  it('when headers come, then they are kept as at most 50 { name, value } (no name becomes a document key), values cut at 1,024', () => {
    const many: HeaderLine[] = [
      ['$set.x', '1'],
      ['x-long', 'v'.repeat(5000)],
    ];
    for (let i = 0; i < 60; i++) many.push([`x-${i}`, String(i)]);
    const kept = storedHeaders(many);
    expect(kept.headers).toHaveLength(50);
    expect(kept.headers[0]).toEqual({ name: '$set.x', value: '1' });
    expect(kept.headers[1]!.value).toHaveLength(1024);
    expect(kept.headers_truncated).toBe(true);
    expect(
      storedHeaders([
        ['set-cookie', 'a=1'],
        ['x-one', 'x'],
        ['set-cookie', 'b=2'],
      ]),
    ).toEqual({
      headers: [
        { name: 'set-cookie', value: 'a=1, b=2' },
        { name: 'x-one', value: 'x' },
      ],
      headers_truncated: false,
    });
  });

  it('when one value is over 1,024 characters or one name over 256, then the headers are said to be truncated', () => {
    const long = storedHeaders([['x-long', 'v'.repeat(1025)]]);
    expect(long.headers[0]!.value).toHaveLength(1024);
    expect(long.headers_truncated).toBe(true);
    expect(storedHeaders([['n'.repeat(257), 'v']]).headers_truncated).toBe(true);
    expect(storedHeaders([['x-exact', 'v'.repeat(1024)]]).headers_truncated).toBe(false);
  });

  it('when a receiver names headers after what every object has (__proto__, constructor), then each is kept as any other', () => {
    const lines = headerLinesOf(['__proto__', 'polluted', 'Constructor', 'x', 'Content-Length', '2']);
    expect(storedHeaders(lines).headers).toEqual([
      { name: '__proto__', value: 'polluted' },
      { name: 'constructor', value: 'x' },
      { name: 'content-length', value: '2' },
    ]);
  });
});
