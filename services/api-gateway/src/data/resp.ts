/**
 * The part of the Redis protocol (RESP2) the limiter's own connection speaks: commands out as
 * arrays of bulk strings, replies in of the five RESP2 types. Pure: no socket, no state.
 */

/** An error reply (`-ERR …`, `-NOSCRIPT …`): an answer, not a broken connection. */
export class RedisReplyError extends Error {
  override readonly name = 'RedisReplyError';
}

export type RespValue = string | number | null | RedisReplyError | RespValue[];

const CR = 13;

/** One command as Redis reads it: `*<n>\r\n` then `$<bytes>\r\n<part>\r\n` for each part. */
export function encodeCommand(parts: ReadonlyArray<string | number>): string {
  let out = `*${parts.length}\r\n`;
  for (const part of parts) {
    const text = typeof part === 'number' ? String(part) : part;
    out += `$${Buffer.byteLength(text)}\r\n${text}\r\n`;
  }
  return out;
}

/** Thrown for bytes that are not RESP2: the connection they came on can no longer be read. */
export class RespProtocolError extends Error {
  override readonly name = 'RespProtocolError';
}

export interface Parsed {
  value: RespValue;
  /** Where the next reply starts. */
  next: number;
}

/** The line that starts at `pos` (without its CRLF), or undefined when it has not all arrived. */
function lineAt(buf: Buffer, pos: number): { text: string; next: number } | undefined {
  const end = buf.indexOf(CR, pos);
  if (end === -1 || end + 1 >= buf.length) return undefined;
  return { text: buf.toString('utf8', pos + 1, end), next: end + 2 };
}

function lengthOf(text: string): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < -1) throw new RespProtocolError(`not a length: ${JSON.stringify(text)}`);
  return n;
}

/**
 * The reply that starts at `pos`, or undefined when `buf` ends before it does (the rest comes in
 * a later read). Throws RespProtocolError for anything that is not RESP2.
 */
export function parseReply(buf: Buffer, pos: number): Parsed | undefined {
  if (pos >= buf.length) return undefined;
  const type = buf[pos];
  const line = lineAt(buf, pos);
  if (!line) return undefined;
  switch (type) {
    case 0x2b: // '+' simple string
      return { value: line.text, next: line.next };
    case 0x2d: // '-' error
      return { value: new RedisReplyError(line.text), next: line.next };
    case 0x3a: {
      // ':' integer
      const n = Number(line.text);
      if (!Number.isSafeInteger(n))
        throw new RespProtocolError(`not an integer: ${JSON.stringify(line.text)}`);
      return { value: n, next: line.next };
    }
    case 0x24: {
      // '$' bulk string
      const length = lengthOf(line.text);
      if (length === -1) return { value: null, next: line.next };
      const end = line.next + length;
      if (end + 2 > buf.length) return undefined;
      return { value: buf.toString('utf8', line.next, end), next: end + 2 };
    }
    case 0x2a: {
      // '*' array
      const count = lengthOf(line.text);
      if (count === -1) return { value: null, next: line.next };
      const items: RespValue[] = [];
      let next = line.next;
      for (let i = 0; i < count; i++) {
        const item = parseReply(buf, next);
        if (!item) return undefined;
        items.push(item.value);
        next = item.next;
      }
      return { value: items, next };
    }
    default:
      throw new RespProtocolError(`unknown reply type byte ${String(type)}`);
  }
}
