import { encodeCommand, parseReply, RedisReplyError, RespProtocolError } from './resp';

const bytes = (text: string) => Buffer.from(text, 'utf8');

describe('RESP commands and replies', () => {
  it('when a command has text and numbers, then each part is a bulk string with its byte length', () => {
    expect(encodeCommand(['EVALSHA', 'ab', 2, 'k:é'])).toBe(
      '*4\r\n$7\r\nEVALSHA\r\n$2\r\nab\r\n$1\r\n2\r\n$4\r\nk:é\r\n',
    );
  });

  it('when a reply of each RESP2 type arrives, then it reads as the value ioredis gives', () => {
    const wire = bytes(
      '+OK\r\n:-42\r\n$5\r\nhé\r\n\r\n$-1\r\n*3\r\n:1\r\n*2\r\n$1\r\na\r\n:2\r\n$0\r\n\r\n*-1\r\n',
    );
    const values: unknown[] = [];
    let pos = 0;
    for (let parsed = parseReply(wire, pos); parsed; parsed = parseReply(wire, pos)) {
      values.push(parsed.value);
      pos = parsed.next;
    }
    expect(pos).toBe(wire.length);
    // The bulk string holds a CRLF of its own: read by its length, not up to the first CR.
    expect(values).toEqual(['OK', -42, 'hé\r\n', null, [1, ['a', 2], ''], null]);
  });

  it('when an error reply arrives, then it is a value (the call failed), not a broken stream', () => {
    const parsed = parseReply(bytes('-NOSCRIPT No matching script.\r\n:1\r\n'), 0);
    expect(parsed?.value).toBeInstanceOf(RedisReplyError);
    expect(parsed?.value).toMatchObject({ message: 'NOSCRIPT No matching script.' });
    expect(parseReply(bytes('-NOSCRIPT No matching script.\r\n:1\r\n'), parsed!.next)?.value).toBe(1);
  });

  it('when a reply is cut anywhere, then nothing is read until the rest arrives', () => {
    const whole = '*2\r\n:10\r\n$3\r\nabc\r\n';
    for (let cut = 1; cut < whole.length; cut++)
      expect(parseReply(bytes(whole.slice(0, cut)), 0)).toBeUndefined();
    expect(parseReply(bytes(whole), 0)).toEqual({ value: [10, 'abc'], next: whole.length });
  });

  it('when the bytes are not RESP2, then a protocol error says so', () => {
    expect(() => parseReply(bytes('%1\r\n'), 0)).toThrow(RespProtocolError);
    expect(() => parseReply(bytes(':12x\r\n'), 0)).toThrow(RespProtocolError);
    expect(() => parseReply(bytes('*-2\r\n'), 0)).toThrow(RespProtocolError);
  });
});
