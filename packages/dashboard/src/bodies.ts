/**
 * What the dashboard shows of a body a receiver sent back. The API keeps a body as text when it
 * is UTF-8 without NUL and as base64 of the bytes otherwise (`body_encoding`); neither is shown
 * as is. Base64 is not what the receiver sent, and text may hold characters that change what
 * the page looks like: control characters (a terminal's escape sequences) and the invisible
 * direction marks (U+202E turns the text after it around).
 */

/** C0 controls but tab, line feed and carriage return; DEL; C1 controls. */
const isControl = (code: number) =>
  (code < 0x20 && code !== 0x09 && code !== 0x0a && code !== 0x0d) || (code >= 0x7f && code <= 0x9f);
/** Marks that change the direction of the text around them, and invisible joiners of it. */
const isDirectionMark = (code: number) =>
  code === 0x200e ||
  code === 0x200f ||
  (code >= 0x202a && code <= 0x202e) ||
  (code >= 0x2066 && code <= 0x2069);

const hex = (code: number, digits: number) => code.toString(16).padStart(digits, '0');

/** Text with controls as `\xNN` and direction marks as `\uNNNN`; everything else as it is. */
export function escapedForDisplay(text: string): string {
  let out = '';
  for (const ch of text) {
    const code = ch.codePointAt(0)!;
    if (isControl(code)) out += `\\x${hex(code, 2)}`;
    else if (isDirectionMark(code)) out += `\\u${hex(code, 4)}`;
    else out += ch;
  }
  return out;
}

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

/** The bytes of a base64 body: as UTF-8 text when they are that (NUL made it base64), else ASCII with other bytes as `\xNN`. */
function bytesForDisplay(base64: string): string {
  const bytes = Uint8Array.from(atob(base64), (c) => c.charCodeAt(0));
  try {
    return escapedForDisplay(strictUtf8.decode(bytes));
  } catch {
    let out = '';
    for (const b of bytes) out += b < 0x80 ? escapedForDisplay(String.fromCharCode(b)) : `\\x${hex(b, 2)}`;
    return out;
  }
}

/** A body as it is shown: pretty JSON when it is JSON, and what was done to show it. */
export function shownBody(
  body: string,
  encoding: 'text' | 'base64' = 'text',
): { text: string; note?: string } {
  if (encoding === 'base64')
    return {
      text: bytesForDisplay(body),
      note: 'Not UTF-8 text (or it held NUL): shown with bytes that are not text as \\xNN.',
    };
  try {
    return { text: JSON.stringify(JSON.parse(body), null, 2) };
  } catch {
    const text = escapedForDisplay(body);
    return text === body
      ? { text }
      : { text, note: 'Control characters and direction marks are shown as escapes.' };
  }
}
