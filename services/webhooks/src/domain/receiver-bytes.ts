import type { AttemptResponse, StoredHeader } from './records';

/**
 * What a receiver sends back is data, not text we trust: any bytes (NUL, invalid UTF-8, control
 * characters, megabytes). It is kept in a form every MongoDB-wire store accepts: FerretDB on
 * PostgreSQL keeps strings as jsonb, which refuses `\u0000`, and a header name is a document key,
 * which may not start with `$` or hold `.` there.
 */

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * How many bytes of `bytes` end on a whole UTF-8 character: a body cut at the size kept can end
 * inside a character, which says nothing about whether the receiver sent UTF-8.
 */
function wholeCharacters(bytes: Uint8Array): number {
  // The last lead byte (not 10xxxxxx) among the last four, and the length it announces.
  for (let i = bytes.length - 1; i >= Math.max(0, bytes.length - 4); i--) {
    const b = bytes[i]!;
    if ((b & 0xc0) === 0x80) continue;
    const length = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 1;
    return bytes.length - i < length ? i : bytes.length;
  }
  return bytes.length;
}

/**
 * The bytes as text when they are valid UTF-8 without NUL; otherwise base64 of the bytes. A body
 * cut short (`truncated`) is text when it is UTF-8 up to its last whole character, and is kept to
 * there.
 */
export function storedBody(
  bytes: Uint8Array,
  truncated = false,
): Pick<AttemptResponse, 'body' | 'body_encoding'> {
  if (!bytes.includes(0)) {
    try {
      const text = truncated ? bytes.subarray(0, wholeCharacters(bytes)) : bytes;
      return { body: strictUtf8.decode(text), body_encoding: 'text' };
    } catch {
      // Not UTF-8: kept as base64 below.
    }
  }
  return {
    body: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64'),
    body_encoding: 'base64',
  };
}

/** C0 controls but tab, DEL and C1 controls: shown as `\xNN`. */
const isControl = (code: number) => (code < 0x20 && code !== 0x09) || (code >= 0x7f && code <= 0x9f);
const isHighSurrogate = (code: number) => code >= 0xd800 && code <= 0xdbff;
const isLowSurrogate = (code: number) => code >= 0xdc00 && code <= 0xdfff;

/**
 * A string a receiver chose, escaped so that it shows what was sent and every store accepts it:
 * control characters as `\xNN`, a lone surrogate as `\uNNNN`.
 */
export function escapedText(value: string): string {
  let out = '';
  for (let i = 0; i < value.length; i++) {
    const code = value.charCodeAt(i);
    if (isControl(code)) out += `\\x${code.toString(16).padStart(2, '0')}`;
    else if (isHighSurrogate(code) && isLowSurrogate(value.charCodeAt(i + 1))) {
      out += value.slice(i, i + 2);
      i += 1;
    } else if (isHighSurrogate(code) || isLowSurrogate(code)) out += `\\u${code.toString(16)}`;
    else out += value[i];
  }
  return out;
}

const MAX_KEPT_HEADERS = 50;
const MAX_HEADER_VALUE = 1024;
const MAX_HEADER_NAME = 256;

/** One header line of a response as it came: its name lower-cased, its value. */
export type HeaderLine = readonly [name: string, value: string];

/** Header lines from node:http's `rawHeaders` ([name, value, …]), names lower-cased. */
export function headerLinesOf(raw: readonly string[]): HeaderLine[] {
  const lines: HeaderLine[] = [];
  for (let i = 0; i + 1 < raw.length; i += 2) lines.push([raw[i]!.toLowerCase(), raw[i + 1]!]);
  return lines;
}

/**
 * A receiver's response headers, bounded (50, each name cut at 256 characters and each value at
 * 1,024) and escaped, as a list of { name, value }: a list, not an object, so that no name becomes
 * a document key (and of objects, not pairs: FerretDB keeps no array in an array). The lines of
 * one name are joined with ", ", in the order they came. Read from the lines, not from node's
 * header object, which drops a `__proto__` header and all but the first of some names.
 * `headers_truncated` says that something was left out, as `body_truncated` does of the body.
 */
export function storedHeaders(lines: readonly HeaderLine[]): {
  headers: StoredHeader[];
  headers_truncated: boolean;
} {
  const byName = new Map<string, string[]>();
  for (const [name, value] of lines) {
    const values = byName.get(name);
    if (values) values.push(value);
    else byName.set(name, [value]);
  }
  const out: StoredHeader[] = [];
  let truncated = false;
  for (const [name, values] of byName) {
    if (out.length >= MAX_KEPT_HEADERS) {
      truncated = true;
      break;
    }
    const joined = values.join(', ');
    if (name.length > MAX_HEADER_NAME || joined.length > MAX_HEADER_VALUE) truncated = true;
    out.push({
      name: escapedText(name.slice(0, MAX_HEADER_NAME)),
      value: escapedText(joined.slice(0, MAX_HEADER_VALUE)),
    });
  }
  return { headers: out, headers_truncated: truncated };
}
