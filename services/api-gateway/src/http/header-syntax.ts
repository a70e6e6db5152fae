/**
 * Header syntax the gateway's own HTTP code checks, in one place: the raw front (raw-front.ts)
 * and the raw upstream client (raw-upstream.ts).
 */

/** RFC 9110 token characters, either case: what a header name may hold. */
export const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/**
 * Does a header value hold a character Node will not write (ERR_INVALID_CHAR): a control
 * character other than tab, DEL, or one above latin1?
 */
export function hasForbiddenChar(value: string): boolean {
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if ((c < 32 && c !== 9) || c === 127 || c > 255) return true;
  }
  return false;
}
